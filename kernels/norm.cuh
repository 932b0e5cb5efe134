#pragma once
// RMSNorm (Zhang & Sennrich 2019) and LayerNorm (Ba et al. 2016), forward and backward.
// One block per row; statistics and the weight-gradient sums in fp32. The backward keeps each
// thread on the same columns for every row it visits, so dw/db accumulate in shared memory
// without atomics and reach global memory once per block.
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

constexpr int kNormThreads = 256;

__global__ void rmsnorm_forward_kernel(const bf16* x, const bf16* w, bf16* y, float* rstd, int rows, int cols,
                                       float eps) {
  const int row = blockIdx.x;
  const bf16* xr = x + long(row) * cols;
  float sum_sq = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = to_float(xr[c]);
    sum_sq += v * v;
  }
  const float rs = rsqrtf(block_sum(sum_sq) / cols + eps);
  if (threadIdx.x == 0) rstd[row] = rs;
  bf16* yr = y + long(row) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = to_bf16(to_float(xr[c]) * rs * to_float(w[c]));
}

__global__ void rmsnorm_backward_kernel(const bf16* dy, const bf16* x, const bf16* w, const float* rstd, bf16* dx,
                                        float* dw_accum, int rows, int cols) {
  extern __shared__ float dw_shared[];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) dw_shared[c] = 0.0f;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const bf16* xr = x + long(row) * cols;
    const bf16* dyr = dy + long(row) * cols;
    const float rs = rstd[row];
    float dot = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) dot += to_float(dyr[c]) * to_float(w[c]) * to_float(xr[c]);
    const float mean_dot = block_sum(dot) * rs / cols;
    bf16* dxr = dx + long(row) * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = to_float(dyr[c]);
      const float xhat = to_float(xr[c]) * rs;
      dxr[c] = to_bf16(rs * (g * to_float(w[c]) - xhat * mean_dot));
      dw_shared[c] += g * xhat;
    }
  }
  for (int c = threadIdx.x; c < cols; c += blockDim.x) atomicAdd(&dw_accum[c], dw_shared[c]);
}

__global__ void layernorm_forward_kernel(const bf16* x, const bf16* w, const bf16* b, bf16* y, float* mean,
                                         float* rstd, int rows, int cols, float eps) {
  const int row = blockIdx.x;
  const bf16* xr = x + long(row) * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += to_float(xr[c]);
  const float mu = block_sum(sum) / cols;
  float var = 0.0f;  // two passes: the one-pass E[x^2]-E[x]^2 cancels badly in fp32
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = to_float(xr[c]) - mu;
    var += d * d;
  }
  const float rs = rsqrtf(block_sum(var) / cols + eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  bf16* yr = y + long(row) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    yr[c] = to_bf16((to_float(xr[c]) - mu) * rs * to_float(w[c]) + to_float(b[c]));
}

__global__ void layernorm_backward_kernel(const bf16* dy, const bf16* x, const bf16* w, const float* mean,
                                          const float* rstd, bf16* dx, float* dw_accum, float* db_accum, int rows,
                                          int cols) {
  extern __shared__ float grad_shared[];
  float* dw_shared = grad_shared;
  float* db_shared = grad_shared + cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) dw_shared[c] = db_shared[c] = 0.0f;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const bf16* xr = x + long(row) * cols;
    const bf16* dyr = dy + long(row) * cols;
    const float mu = mean[row], rs = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = to_float(dyr[c]) * to_float(w[c]);
      sum_g += g;
      sum_gx += g * (to_float(xr[c]) - mu) * rs;
    }
    const float mean_g = block_sum(sum_g) / cols;
    const float mean_gx = block_sum(sum_gx) / cols;
    bf16* dxr = dx + long(row) * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const float d = to_float(dyr[c]);
      const float xhat = (to_float(xr[c]) - mu) * rs;
      dxr[c] = to_bf16(rs * (d * to_float(w[c]) - mean_g - xhat * mean_gx));
      dw_shared[c] += d * xhat;
      db_shared[c] += d;
    }
  }
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    atomicAdd(&dw_accum[c], dw_shared[c]);
    atomicAdd(&db_accum[c], db_shared[c]);
  }
}

// ---- host launchers ----

// Blocks of the backward: about two per SM, so that the per-block partial sums stay few.
inline int norm_backward_blocks(int rows) {
  int device = 0, sms = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, std::min(rows, 2 * sms));
}

template <class Kernel>
inline void allow_dynamic_shared(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

inline void launch_rmsnorm_forward(const bf16* x, const bf16* w, bf16* y, float* rstd, int rows, int cols,
                                   float eps, cudaStream_t stream) {
  rmsnorm_forward_kernel<<<rows, kNormThreads, 0, stream>>>(x, w, y, rstd, rows, cols, eps);
  CHECK_LAUNCH();
}

inline void launch_rmsnorm_backward(const bf16* dy, const bf16* x, const bf16* w, const float* rstd, bf16* dx,
                                    float* dw_accum, int rows, int cols, cudaStream_t stream) {
  const std::size_t shared = std::size_t(cols) * sizeof(float);
  allow_dynamic_shared(rmsnorm_backward_kernel, shared);
  rmsnorm_backward_kernel<<<norm_backward_blocks(rows), kNormThreads, shared, stream>>>(dy, x, w, rstd, dx,
                                                                                        dw_accum, rows, cols);
  CHECK_LAUNCH();
}

inline void launch_layernorm_forward(const bf16* x, const bf16* w, const bf16* b, bf16* y, float* mean, float* rstd,
                                     int rows, int cols, float eps, cudaStream_t stream) {
  layernorm_forward_kernel<<<rows, kNormThreads, 0, stream>>>(x, w, b, y, mean, rstd, rows, cols, eps);
  CHECK_LAUNCH();
}

inline void launch_layernorm_backward(const bf16* dy, const bf16* x, const bf16* w, const float* mean,
                                      const float* rstd, bf16* dx, float* dw_accum, float* db_accum, int rows,
                                      int cols, cudaStream_t stream) {
  const std::size_t shared = 2 * std::size_t(cols) * sizeof(float);
  allow_dynamic_shared(layernorm_backward_kernel, shared);
  layernorm_backward_kernel<<<norm_backward_blocks(rows), kNormThreads, shared, stream>>>(
      dy, x, w, mean, rstd, dx, dw_accum, db_accum, rows, cols);
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
