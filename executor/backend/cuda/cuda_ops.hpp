#pragma once
// The CUDA backend's kernels and memory: tensors in GPU memory (stream-ordered cudaMallocAsync
// on the compute stream, zero-filled), every DeviceOps call a launch of kernels/generic_kernels.cu
// on the compute stream. Index arrays, which the runtime keeps on the host (token ids, positions,
// expert choices and slots), are uploaded per call into a staging buffer; the router's expert
// choices come back to the host (the all-to-all sizes need them). CUDA builds only.
#include <memory>

#include "executor/backend/cuda/cuda_device.hpp"
#include "executor/backend/device_ops.hpp"
#include "executor/backend/device_storage.hpp"

namespace sixfold {

class CudaStorage final : public DeviceStorage {
 public:
  explicit CudaStorage(std::shared_ptr<CudaStreams> streams) : streams_(std::move(streams)) {}
  void* allocate(std::size_t bytes) override;
  void release(void* pointer, std::size_t bytes) noexcept override;
  void upload(void* dst, const void* src, std::size_t bytes) override;
  void download(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void zero(void* dst, std::size_t bytes) override;

 private:
  std::shared_ptr<CudaStreams> streams_;
};

template <class T>
std::unique_ptr<DeviceOps<T>> make_cuda_ops(std::shared_ptr<CudaStreams> streams);

}  // namespace sixfold
