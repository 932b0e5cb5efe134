#include "executor/backend/cuda/cuda_backend.hpp"

#include <cstdlib>
#include <type_traits>

#include "common/error.hpp"
#include "executor/backend/cuda/cuda_cupti_recorder.hpp"
#include "executor/backend/cuda/cuda_device.hpp"
#include "executor/backend/cuda/cuda_nccl_communicator.hpp"
#include "executor/backend/cuda/cuda_ops.hpp"
#include "kernels/cuda_kernels.hpp"

namespace sixfold {

namespace {

// Local rank under the common launchers (OpenMPI, MPICH/Hydra, Slurm); -1 when none says.
int local_rank_from_environment() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

class CudaBackend : public Backend {
 public:
  // storage: the GPU memory of `streams`, made by make_cuda_backend before the base needs it.
  CudaBackend(std::unique_ptr<Communicator> world, std::shared_ptr<CudaStreams> streams,
              std::unique_ptr<CudaStorage> storage, const CudaBackendOptions& o)
      : Backend(std::move(world), storage.get()), storage_(std::move(storage)), streams_(std::move(streams)),
        gemm_(std::size_t(32) << 20, o.tf32), ops_f_(make_cuda_ops<float>(streams_)),
        ops_d_(make_cuda_ops<double>(streams_)) {
    nccl_ = dynamic_cast<NcclCommunicator*>(&this->world());
    if (o.trace) recorder_ = std::make_unique<CuptiRecorder>();
  }
  ~CudaBackend() override {
    // The tensors are gone (the runtime is destroyed first); let their stream-ordered frees finish.
    cudaStreamSynchronize(streams_->compute);
  }
  // Each op's wall time is its GPU time: the compute stream is drained at both ends of the op
  // (the kernels are asynchronous), which gives up overlap between ops for an exact per-op clock.
  void op_begin(const char* name) override {
    CHECK_CUDA(cudaStreamSynchronize(streams_->compute));
    if (recorder_) recorder_->push_op(name);
  }
  void op_end() override {
    CHECK_CUDA(cudaStreamSynchronize(streams_->compute));
    if (recorder_) recorder_->pop_op();
  }
  CuptiRecorder* recorder() { return recorder_.get(); }
  std::string name() const override { return "cuda"; }

  void gemm(bool ta, bool tb, long m, long n, long k, float alpha, const float* a, const float* b, float beta,
            float* c) override {
    device_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  void gemm(bool ta, bool tb, long m, long n, long k, double alpha, const double* a, const double* b, double beta,
            double* c) override {
    device_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  DeviceOps<float>& ops_float() override { return *ops_f_; }
  DeviceOps<double>& ops_double() override { return *ops_d_; }

  CudaDeviceMemory device_memory() const {
    CudaDeviceMemory d;
    d.workspace = Bytes(gemm_.workspace_bytes());
    if (nccl_) d.comm_staging_peak = nccl_->staging_peak();
    return d;
  }
  std::string device_name() const { return cuda::device_name(streams_->device); }

 private:
  // Operands are the runtime's tensors, already in GPU memory: cuBLASLt runs on them in place.
  template <class T>
  void device_gemm(bool ta, bool tb, long m, long n, long k, T alpha, const T* a, const T* b, T beta, T* c) {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // no product: C = beta C, as the CPU backend does it
      if (beta == T(0)) storage_->zero(c, std::size_t(m) * n * sizeof(T));
      else if (beta != T(1))
        throw Error("cuda backend: a GEMM with k = 0 and beta " + std::to_string(double(beta)) +
                    " (only 0 and 1 are run)");
      return;
    }
    gemm_.matmul(a, b, c, m, n, k, ta, tb, alpha, beta, reinterpret_cast<cuda::Stream>(streams_->compute));
  }

  std::unique_ptr<CudaStorage> storage_;
  std::shared_ptr<CudaStreams> streams_;
  cuda::CublasLtGemm gemm_;
  std::unique_ptr<DeviceOps<float>> ops_f_;
  std::unique_ptr<DeviceOps<double>> ops_d_;
  const NcclCommunicator* nccl_ = nullptr;  // the world when it is NCCL's (more than one rank)
  std::unique_ptr<CuptiRecorder> recorder_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::unique_ptr<Communicator> world, const CudaBackendOptions& options) {
  const int devices = cuda::device_count();
  if (devices == 0)
    throw UsageError("no CUDA device: the cuda backend needs a visible NVIDIA GPU and driver (CUDA_VISIBLE_DEVICES, "
                     "nvidia-smi); use --backend cpu");
  int local = local_rank_from_environment();
  if (local < 0) local = world->rank();
  auto streams = std::make_shared<CudaStreams>(local % devices);
  // An emulated rank of a bigger layout stays alone: its collectives are the emulation's copies.
  if (world->spans_processes()) world = make_nccl_world(std::move(world), streams, options.timeout_s);
  auto storage = std::make_unique<CudaStorage>(streams);
  return std::make_unique<CudaBackend>(std::move(world), std::move(streams), std::move(storage), options);
}

CudaDeviceMemory cuda_device_memory(const Backend& backend) {
  if (auto* b = dynamic_cast<const CudaBackend*>(&backend)) return b->device_memory();
  return {};
}

void cuda_write_trace(Backend& backend, int rank, const std::string& title, const std::string& path) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  if (!b || !b->recorder()) throw UsageError("--trace records device activity with CUPTI: it needs --backend cuda");
  CHECK_CUDA(cudaDeviceSynchronize());
  b->recorder()->write_chrome_trace(rank, title, path);
}

bool cuda_is_device_memory(const void* pointer) { return is_device_memory(pointer); }

std::string cuda_device_name(const Backend& backend) {
  if (auto* b = dynamic_cast<const CudaBackend*>(&backend)) return b->device_name();
  return {};
}

}  // namespace sixfold
