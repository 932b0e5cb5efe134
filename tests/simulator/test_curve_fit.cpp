// The curve fits must recover the parameters that generated their points.
#include <doctest/doctest.h>

#include <cmath>

#include "common/error.hpp"
#include "simulator/fit/curve_fit.hpp"

using namespace sixfold;

namespace {
// GEMM shapes of transformer layers (QKV, out projection, MLP up/down) for a few hidden sizes and
// token counts, forward (m = tokens) and weight-gradient (k = tokens) orientations.
std::vector<GemmPoint> transformer_points(const GemmEfficiency& truth, int sm_count) {
  std::vector<GemmPoint> out;
  for (Count h : {1024, 4096, 8192})
    for (Count tokens : {256, 2048, 8192})
      for (auto [n, k] : {std::pair<Count, Count>{3 * h, h}, {h, h}, {4 * h, h}, {h, 4 * h}}) {
        out.push_back({tokens, n, k, 1, gemm_curve_efficiency(truth, sm_count, tokens, n, k, 1)});
        out.push_back({n, k, tokens, 1, gemm_curve_efficiency(truth, sm_count, n, k, tokens, 1)});
      }
  return out;
}
}  // namespace

TEST_CASE("curve fit: GEMM efficiency recovers max, half_dim and tile from exact points") {
  const GemmEfficiency truth{0.74, 96.0, 128};
  const auto fit = fit_gemm_efficiency(transformer_points(truth, 132), 132);
  CHECK(fit.curve.max_efficiency == doctest::Approx(0.74).epsilon(1e-6));
  CHECK(fit.curve.half_dim == doctest::Approx(96.0).epsilon(1e-5));
  CHECK(fit.curve.tile == 128);
  CHECK(fit.rms_log_error < 1e-8);
}

TEST_CASE("curve fit: GEMM efficiency with noise stays close, and without waves keeps the first tile") {
  const GemmEfficiency truth{0.6, 300.0, 256};
  auto points = transformer_points(truth, 0);
  // +-2% deterministic alternating noise
  for (size_t i = 0; i < points.size(); ++i) points[i].efficiency *= (i % 2 ? 1.02 : 0.98);
  const auto fit = fit_gemm_efficiency(points, 0, {64, 128});
  CHECK(fit.curve.max_efficiency == doctest::Approx(0.6).epsilon(0.03));
  CHECK(fit.curve.half_dim == doctest::Approx(300.0).epsilon(0.1));
  CHECK(fit.curve.tile == 64);
  CHECK(fit.rms_log_error == doctest::Approx(0.02).epsilon(0.05));
}

TEST_CASE("curve fit: GEMM fit refuses too few or non-positive points") {
  CHECK_THROWS_AS(fit_gemm_efficiency({{128, 128, 128, 1, 0.5}}, 132), Error);
  CHECK_THROWS_AS(fit_gemm_efficiency({{128, 128, 128, 1, 0.5}, {256, 256, 256, 1, 0.0}}, 132), Error);
}

TEST_CASE("curve fit: collective curve recovers peak, half size and latency over several group sizes") {
  CollectiveCurve truth;
  truth.peak_busbw = 370e9;
  truth.half_size = 3 * kMiB;
  truth.latency = 18e-6;
  std::vector<CollectivePoint> points;
  for (int ranks : {2, 4, 8})
    for (Collective c : {Collective::AllReduce, Collective::AllGather})
      for (double size = 64 * 1024; size <= 1024.0 * kMiB; size *= 4) {
        CollectivePoint p{c, ranks, size, 0};
        p.time = collective_curve_time(truth, p);
        points.push_back(p);
      }
  const auto fit = fit_collective_curve(points, 5e-6);
  CHECK(fit.latency_fitted);
  CHECK(fit.curve.peak_busbw == doctest::Approx(370e9).epsilon(1e-6));
  CHECK(fit.curve.half_size == doctest::Approx(3.0 * kMiB).epsilon(1e-5));
  CHECK(fit.curve.latency == doctest::Approx(18e-6).epsilon(1e-5));
  CHECK(fit.rms_log_error < 1e-8);
}

TEST_CASE("curve fit: one bus factor holds the latency at the prior and still recovers peak and half size") {
  CollectiveCurve truth;
  truth.peak_busbw = 80e9;
  truth.half_size = 512 * 1024;
  truth.latency = 30e-6;
  std::vector<CollectivePoint> points;
  for (double size = 1024; size <= 256.0 * kMiB; size *= 8) {
    CollectivePoint p{Collective::ReduceScatter, 8, size, 0};
    p.time = collective_curve_time(truth, p);
    points.push_back(p);
  }
  const auto fit = fit_collective_curve(points, 30e-6);
  CHECK_FALSE(fit.latency_fitted);
  CHECK(fit.curve.latency == doctest::Approx(30e-6));
  CHECK(fit.curve.peak_busbw == doctest::Approx(80e9).epsilon(1e-6));
  CHECK(fit.curve.half_size == doctest::Approx(512.0 * 1024).epsilon(1e-5));
  // A wrong prior shows in the residual rather than silently fitting.
  CHECK(fit_collective_curve(points, 200e-6).rms_log_error > 0.01);
}

TEST_CASE("curve fit: collective fit refuses times that do not grow with size") {
  std::vector<CollectivePoint> flat = {{Collective::AllReduce, 8, 1e6, 1e-3}, {Collective::AllReduce, 8, 1e8, 1e-3}};
  CHECK_THROWS_AS(fit_collective_curve(flat, 0), Error);
  CHECK_THROWS_AS(fit_collective_curve({{Collective::AllReduce, 8, 1e6, 1e-3}}, 0), Error);
}
