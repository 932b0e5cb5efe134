#include "executor/backend/cpu/cpu_backend.hpp"

#include <Eigen/Core>

#include "common/error.hpp"

namespace sixfold {

namespace {

template <class T>
void eigen_gemm(bool trans_a, bool trans_b, long m, long n, long k, T alpha, const T* a, const T* b, T beta, T* c) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMap = Eigen::Map<const Matrix>;
  Eigen::Map<Matrix> C(c, m, n);
  ConstMap A(a, trans_a ? k : m, trans_a ? m : k);
  ConstMap B(b, trans_b ? n : k, trans_b ? k : n);
  if (beta == T(0)) C.setZero();
  else if (beta != T(1)) C *= beta;
  if (m == 0 || n == 0 || k == 0) return;
  if (!trans_a && !trans_b) C.noalias() += alpha * A * B;
  else if (trans_a && !trans_b) C.noalias() += alpha * A.transpose() * B;
  else if (!trans_a && trans_b) C.noalias() += alpha * A * B.transpose();
  else C.noalias() += alpha * A.transpose() * B.transpose();
}

}  // namespace

void CpuBackend::gemm(bool ta, bool tb, long m, long n, long k, float alpha, const float* a, const float* b,
                      float beta, float* c) {
  eigen_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
}

void CpuBackend::gemm(bool ta, bool tb, long m, long n, long k, double alpha, const double* a, const double* b,
                      double beta, double* c) {
  eigen_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
}

std::unique_ptr<Backend> make_backend(const std::string& name, std::unique_ptr<Communicator> world) {
  if (name == "cpu") return std::make_unique<CpuBackend>(std::move(world));
  if (name == "cuda")
    throw UsageError("the executor's cuda backend is not available in this build; use --backend cpu");
  throw UsageError("unknown backend '" + name + "' (allowed: cpu)");
}

}  // namespace sixfold
