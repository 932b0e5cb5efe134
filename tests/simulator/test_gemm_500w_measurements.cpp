// The 500 W H100 profile (h100-96g-500w, torchtitan's Grand Teton GPUs) prices GEMMs with an
// efficiency curve whose ceiling is fitted to bf16 GEMM measurements made on 500 W H100s, not to
// end-to-end runs: FBGEMM's rowwise-GEMM pull request (pytorch/FBGEMM #2546, 2024-04, "H100 500W":
// bf16 GEMM TFLOP/s at three shapes) and torchao's float8 linear microbenchmark (pytorch/ao #2185,
// 2025-05: a compiled bf16 nn.Linear's forward and backward, three GEMMs, at the Llama3-70B TP-8
// shapes of 16384 tokens). The curve's shape (half_dim, tile) is the 700 W part's. This test
// refits the ceiling and holds the shipped value to it.
#include <doctest/doctest.h>

#include <cmath>

#include "models/layout.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_cost.hpp"

using namespace sixfold;

namespace {
struct Gemm { Count m, n, k; double ms; };     // one GEMM, (m x k)(k x n)
struct Linear { Count m, k, n; double ms; };   // forward, input gradient and weight gradient
const Gemm kFbgemm[] = {{8192, 8192, 8192, 1.879}, {65536, 8192, 7168, 13.383}, {65536, 3584, 8192, 7.044}};
const Linear kTorchao[] = {
    {16384, 8192, 1280, 1.954}, {16384, 1024, 8192, 1.701}, {16384, 8192, 7168, 9.871}, {16384, 3584, 8192, 5.192}};

double priced_ms(const OpPricer& p, const Gemm& g) { return p.gemm_time(g.m, g.n, g.k, 1) * 1e3; }
double priced_ms(const OpPricer& p, const Linear& l) {
  return (p.gemm_time(l.m, l.n, l.k, 1) + p.gemm_time(l.m, l.k, l.n, 1) + p.gemm_time(l.k, l.n, l.m, 1)) * 1e3;
}
double rms_log_error(HardwareProfile hw, double max_efficiency) {
  hw.gemm.max_efficiency = max_efficiency;
  const OpPricer p(hw, Layout{}, Dtype::BF16);
  double sq = 0;
  int n = 0;
  for (const Gemm& g : kFbgemm) sq += std::pow(std::log(priced_ms(p, g) / g.ms), 2), ++n;
  for (const Linear& l : kTorchao) sq += std::pow(std::log(priced_ms(p, l) / l.ms), 2), ++n;
  return std::sqrt(sq / n);
}
}  // namespace

TEST_CASE("the 500 W H100's GEMM ceiling is the least-squares fit to 500 W GEMM measurements") {
  const HardwareProfile hw = load_hardware("h100-96g-500w");
  const double shipped = hw.gemm.max_efficiency;
  double best = 0, best_err = 1e9;
  for (double e = 0.40; e <= 0.90; e += 0.0005)
    if (const double err = rms_log_error(hw, e); err < best_err) best = e, best_err = err;
  CHECK(shipped == doctest::Approx(best).epsilon(0.002));
  CHECK(best_err < 0.05);
  // Each measurement within 7% at the shipped value.
  const OpPricer p(hw, Layout{}, Dtype::BF16);
  for (const Gemm& g : kFbgemm) CHECK(priced_ms(p, g) == doctest::Approx(g.ms).epsilon(0.07));
  for (const Linear& l : kTorchao) CHECK(priced_ms(p, l) == doctest::Approx(l.ms).epsilon(0.07));
}
