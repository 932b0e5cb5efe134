// `--report FILE.html` (issue 12, item 7): one self-contained page with the charts, for plan,
// predict, simulate and run. The page is checked twice: as text (nothing fetched, every chart
// there) and as the DOM headless Chromium builds from it (Debian's `chromium`; tools/test.sh
// installs it), which is what a browser would show.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/run_sixfold.hpp"

using sixfold::test::run_sixfold;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string temp_path(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

// The DOM headless Chromium makes of the page, or "" when no chromium is installed.
std::string rendered_dom(const std::string& path) {
  const char* browser = nullptr;
  for (const char* candidate : {"chromium", "chromium-browser"})
    if (std::system(("command -v " + std::string(candidate) + " >/dev/null 2>&1").c_str()) == 0) {
      browser = candidate;
      break;
    }
  if (!browser) return "";
  return sixfold::test::run_command(std::string(browser) +
                                    " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
                                    "--user-data-dir=" + temp_path("sixfold-chromium-profile") + " --dump-dom file://" +
                                    path + " 2>/dev/null")
      .output;
}

void check_page(const std::string& page, const std::vector<std::string>& charts) {
  CHECK(contains(page, "<!DOCTYPE html>"));
  // Self-contained: no script, no external stylesheet, image or font.
  CHECK_FALSE(contains(page, "<script"));
  CHECK_FALSE(contains(page, "src="));
  CHECK_FALSE(contains(page, "<link"));
  CHECK_FALSE(contains(page, "url("));
  for (const auto& id : charts) {
    CAPTURE(id);
    CHECK(contains(page, "<svg id=\"" + id + "\""));
  }
}

}  // namespace

TEST_CASE("plan --report: memory, time, timeline and ranked layouts, as Chromium renders them") {
  const std::string path = temp_path("sixfold-plan-report.html");
  std::filesystem::remove(path);
  const auto r = run_sixfold("plan --scenario default --refine 2 --report " + path);
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "wrote " + path));
  const std::string page = read(path);
  check_page(page, {"memory-components", "memory-stages", "time-components", "timeline", "ranked-layouts"});
  CHECK(contains(page, "<table id=\"ranked\""));
  CHECK(count(page, "class=\"task\"") > 10);  // the simulated step's blocks are drawn

  const std::string dom = rendered_dom(path);
  if (dom.empty()) {
    MESSAGE("chromium is not installed: the rendered DOM is not checked (tools/test.sh installs it)");
  } else {
    for (const char* id : {"memory-components", "memory-stages", "time-components", "timeline", "ranked-layouts"}) {
      CAPTURE(id);
      CHECK(contains(dom, "<svg id=\"" + std::string(id) + "\""));
    }
    CHECK(count(dom, "<rect class=\"task\"") == count(page, "<rect class=\"task\""));
    CHECK(contains(dom, "<line class=\"limit\""));  // the budget line
  }
  std::filesystem::remove(path);
}

TEST_CASE("predict and simulate --report write the same charts of one layout") {
  for (const char* command : {"predict", "simulate"}) {
    CAPTURE(command);
    const std::string path = temp_path(std::string("sixfold-") + command + "-report.html");
    const auto r = run_sixfold(std::string(command) + " --scenario zero3-pythia-6.9b --report " + path);
    REQUIRE(r.code == 0);
    const std::string page = read(path);
    check_page(page, {"memory-components", "memory-stages", "time-components", "timeline"});
    CHECK_FALSE(contains(page, "ranked-layouts"));
    CHECK(contains(page, "gathered_parameters"));  // ZeRO-3's component is on the memory chart
    std::filesystem::remove(path);
  }
}

TEST_CASE("run --report: measured steps, measured timeline, predicted against measured per op class") {
  const std::string path = temp_path("sixfold-run-report.html"), plan = temp_path("sixfold-run-report-plan.yaml");
  {
    std::ofstream out(plan);
    out << "schema_version: 1\nmodel:\n  name: tiny\n  architecture: {name: tiny, layers: 2, hidden: 64, ffn: 128, heads: 4, "
           "kv_heads: 2, vocab: 128, max_seq: 64, norm: rmsnorm, activation: swiglu}\nhardware: cpu-dev\ngpus: 1\n"
           "workload: {seq: 32, global_batch: 4, dtype: fp32}\nlayout: {dp: 1, recompute: full}\n";
  }
  const auto r = run_sixfold("run --plan " + plan + " --steps 3 --cpu-profile cpu-dev --report " + path);
  REQUIRE(r.code == 0);
  const std::string page = read(path);
  check_page(page, {"memory-components", "time-components", "measured-steps", "op-classes", "measured-timeline"});
  CHECK(contains(page, "<table id=\"measured-memory\""));
  CHECK(count(page, "measured: ") >= 3);  // op classes with a measured bar
  CHECK(contains(page, "gemm predicted: "));
  std::filesystem::remove(path);
  std::filesystem::remove(plan);
}

TEST_CASE("--report refuses a name that is not an HTML page, and writes nothing") {
  const std::string path = temp_path("sixfold-report.txt");
  std::filesystem::remove(path);
  const auto r = run_sixfold("predict --scenario default --report " + path);
  CHECK(r.code == 2);
  CHECK(contains(r.output, ".html"));
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a big step's timeline stays a page: narrow tasks are drawn together, and it says so") {
  const std::string path = temp_path("sixfold-big-report.html");
  const auto r = run_sixfold("simulate --model llama3-70b --hardware h100-sxm-80g --gpus 64 --tp 4 --pp 16 --seq 4096 "
                             "--global-batch 2048 --report " + path);
  REQUIRE(r.code == 0);
  const std::string page = read(path);
  const size_t rects = count(page, "<rect class=\"task\"");
  CHECK(rects > 1000);    // every row drawn across the step
  CHECK(rects < 25000);   // not one rect per task (~127,000 tasks)
  CHECK(contains(page, "tasks are drawn a few together"));
  CHECK(contains(page, "forward, "));  // a merged rect's tooltip counts its tasks by kind
  std::filesystem::remove(path);
}
