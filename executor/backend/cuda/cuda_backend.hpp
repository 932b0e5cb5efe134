#pragma once
// The CUDA backend of the executor: one GPU per rank, every tensor of the model runtime in its
// memory (cuda_ops.hpp: stream-ordered allocations, zero-filled), GEMMs through cuBLASLt on those
// tensors in place (kernels/ CublasLtGemm, the one wrapper; fp32 or fp64, the precisions of the
// model runtime), every other op a kernel of kernels/generic_kernels.cu, a compute and a
// communication stream ordered by events, and NCCL communicators per process group when more than
// one rank is launched (unique id exchanged over the MPI world; a single GPU needs neither MPI nor
// NCCL). The host touches tensors only to initialise the parameters and to read the loss's row
// statistics; index arrays (tokens, positions, expert slots) go up per op.
// Still open: the runtime's precision is float/double, so the bf16 kernels of
// kernels/cuda_kernels.hpp (tensor-core flash attention, vectorised norms) are not on this path;
// the generic kernels run one thread per row and are correct before fast. Memory accounting by
// category is the runtime's own (identical to the CPU backend's); the cuBLASLt workspace and NCCL
// staging of host buffers are reported separately.
//
// This header needs no CUDA header; its functions exist only in the CUDA build (SIXFOLD_HAVE_CUDA).
#include <memory>
#include <string>

#include "common/units.hpp"
#include "executor/backend/backend.hpp"

namespace sixfold {

struct CudaBackendOptions {
  double timeout_s = 120;  // bound on any one collective, as for the CPU backend
  bool tf32 = false;       // fp32 GEMMs on TF32 tensor cores (faster, ~1e-3 relative difference)
  bool trace = false;      // record kernels and memcpys with CUPTI (executor/backend/cuda/cuda_cupti_recorder.hpp)
};

// Device bytes the CUDA backend holds outside the runtime's tracked tensors.
struct CudaDeviceMemory {
  Bytes workspace = 0;         // cuBLASLt workspace
  Bytes comm_staging_peak = 0; // NCCL staging of the communicators (0 on a single GPU)
};

// Picks this rank's GPU (local rank modulo the device count), creates the streams and, when the
// world has more than one rank, the NCCL world. Throws UsageError("no CUDA device ...") when no
// GPU is visible.
std::unique_ptr<Backend> make_cuda_backend(std::unique_ptr<Communicator> world, const CudaBackendOptions& options);

// The device memory of a backend made by make_cuda_backend (zeros for any other backend).
CudaDeviceMemory cuda_device_memory(const Backend& backend);

// Writes the CUPTI trace of a backend made with options.trace as a Chrome trace (the simulator's
// format); throws UsageError for a backend that does not trace.
void cuda_write_trace(Backend& backend, int rank, const std::string& title, const std::string& path);

// Whether `pointer` is GPU memory (device or managed): the tensors of a CUDA backend's runtime are.
bool cuda_is_device_memory(const void* pointer);

// Name of the GPU a CUDA backend runs on ("" for any other backend).
std::string cuda_device_name(const Backend& backend);

}  // namespace sixfold
