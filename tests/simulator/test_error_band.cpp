// The expected error a prediction carries: the error a new run stays within with 68% probability,
// from the out-of-source errors of the most similar measured runs (simulator/fit/error_band.hpp).
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "simulator/fit/error_band.hpp"
#include "simulator/fit/validation.hpp"

using namespace sixfold;

namespace {
std::vector<ResidualRun> runs(const std::string& body) { return parse_residual_runs("runs:\n" + body, "bands.yaml"); }
}  // namespace

TEST_CASE("the band takes the most similar runs that number at least five, and says which") {
  std::string body;
  for (int i = 0; i < 6; ++i)  // torchtitan on H100 at 8-64 GPUs: 1..6 %
    body += "  - {id: t" + std::to_string(i) + ", framework: torchtitan, gpu: h100-sxm-80g, gpus: " + std::to_string(8 << (i % 4)) +
            ", abs_error_pct: " + std::to_string(i + 1) + "}\n";
  for (int i = 0; i < 6; ++i)  // Megatron on A100: 20..25 %
    body += "  - {id: m" + std::to_string(i) + ", framework: megatron, gpu: a100-sxm-80g, gpus: 1024, abs_error_pct: " +
            std::to_string(20 + i) + "}\n";
  const auto r = runs(body);
  const auto tt = expected_error(r, Framework::Torchtitan, "h100-96g-500w", 16);  // the same family counts
  REQUIRE(tt);
  CHECK(tt->runs == 6);
  // Of 1..6 %: the ceil(0.68 x 7) = 5th smallest, 5 %. A seventh run lands at or below it with
  // probability 5/7 = 71%; the interpolated 68th percentile (4.4 %) would hold only 4.4/7 = 63%.
  CHECK(tt->pct == doctest::Approx(5));
  CHECK(tt->basis.find("GPU count within 8x") != std::string::npos);
  // At 16384 GPUs no torchtitan H100 run is within 8x: the band widens to framework and GPU.
  const auto far = expected_error(r, Framework::Torchtitan, "h100-sxm-80g", 16384);
  REQUIRE(far);
  CHECK(far->basis.find("same framework and GPU") == 0);
  CHECK(far->basis.find("within 8x") == std::string::npos);
  CHECK(far->basis.find("(torchtitan, h100)") != std::string::npos);
  // No torchtitan run on A100: torchtitan's runs on any GPU decide, and the basis names no GPU.
  const auto other_gpu = expected_error(r, Framework::Torchtitan, "a100-sxm-80g", 16);
  REQUIRE(other_gpu);
  CHECK(other_gpu->basis == "same framework (torchtitan)");
  // DeepSpeed has no run: the same GPU's runs decide.
  const auto ds = expected_error(r, Framework::DeepSpeed, "a100-sxm-80g", 1024);
  REQUIRE(ds);
  CHECK(ds->basis == "same GPU (a100)");
  CHECK(ds->pct > 20);
  CHECK(describe(*ds).find("expect +-") == 0);
}

TEST_CASE("too few residuals give no band, a malformed bands file names its line") {
  CHECK_FALSE(expected_error(runs("  - {id: a, framework: megatron, gpu: h100-sxm-80g, gpus: 8, abs_error_pct: 3}\n"),
                             Framework::Megatron, "h100-sxm-80g", 8));
  CHECK_THROWS_WITH_AS(runs("  - {id: a, framework: megatron, gpu: h100-sxm-80g, gpus: eight, abs_error_pct: 3}\n"),
                       doctest::Contains("bands.yaml:2"), Error);
  CHECK_THROWS_WITH_AS(runs("  - {id: a, framework: megatron, gpu: h100-sxm-80g, gpus: 8, abs_error_pct: -1}\n"),
                       doctest::Contains("abs_error_pct"), Error);
  CHECK_THROWS_WITH_AS(runs("  - {id: a, framework: megatron, codebase: [megatron-lm], gpu: h100-sxm-80g, gpus: 8, abs_error_pct: 3}\n"),
                       doctest::Contains("bands.yaml:2: each run needs"), Error);
}

TEST_CASE("the built-in residuals load and cover the validation sets") {
  const auto& r = builtin_residual_runs();
  CHECK(r.size() >= 100);
  CHECK(expected_error(r, Framework::Megatron, "h100-sxm-80g", 64));
}

TEST_CASE("validate counts a row inside its band by the mean absolute error of its throughput metrics, as the bands do") {
  CHECK_FALSE(mean_abs_throughput_error_pct({{"peak_mem_gib", 30.0}}));  // memory says nothing about the step time
  CHECK(*mean_abs_throughput_error_pct({{"mfu_pct", -4.0}, {"tokens_per_gpu_s", 6.0}, {"peak_mem_gib", 50.0}}) ==
        doctest::Approx(5.0));
  ValidationReport rep;
  auto row = [](std::map<std::string, double> errors, std::optional<double> band, bool scored = true) {
    RowResult r;
    r.scored = scored;
    r.error_pct = std::move(errors);
    r.expected_error_pct = band;
    return r;
  };
  rep.rows.push_back(row({{"mfu_pct", -4.0}, {"tokens_per_gpu_s", 6.0}}, 5.0));  // mean 5: inside a 5% band
  rep.rows.push_back(row({{"iter_s", 7.5}}, 5.0));                               // outside
  rep.rows.push_back(row({{"peak_mem_gib", 1.0}}, 5.0));                         // no throughput metric: not counted
  rep.rows.push_back(row({{"iter_s", 1.0}}, std::nullopt));                      // no band: not counted
  rep.rows.push_back(row({{"iter_s", 1.0}}, 5.0, false));                        // skipped: not counted
  const auto c = rep.band_coverage();
  CHECK(c.rows == 2);
  CHECK(c.within == 1);
}

TEST_CASE("a band holds at least 68% of new runs drawn like its residuals, at every residual count") {
  // Residuals 1..n %, and a new run equally likely to land in any of the n + 1 gaps the sorted
  // residuals leave (what exchangeable runs do): the band must hold at least 68% of them, and a
  // narrower band (the next smaller residual) must not.
  for (int n = kMinRuns; n <= 60; ++n) {
    std::string body;
    for (int i = 1; i <= n; ++i)
      body += "  - {id: r" + std::to_string(i) + ", framework: megatron, gpu: h100-sxm-80g, gpus: 64, abs_error_pct: " +
              std::to_string(i) + "}\n";
    const auto band = expected_error(runs(body), Framework::Megatron, "h100-sxm-80g", 64);
    REQUIRE(band);
    const double held = band->pct / double(n + 1);  // gaps 1..pct of n + 1
    CHECK_MESSAGE(held >= kBandCoverage, "n = " << n << ", band " << band->pct);
    CHECK_MESSAGE((band->pct - 1) / double(n + 1) < kBandCoverage, "n = " << n << ": a narrower band would do");
  }
}

TEST_CASE("a codebase no residual names takes no framework's band, one they name keeps its framework's") {
  std::string body;
  for (int i = 0; i < 6; ++i)  // torchtitan's own runs on H100: 1..6 %
    body += "  - {id: t" + std::to_string(i) + ", framework: torchtitan, codebase: torchtitan, gpu: h100-sxm-80g, gpus: 64, abs_error_pct: " +
            std::to_string(i + 1) + "}\n";
  for (int i = 0; i < 6; ++i)  // Megatron's on H100: 20..25 %
    body += "  - {id: m" + std::to_string(i) + ", framework: megatron, codebase: megatron-lm, gpu: h100-sxm-80g, gpus: 64, abs_error_pct: " +
            std::to_string(20 + i) + "}\n";
  const auto r = runs(body);
  // A torchtitan row (and predict, which names no codebase): torchtitan's runs.
  const auto own = expected_error(r, Framework::Torchtitan, "h100-sxm-80g", 64, "torchtitan");
  REQUIRE(own);
  CHECK(own->pct == doctest::Approx(5));
  CHECK(expected_error(r, Framework::Torchtitan, "h100-sxm-80g", 64)->pct == doctest::Approx(5));
  // An llm-foundry row is priced with torchtitan's traits, but no llm-foundry run was measured:
  // every H100 run decides, and the basis says why.
  const auto other = expected_error(r, Framework::Torchtitan, "h100-sxm-80g", 64, "llm-foundry");
  REQUIRE(other);
  CHECK(other->runs == 12);
  CHECK(other->pct > 20);
  CHECK(other->basis == "same GPU (h100); no measured llm-foundry run");
  // Residuals without codebases (an older bands file): the framework decides, as before.
  std::string plain;
  for (int i = 0; i < 6; ++i)
    plain += "  - {id: t" + std::to_string(i) + ", framework: torchtitan, gpu: h100-sxm-80g, gpus: 64, abs_error_pct: " +
             std::to_string(i + 1) + "}\n";
  CHECK(expected_error(runs(plain), Framework::Torchtitan, "h100-sxm-80g", 64, "llm-foundry")->pct == doctest::Approx(5));
}
