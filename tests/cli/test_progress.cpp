// Long commands draw a progress bar on stderr when it is a terminal and print nothing extra
// otherwise (issue: what a Megatron or torchtitan user meets, item 8). The terminal case runs the
// binary under util-linux `script`, which gives it a pseudo-terminal.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "tests/run_sixfold.hpp"

using sixfold::test::run_sixfold;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The command's output as a terminal shows it ("" and have = false without `script`).
std::string on_a_terminal(const std::string& args, bool& have, const std::string& env = "") {
  have = std::system("command -v script >/dev/null 2>&1") == 0;
  if (!have) return "";
  return sixfold::test::run_command("script -qec \"" + env + std::string(SIXFOLD_BINARY) + " " + args +
                                    "\" /dev/null 2>&1")
      .output;
}
}  // namespace

TEST_CASE("no progress bar when stderr is not a terminal") {
  for (const std::string args : {"plan --scenario default --refine 0", "decide --models pythia-1.4b --hardware h100-sxm-80g --gpus 8",
                                 "validate data/validation/vtrain_multi_node.csv"}) {
    CAPTURE(args);
    const auto r = run_sixfold(args);
    CHECK(r.code == 0);
    CHECK_FALSE(contains(r.output, "\r"));
    CHECK_FALSE(contains(r.output, "searching layouts"));
    CHECK_FALSE(contains(r.output, "planning cells"));
    CHECK_FALSE(contains(r.output, "pricing rows"));
  }
}

TEST_CASE("a progress bar on a terminal, erased when the work is done") {
  bool have = false;
  for (const auto& [args, label] : {std::pair<std::string, std::string>{"plan --scenario default --refine 0", "plan: searching layouts"},
                                    {"decide --models pythia-1.4b --hardware h100-sxm-80g --gpus 8,64", "decide: planning cells"},
                                    {"validate data/validation/vtrain_multi_node.csv", "validate: pricing rows"}}) {
    const std::string out = on_a_terminal(args, have);
    if (!have) {
      WARN_MESSAGE(false, "util-linux `script` is missing: the terminal case is not checked");
      return;
    }
    CAPTURE(args);
    CHECK(contains(out, label));
    CHECK(contains(out, "\r\033[K"));  // erased before the results
  }
  // SIXFOLD_NO_PROGRESS turns it off on a terminal too.
  const std::string quiet = on_a_terminal("plan --scenario default --refine 0", have, "env SIXFOLD_NO_PROGRESS=1 ");
  CHECK_FALSE(contains(quiet, "searching layouts"));
  CHECK(contains(quiet, "recommended:"));
}
