// `sixfold calibrate --from-kineto` end to end: the written profile loads and prices a layout;
// usage errors exit 2, a malformed trace exits 1 naming the file; `--backend cuda` without a
// CUDA build or without a device is a usage error, never a crash.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "simulator/hardware_profile.hpp"
#include "tests/run_sixfold.hpp"

namespace {

using sixfold::test::CliResult;
using sixfold::test::run_sixfold;

const std::string kTrace = std::string(SIXFOLD_SOURCE_DIR) + "/tests/simulator/fixtures/kineto_h200_synthetic.json";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sixfold-kineto-test-" + name)).string();
}

}  // namespace

TEST_CASE("kineto cli: calibrate --from-kineto writes a profile that loads and prices a layout") {
  const std::string out = temp_path("profile.yaml");
  std::filesystem::remove(out);
  const CliResult r = run_sixfold("calibrate --from-kineto " + kTrace + " --hardware h200-sxm-141g --name h200-trace -o " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("54 GEMM calls") != std::string::npos);
  const sixfold::HardwareProfile hw = sixfold::load_hardware(out);
  CHECK(hw.name == "h200-trace");
  CHECK(hw.gemm.max_efficiency == doctest::Approx(0.71).epsilon(2e-3));
  CHECK(hw.provenance.at("memory_efficiency").rfind("measurement: Kineto trace " + kTrace, 0) == 0);
  const CliResult p = run_sixfold("predict --model pythia-1.4b --gpus 1 --seq 2048 --hardware " + out);
  INFO(p.output);
  CHECK(p.code == 0);
  CHECK(p.output.find("step") != std::string::npos);
}

TEST_CASE("kineto cli: errors exit with the right code and say what is wrong") {
  const CliResult no_base = run_sixfold("calibrate --from-kineto " + kTrace);
  CHECK(no_base.code == 2);
  CHECK(no_base.output.find("--hardware") != std::string::npos);
  const std::string bad = temp_path("bad.json");
  std::ofstream(bad) << "{\"traceEvents\": [{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 2}]}";
  const CliResult malformed = run_sixfold("calibrate --from-kineto " + bad + " --hardware h200-sxm-141g");
  CHECK(malformed.code == 1);
  CHECK(malformed.output.find(bad) != std::string::npos);
  CHECK(malformed.output.find("correlation") != std::string::npos);
  // Without the CUDA build, or with it but no GPU (CI), --backend cuda is a usage error.
  const CliResult cuda = run_sixfold("calibrate --backend cuda -o " + temp_path("cuda.yaml"));
  CHECK(cuda.code == 2);
  CHECK(cuda.output.find("--backend cuda") != std::string::npos);
  const CliResult unknown = run_sixfold("calibrate --backend tpu");
  CHECK(unknown.code == 2);
  CHECK(unknown.output.find("allowed: cpu, cuda") != std::string::npos);
}
