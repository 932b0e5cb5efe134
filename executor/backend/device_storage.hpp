#pragma once
// Where a backend keeps tensors: host memory on the CPU backend, GPU memory on the CUDA backend.
// The runtime holds every tensor as a TrackedBuffer allocated here and touches its elements only
// through the backend (its ops, GEMM and communicators) or through the explicit copies below:
// parameter initialisation in, the loss's row statistics and test read-outs out. So a backend
// whose memory the host cannot read (a GPU) runs the same runtime with no host copy of activations.
#include <cstddef>

namespace sixfold {

class DeviceStorage {
 public:
  virtual ~DeviceStorage() = default;
  // Zero-filled; bytes may be 0 (a null pointer).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* pointer, std::size_t bytes) noexcept = 0;
  virtual void upload(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  // copy and zero take this storage's memory or host memory on either side (a communicator that
  // copies bytes itself gets both); host memory they write is ready when they return.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(void* dst, std::size_t bytes) = 0;
};

// Plain host memory (calloc/free, memcpy): the CPU backend's and a bare MemoryTracker's.
DeviceStorage& host_storage();

}  // namespace sixfold
