// `calibrate --backend cpu` (executor/calibrate/cpu_calibration.cpp): kernel sweeps, then the
// runner's own step of a small model timed per op class and set against the sweep's profile. The
// accuracy it buys on other models is a benchmark figure (bench/RESULTS.md, "Executor on CPU
// ranks"); here: the profile is written and loads, and the runner step is reported and used.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "simulator/hardware_profile.hpp"
#include "tests/run_sixfold.hpp"

TEST_CASE("calibrate --backend cpu: a profile that loads, the runner's step per op class, and the refit it drives") {
  const std::string path = (std::filesystem::temp_directory_path() / "sixfold-cpu-calibration.yaml").string();
  std::filesystem::remove(path);
  const auto r = sixfold::test::run_sixfold("calibrate --backend cpu -o " + path);
  REQUIRE(r.code == 0);
  for (const char* line : {"runner step of a 2-layer hidden-128 model", "  attention ", "  gemm ", "  elementwise ",
                           "attention efficiency x "})
    CHECK_MESSAGE(r.output.find(line) != std::string::npos, line);
  const sixfold::HardwareProfile hw = sixfold::load_hardware(path);
  CHECK(hw.attention_efficiency > 0);
  CHECK(hw.attention_efficiency <= 1);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find("so that the runner's attention in a step of a 2-layer hidden-128 model is priced as measured") !=
        std::string::npos);
  std::filesystem::remove(path);
}
