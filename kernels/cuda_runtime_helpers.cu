// Runtime helpers of cuda_kernels.hpp: device memory and dtype conversion, so that C++ callers
// (executor, tests) need no CUDA header.
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

namespace {

__global__ void f32_to_bf16_kernel(const float* in, bf16* out, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x)
    out[i] = to_bf16(in[i]);
}

__global__ void bf16_to_f32_kernel(const bf16* in, float* out, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x)
    out[i] = to_float(in[i]);
}

}  // namespace

int device_count() {
  int count = 0;
  // No driver, an old driver or no device all mean "no GPU here" to the caller.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return count;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

void set_device(int device) { CHECK_CUDA(cudaSetDevice(device)); }

void* device_alloc(std::size_t bytes) {
  void* pointer = nullptr;
  CHECK_CUDA(cudaMalloc(&pointer, bytes == 0 ? 1 : bytes));
  return pointer;
}

void device_free(void* pointer) noexcept {
  if (pointer) (void)cudaFree(pointer);
}

void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  CHECK_CUDA(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  CHECK_CUDA(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost));
}

void device_zero(void* device_dst, std::size_t bytes, Stream stream) {
  CHECK_CUDA(cudaMemsetAsync(device_dst, 0, bytes, as_cuda(stream)));
}

void synchronize() { CHECK_CUDA(cudaDeviceSynchronize()); }

void convert_f32_to_bf16(const float* in, Bf16* out, long n, Stream stream) {
  if (n <= 0) return;
  f32_to_bf16_kernel<<<elementwise_blocks(n, 256), 256, 0, as_cuda(stream)>>>(in, as_device(out), n);
  CHECK_LAUNCH();
}

void convert_bf16_to_f32(const Bf16* in, float* out, long n, Stream stream) {
  if (n <= 0) return;
  bf16_to_f32_kernel<<<elementwise_blocks(n, 256), 256, 0, as_cuda(stream)>>>(as_device(in), out, n);
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
