#pragma once
// The CPU backend: Eigen GEMMs, the reference kernels of kernels/ (cpu_ops.hpp), MPI (or a world
// of one); tensors in host memory, or in guarded host memory (guarded_storage.hpp) that only the
// backend's calls can reach.
#include <memory>

#include "executor/backend/backend.hpp"
#include "executor/backend/cpu/cpu_ops.hpp"

namespace sixfold {

class GuardedHostStorage;

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(std::unique_ptr<Communicator> world);
  ~CpuBackend() override;
  std::string name() const override { return "cpu"; }
  void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, const float* b,
            float beta, float* c) override;
  void gemm(bool trans_a, bool trans_b, long m, long n, long k, double alpha, const double* a, const double* b,
            double beta, double* c) override;
  DeviceOps<float>& ops_float() override { return ops_f_; }
  DeviceOps<double>& ops_double() override { return ops_d_; }
  // The guarded storage of a backend made by make_guarded_cpu_backend (null otherwise).
  const GuardedHostStorage* guarded() const { return guard_.get(); }

 protected:
  CpuBackend(std::unique_ptr<Communicator> world, std::unique_ptr<GuardedHostStorage> guard);

 private:
  friend std::unique_ptr<CpuBackend> make_guarded_cpu_backend(std::unique_ptr<Communicator> world);
  std::unique_ptr<GuardedHostStorage> guard_;
  CpuOps<float> ops_f_;
  CpuOps<double> ops_d_;
};

// A CPU backend whose tensors the host can touch only inside the backend's calls (a test device:
// a runtime that keeps host copies of tensors crashes on it).
std::unique_ptr<CpuBackend> make_guarded_cpu_backend(std::unique_ptr<Communicator> world);

}  // namespace sixfold
