#include "executor/backend/cpu/cpu_backend.hpp"

#include <Eigen/Core>

#include "common/error.hpp"
#include "executor/backend/cpu/guarded_storage.hpp"

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

CpuBackend::CpuBackend(std::unique_ptr<Communicator> world) : Backend(std::move(world)) {}

// The guard is built before the base (it is the storage and wraps the world) and outlives the tensors.
CpuBackend::CpuBackend(std::unique_ptr<Communicator> world, std::unique_ptr<GuardedHostStorage> guard)
    : Backend(guard_communicator(std::move(world), *guard), guard.get()), guard_(std::move(guard)),
      ops_f_(guard_.get()), ops_d_(guard_.get()) {}

CpuBackend::~CpuBackend() = default;

std::unique_ptr<CpuBackend> make_guarded_cpu_backend(std::unique_ptr<Communicator> world) {
  auto guard = std::make_unique<GuardedHostStorage>();
  return std::unique_ptr<CpuBackend>(new CpuBackend(std::move(world), std::move(guard)));
}

void CpuBackend::gemm(bool ta, bool tb, long m, long n, long k, float alpha, const float* a, const float* b,
                      float beta, float* c) {
  OpenWindow open(guard_.get());
  eigen_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
}

void CpuBackend::gemm(bool ta, bool tb, long m, long n, long k, double alpha, const double* a, const double* b,
                      double beta, double* c) {
  OpenWindow open(guard_.get());
  eigen_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
}

std::unique_ptr<Backend> make_backend(const std::string& name, std::unique_ptr<Communicator> world) {
  if (name == "cpu") return std::make_unique<CpuBackend>(std::move(world));
  if (name == "cuda")
    throw UsageError("the executor's cuda backend is not available in this build; use --backend cpu");
  throw UsageError("unknown backend '" + name + "' (allowed: cpu)");
}

}  // namespace sixfold
