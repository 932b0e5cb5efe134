#include "executor/backend/cuda/cuda_device.hpp"

#include <chrono>
#include <thread>

namespace sixfold {

CudaStreams::CudaStreams(int device_index) : device(device_index) {
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&comm_done, cudaEventDisableTiming));
}

CudaStreams::~CudaStreams() {
  // Destructors must not throw; a failed teardown only leaks on a context that is going away.
  if (compute_done) cudaEventDestroy(compute_done);
  if (comm_done) cudaEventDestroy(comm_done);
  if (compute) cudaStreamDestroy(compute);
  if (comm) cudaStreamDestroy(comm);
}

void CudaStreams::comm_after_compute() {
  CHECK_CUDA(cudaEventRecord(compute_done, compute));
  CHECK_CUDA(cudaStreamWaitEvent(comm, compute_done, 0));
}

void CudaStreams::compute_after_comm() {
  CHECK_CUDA(cudaEventRecord(comm_done, comm));
  CHECK_CUDA(cudaStreamWaitEvent(compute, comm_done, 0));
}

bool is_device_memory(const void* pointer) {
  if (!pointer) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, pointer) != cudaSuccess) {
    cudaGetLastError();  // clear the error of an unknown pointer
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

DeviceStaging::~DeviceStaging() {
  if (data_) cudaFree(data_);
}

void* DeviceStaging::ensure(std::size_t bytes) {
  if (bytes <= bytes_) return data_;
  if (data_) CHECK_CUDA(cudaFree(data_));
  data_ = nullptr;
  bytes_ = 0;
  CHECK_CUDA(cudaMalloc(&data_, bytes));
  bytes_ = bytes;
  return data_;
}

namespace {

template <class Query>
void poll_until_done(Query query, double timeout_s, const std::string& what, const std::string& group,
                     void (*on_timeout)(void*), void* context) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const cudaError_t status = query();
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) CHECK_CUDA(status);
    if (std::chrono::steady_clock::now() > deadline) {
      if (on_timeout) on_timeout(context);
      throw Error("communication timed out: " + what + " on " + group + " did not complete within " +
                  std::to_string(timeout_s) + " s (a peer is missing or stopped); raise --timeout if it is slow");
    }
    // Short sleeps: a collective of the tiny test model takes tens of microseconds.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

void wait_stream(cudaStream_t stream, double timeout_s, const std::string& what, const std::string& group,
                 void (*on_timeout)(void*), void* context) {
  poll_until_done([stream] { return cudaStreamQuery(stream); }, timeout_s, what, group, on_timeout, context);
}

void wait_event(cudaEvent_t event, double timeout_s, const std::string& what, const std::string& group,
                void (*on_timeout)(void*), void* context) {
  poll_until_done([event] { return cudaEventQuery(event); }, timeout_s, what, group, on_timeout, context);
}

}  // namespace sixfold
