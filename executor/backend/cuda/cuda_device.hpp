#pragma once
// Device-side plumbing shared by the CUDA backend and its NCCL communicators: the streams of one
// GPU (compute, communication), the event that orders communication after compute, and device
// staging buffers that grow to the largest request. Compiled only in the CUDA build (it includes
// the CUDA runtime header); the rest of the executor sees executor/backend/cuda/cuda_backend.hpp only.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "kernels/cuda_check.cuh"

namespace sixfold {

// The two streams of one GPU, as Megatron-LM and PyTorch DDP keep them: compute work on one,
// collectives on the other, ordered by events rather than by device-wide synchronisation.
struct CudaStreams {
  int device = 0;
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  cudaEvent_t compute_done = nullptr;  // recorded on `compute` after each op; `comm` waits on it
  cudaEvent_t comm_done = nullptr;     // recorded on `comm` after each collective; `compute` waits on it

  explicit CudaStreams(int device_index);
  ~CudaStreams();
  CudaStreams(const CudaStreams&) = delete;
  CudaStreams& operator=(const CudaStreams&) = delete;

  // Makes later work on `comm` wait for everything issued so far on `compute`, and vice versa.
  void comm_after_compute();
  void compute_after_comm();
};

// Device memory that grows to the largest size asked of it and is never shrunk (one cudaMalloc
// per new maximum instead of one per op). bytes() is what it holds now.
class DeviceStaging {
 public:
  DeviceStaging() = default;
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;
  DeviceStaging(DeviceStaging&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr; o.bytes_ = 0; }
  void* ensure(std::size_t bytes);
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Whether `pointer` is GPU memory (device or managed) rather than host memory.
bool is_device_memory(const void* pointer);

// Waits for `stream` to drain, at most timeout_s seconds; then throws sixfold::Error naming the
// operation and the group (the CPU backend's rule: a message instead of a hang). `on_timeout` runs
// before the throw (an NCCL communicator aborts itself there so the stream can be torn down).
void wait_stream(cudaStream_t stream, double timeout_s, const std::string& what, const std::string& group,
                 void (*on_timeout)(void*) = nullptr, void* context = nullptr);
// The same for one recorded event (a collective started without waiting).
void wait_event(cudaEvent_t event, double timeout_s, const std::string& what, const std::string& group,
                void (*on_timeout)(void*) = nullptr, void* context = nullptr);

}  // namespace sixfold
