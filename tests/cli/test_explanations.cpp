// What `plan` and `decide` say about the layouts they do not pick (issue: what a Megatron or
// torchtitan user meets, item 3): each family once under a label that matches what it changes,
// never a faster layout as a loser, a tie said as a tie, and a request that the layout rules
// empty names those rules and the nearest requests that run.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_sixfold.hpp"

using sixfold::test::run_sixfold;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("plan's families: one entry per layout, labels that match the change, no faster loser") {
  const auto r = run_sixfold("plan --scenario default --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  const auto& rec = j["recommended"]["layout"];
  std::set<std::string> layouts;
  int entries = 0;
  for (const auto& f : j["families"]) {
    const std::string family = f["family"], why = f["why"];
    CAPTURE(family);
    CAPTURE(why);
    if (f["layout"].is_null()) continue;
    ++entries;
    CHECK(layouts.insert(f["layout"].dump()).second);        // each layout once
    CHECK_FALSE(why.rfind("step -", 0) == 0);                // never faster than the recommendation
    CHECK((why.rfind("step +", 0) == 0 || why.rfind("a tie", 0) == 0));
    // A ZeRO-stage family that says nothing more changes nothing but the stage (and dp, mbs).
    if ((contains(family, "ZeRO stage")) && !contains(family, "(also")) {
      CHECK(f["layout"]["tp"] == rec["tp"]);
      CHECK(f["layout"]["pp"] == rec["pp"]);
      CHECK(f["layout"]["cp"] == rec["cp"]);
    }
    if (contains(family, "(also")) CHECK(contains(family, "->"));
  }
  CHECK(entries >= 3);
}

TEST_CASE("a request the layout rules empty names the rules and the nearest requests that run") {
  const auto r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 5128 --global-batch 2520 --refine 0");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "every one breaks a layout rule before memory is checked"));
  CHECK(contains(r.output, "global batch divisible by dp"));
  CHECK_FALSE(contains(r.output, "memory budget of"));
  CHECK(contains(r.output, "closest requests that run:"));
  CHECK(contains(r.output, "--gpus 5120"));
  const auto j = nlohmann::json::parse(
      run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 5128 --global-batch 2520 --refine 0 --json").output);
  CHECK(j["empty_because"] == "layout rules");
  CHECK(j["alternatives"].size() >= 1);
}

TEST_CASE("decide calls a difference below the printed precision a tie") {
  const auto r = run_sixfold("decide --models pythia-1.4b --hardware h100-sxm-80g --gpus 8");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "ties with"));
  CHECK_FALSE(contains(r.output, "by 0.0%"));
}
