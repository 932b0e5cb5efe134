// Calibration from a PyTorch profiler (Kineto) trace: the fixture's kernel durations were computed
// from known curve parameters (tests/simulator/fixtures/make_kineto_fixture.py), so the fit must
// recover them; malformed traces must say which file and what is missing.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "simulator/io/kineto_trace.hpp"
#include "simulator/io/profile_yaml.hpp"

using namespace sixfold;

namespace {
const std::string kFixture = std::string(SIXFOLD_SOURCE_DIR) + "/tests/simulator/fixtures/kineto_h200_synthetic.json";

std::string error_of(const std::string& json) {
  try {
    parse_kineto_trace(json, "bad.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("kineto: kernels are matched to their operators through correlation and nesting") {
  const KinetoTrace t = read_kineto_trace(kFixture);
  // 3 hidden sizes x 2 token counts x 4 projections x (linear + mm) + 3 x 2 bmm
  CHECK(t.gemms.size() == 54);
  CHECK(t.memory_ops.size() == 12);
  CHECK(t.collectives.size() == 8);
  CHECK(t.unattributed == 1);  // the fill kernel whose launch is not in the trace
  CHECK(t.skipped == 0);
  bool saw_linear = false, saw_bmm = false;
  for (const auto& g : t.gemms) {
    CHECK(g.dtype == Dtype::BF16);
    if (g.op == "aten::linear" && g.n == 3 * 2048 && g.k == 2048 && g.m == 1024) saw_linear = true;  // [2, 512, k] rows
    if (g.op == "aten::bmm" && g.batch == 32 && g.m == 4096 && g.k == 128) saw_bmm = true;
  }
  CHECK(saw_linear);
  CHECK(saw_bmm);
  // all-gather's size comes from its record_param_comms operator: output elements x 2 bytes.
  bool saw_gather = false;
  for (const auto& c : t.collectives)
    if (c.collective == Collective::AllGather && c.message == 16.0 * kMiB) saw_gather = c.ranks == 8;
  CHECK(saw_gather);
}

TEST_CASE("kineto: the fit recovers the curve parameters the durations were made from") {
  const HardwareProfile base = load_hardware("h200-sxm-141g");
  const KinetoCalibration cal = calibrate_from_kineto(read_kineto_trace(kFixture), base, "2026-01-01");
  REQUIRE(cal.gemm);
  // Durations are rounded to the nanosecond as Kineto writes them: recovery to ~1e-3.
  CHECK(cal.profile.gemm.max_efficiency == doctest::Approx(0.71).epsilon(2e-3));
  CHECK(cal.profile.gemm.half_dim == doctest::Approx(80.0).epsilon(1e-2));
  CHECK(cal.profile.gemm.tile == 128);
  REQUIRE(cal.memory_efficiency);
  CHECK(cal.profile.memory_efficiency == doctest::Approx(0.83).epsilon(1e-3));
  REQUIRE(cal.intra_node);
  CHECK(cal.intra_node->latency_fitted);
  CHECK(cal.profile.intra_node.peak_busbw == doctest::Approx(360e9).epsilon(1e-3));
  CHECK(cal.profile.intra_node.half_size == doctest::Approx(2.0 * kMiB).epsilon(1e-2));
  CHECK(cal.profile.intra_node.latency == doctest::Approx(25e-6).epsilon(1e-2));
  CHECK_FALSE(cal.inter_node);
  // Untouched values keep the base's numbers and sources.
  CHECK(cal.profile.inter_node.peak_busbw == base.inter_node.peak_busbw);
  CHECK(cal.profile.provenance.at("peak_tflops.bf16") == base.provenance.at("peak_tflops.bf16"));
  CHECK(cal.profile.provenance.at("gemm.half_dim").rfind("measurement: Kineto trace " + kFixture + ", 2026-01-01", 0) == 0);
  CHECK(cal.profile.provenance.at("intra_node.latency").rfind("measurement: Kineto trace", 0) == 0);
}

TEST_CASE("kineto: the written profile loads back with the fitted values") {
  const HardwareProfile base = load_hardware("h200-sxm-141g");
  KinetoCalibration cal = calibrate_from_kineto(read_kineto_trace(kFixture), base, "2026-01-01");
  cal.profile.name = "h200-kineto";
  const HardwareProfile back = parse_hardware(hardware_profile_yaml(cal.profile, "test header\nsecond line"), "roundtrip");
  CHECK(back.name == "h200-kineto");
  CHECK(back.gemm.max_efficiency == doctest::Approx(cal.profile.gemm.max_efficiency).epsilon(1e-8));
  CHECK(back.memory_efficiency == doctest::Approx(cal.profile.memory_efficiency).epsilon(1e-8));
  CHECK(back.intra_node.half_size == doctest::Approx(cal.profile.intra_node.half_size).epsilon(1e-6));  // whole bytes
  CHECK(back.memory_capacity == base.memory_capacity);
  CHECK(back.peak(Dtype::FP8) == doctest::Approx(base.peak(Dtype::FP8)));
  CHECK(back.provenance.at("memory_efficiency") == cal.profile.provenance.at("memory_efficiency"));
  CHECK(back.provenance.at("sm_count") == base.provenance.at("sm_count"));
}

TEST_CASE("kineto: malformed traces name the file and what is missing") {
  CHECK(error_of("{not json").find("bad.json") != std::string::npos);
  CHECK(error_of("{not json").find("invalid JSON") != std::string::npos);
  CHECK(error_of("{\"events\": []}").find("no \"traceEvents\" array") != std::string::npos);
  CHECK(error_of("{\"traceEvents\": [{\"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, \"dur\": 2}]}")
            .find("no \"cat\": \"kernel\" events") != std::string::npos);
  const std::string no_dur = error_of("{\"traceEvents\": [{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}]}");
  CHECK(no_dur.find("bad.json") != std::string::npos);
  CHECK(no_dur.find("event 0") != std::string::npos);
  CHECK(no_dur.find("\"dur\"") != std::string::npos);
  CHECK(error_of("{\"traceEvents\": [{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 2, \"args\": {}}]}")
            .find("correlation") != std::string::npos);
  CHECK_THROWS_AS(read_kineto_trace("/nonexistent/trace.json"), Error);
}

TEST_CASE("kineto: a trace without shapes or sizes has nothing to calibrate") {
  const std::string text =
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 50},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 3, \"args\": {\"correlation\": 7}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 20, \"dur\": 30, \"args\": {\"correlation\": 7}}]}";
  const KinetoTrace t = parse_kineto_trace(text, "noshapes.json");
  CHECK(t.skipped == 1);
  CHECK(t.gemms.empty());
  try {
    calibrate_from_kineto(t, load_hardware("h200-sxm-141g"), "2026-01-01");
    FAIL("expected an Error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("noshapes.json: nothing to calibrate") != std::string::npos);
  }
}

TEST_CASE("kineto: out-of-range numbers are refused or skipped, never converted undefinedly") {
  // A correlation of 1e300 is no correlation; a negative duration is refused.
  CHECK_THROWS_AS(parse_kineto_trace("{\"traceEvents\": [{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 2, "
                                     "\"args\": {\"correlation\": 1e300}}]}", "t.json"),
                  Error);
  CHECK_THROWS_AS(parse_kineto_trace("{\"traceEvents\": [{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": -2, "
                                     "\"args\": {\"correlation\": 1}}]}", "t.json"),
                  Error);
  // Shapes whose element count overflows 64 bits are skipped.
  const std::string trace =
      "{\"traceEvents\": ["
      "{\"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 10, \"args\": "
      "{\"Input Dims\": [[1099511627776, 1099511627776, 4], [8, 4]], \"Input type\": [\"float\", \"float\"]}},"
      "{\"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 10, \"args\": "
      "{\"Input Dims\": [[1e300, 3], [4]], \"Input type\": [\"float\", \"float\"]}},"
      "{\"cat\": \"cuda_runtime\", \"name\": \"launch\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": 7}},"
      "{\"cat\": \"cuda_runtime\", \"name\": \"launch\", \"pid\": 1, \"tid\": 1, \"ts\": 21, \"dur\": 1, \"args\": {\"correlation\": 8}},"
      "{\"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": 2, \"dur\": 5, \"args\": {\"correlation\": 7}},"
      "{\"cat\": \"kernel\", \"name\": \"add\", \"ts\": 22, \"dur\": 5, \"args\": {\"correlation\": 8}}]}";
  const KinetoTrace t = parse_kineto_trace(trace, "t.json");
  CHECK(t.gemms.empty());
  CHECK(t.memory_ops.empty());
  CHECK(t.skipped == 2);
}
