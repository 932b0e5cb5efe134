#pragma once
// Device helpers shared by the kernel families: bf16 conversion, warp and block reductions,
// launch geometry. Reductions accumulate in fp32 whatever the storage type.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_kernels.hpp"

namespace sixfold::cuda {

using bf16 = __nv_bfloat16;

// Bf16 (host storage type of cuda_kernels.hpp) and __nv_bfloat16 are both two bytes of bfloat16.
static_assert(sizeof(Bf16) == sizeof(bf16), "Bf16 must be layout-compatible with __nv_bfloat16");
inline bf16* as_device(Bf16* p) { return reinterpret_cast<bf16*>(p); }
inline const bf16* as_device(const Bf16* p) { return reinterpret_cast<const bf16*>(p); }
inline cudaStream_t as_cuda(Stream s) { return static_cast<cudaStream_t>(s); }

__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ bf16 to_bf16(float v) { return __float2bfloat16(v); }  // round to nearest even

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block, returned to every thread. The leading barrier lets a kernel call it twice
// in a row without a race on the shared partials.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  return warp_sum(lane < warps ? partial[lane] : 0.0f);
}

__device__ __forceinline__ float block_max(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  return warp_max(lane < warps ? partial[lane] : -INFINITY);
}

// Grid for an element-wise kernel with a grid-stride loop: enough blocks to fill the GPU several
// times over, never more than the work needs.
inline unsigned elementwise_blocks(long n, int threads) {
  const long needed = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::max<long>(1, std::min<long>(needed, 65535L * 8)));
}

}  // namespace sixfold::cuda
