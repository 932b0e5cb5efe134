#pragma once
// The CPU backend: Eigen GEMMs, the reference kernels of kernels/, MPI (or a world of one).
#include "executor/backend/backend.hpp"

namespace sixfold {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(std::unique_ptr<Communicator> world) : Backend(std::move(world)) {}
  std::string name() const override { return "cpu"; }
  void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, const float* b,
            float beta, float* c) override;
  void gemm(bool trans_a, bool trans_b, long m, long n, long k, double alpha, const double* a, const double* b,
            double beta, double* c) override;
};

}  // namespace sixfold
