// cuBLASLt bf16 GEMM (row-major API) vs the definition C = alpha op(A) op(B) + beta C in fp64,
// for every transpose combination, bf16 and fp32 output, and accumulation with beta = 1.
#include "tests/kernels/gpu_test_util.hpp"

using namespace sixfold;
using namespace sixfold::gpu_test;

namespace {
std::vector<double> matmul_definition(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k,
                                      bool trans_a, bool trans_b) {
  std::vector<double> c(std::size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        const double av = trans_a ? a[std::size_t(p) * m + i] : a[std::size_t(i) * k + p];
        const double bv = trans_b ? b[std::size_t(j) * k + p] : b[std::size_t(p) * n + j];
        s += av * bv;
      }
      c[std::size_t(i) * n + j] = s;
    }
  return c;
}
}  // namespace

TEST_CASE("cuBLASLt bf16 GEMM matches the definition for all transposes") {
  const int m = 136, n = 72, k = 264;
  const auto a = random_bf16_values(std::size_t(m) * k, -1, 1, 80), b = random_bf16_values(std::size_t(k) * n, -1, 1, 81);
  cuda::CublasLtGemm gemm;
  DeviceBuffer<Bf16> da(to_bf16(a)), db(to_bf16(b)), dc(std::size_t(m) * n);
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true}) {
      CAPTURE(trans_a);
      CAPTURE(trans_b);
      const auto want = matmul_definition(a, b, m, n, k, trans_a, trans_b);
      gemm.matmul(da.get(), db.get(), dc.get(), m, n, k, trans_a, trans_b);
      CHECK(max_relative_error(to_float(dc.download()), want) < 1e-2);
    }
}

TEST_CASE("cuBLASLt GEMM with fp32 output accumulates with beta = 1") {
  const int m = 64, n = 96, k = 128;
  const auto a = random_bf16_values(std::size_t(m) * k, -1, 1, 82), b = random_bf16_values(std::size_t(k) * n, -1, 1, 83);
  const auto c0 = random_bf16_values(std::size_t(m) * n, -1, 1, 84);
  auto want = matmul_definition(a, b, m, n, k, false, false);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * want[i] + c0[i];
  cuda::CublasLtGemm gemm;
  DeviceBuffer<Bf16> da(to_bf16(a)), db(to_bf16(b));
  DeviceBuffer<float> dc(c0);
  gemm.matmul(da.get(), db.get(), dc.get(), m, n, k, false, false, 0.5f, 1.0f);
  CHECK(max_relative_error(dc.download(), want) < 1e-4);
}
