#include "executor/backend/cuda/cuda_backend.hpp"

#include <cstdlib>
#include <type_traits>

#include "common/error.hpp"
#include "executor/backend/cuda/cuda_cupti_recorder.hpp"
#include "executor/backend/cuda/cuda_device.hpp"
#include "executor/backend/cuda/cuda_nccl_communicator.hpp"
#include "kernels/cuda_kernels.hpp"

namespace sixfold {

namespace {

// Offsets inside one staging allocation: 256-byte aligned, what cuBLASLt prefers for its operands.
std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Local rank under the common launchers (OpenMPI, MPICH/Hydra, Slurm); -1 when none says.
int local_rank_from_environment() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

class CudaBackend : public Backend {
 public:
  CudaBackend(std::unique_ptr<Communicator> world, std::shared_ptr<CudaStreams> streams, const CudaBackendOptions& o)
      : Backend(std::move(world)), streams_(std::move(streams)), gemm_(std::size_t(32) << 20, o.tf32) {
    nccl_ = dynamic_cast<NcclCommunicator*>(&this->world());
    if (o.trace) recorder_ = std::make_unique<CuptiRecorder>();
  }
  void op_begin(const char* name) override {
    if (recorder_) recorder_->push_op(name);
  }
  void op_end() override {
    if (recorder_) recorder_->pop_op();
  }
  CuptiRecorder* recorder() { return recorder_.get(); }
  std::string name() const override { return "cuda"; }

  void gemm(bool ta, bool tb, long m, long n, long k, float alpha, const float* a, const float* b, float beta,
            float* c) override {
    staged_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  void gemm(bool ta, bool tb, long m, long n, long k, double alpha, const double* a, const double* b, double beta,
            double* c) override {
    staged_gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }

  CudaDeviceMemory device_memory() const {
    CudaDeviceMemory d;
    d.staging_peak = Bytes(staging_.bytes());
    d.workspace = Bytes(gemm_.workspace_bytes());
    if (nccl_) d.comm_staging_peak = nccl_->staging_peak();
    return d;
  }
  std::string device_name() const { return cuda::device_name(streams_->device); }

 private:
  template <class T>
  void staged_gemm(bool ta, bool tb, long m, long n, long k, T alpha, const T* a, const T* b, T beta, T* c) {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // no product: C = beta C, as the CPU backend does it
      for (long i = 0; i < m * n; ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
      return;
    }
    const std::size_t bytes_a = std::size_t(m) * k * sizeof(T), bytes_b = std::size_t(k) * n * sizeof(T),
                      bytes_c = std::size_t(m) * n * sizeof(T);
    auto* base = static_cast<char*>(staging_.ensure(align_up(bytes_a) + align_up(bytes_b) + align_up(bytes_c)));
    T* da = reinterpret_cast<T*>(base);
    T* db = reinterpret_cast<T*>(base + align_up(bytes_a));
    T* dc = reinterpret_cast<T*>(base + align_up(bytes_a) + align_up(bytes_b));
    cudaStream_t s = streams_->compute;
    CHECK_CUDA(cudaMemcpyAsync(da, a, bytes_a, cudaMemcpyHostToDevice, s));
    CHECK_CUDA(cudaMemcpyAsync(db, b, bytes_b, cudaMemcpyHostToDevice, s));
    if (beta != T(0)) CHECK_CUDA(cudaMemcpyAsync(dc, c, bytes_c, cudaMemcpyHostToDevice, s));
    gemm_.matmul(da, db, dc, m, n, k, ta, tb, alpha, beta, s);
    CHECK_CUDA(cudaMemcpyAsync(c, dc, bytes_c, cudaMemcpyDeviceToHost, s));
    // The runtime reads C on the host right after the call.
    CHECK_CUDA(cudaStreamSynchronize(s));
  }

  std::shared_ptr<CudaStreams> streams_;
  cuda::CublasLtGemm gemm_;
  DeviceStaging staging_;
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
  if (world->size() > 1) world = make_nccl_world(std::move(world), streams, options.timeout_s);
  return std::make_unique<CudaBackend>(std::move(world), std::move(streams), options);
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

std::string cuda_device_name(const Backend& backend) {
  if (auto* b = dynamic_cast<const CudaBackend*>(&backend)) return b->device_name();
  return {};
}

}  // namespace sixfold
