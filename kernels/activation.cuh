#pragma once
// Element-wise activations: SwiGLU (Shazeer 2020, silu(gate) * up, as in Llama) and GELU with
// the tanh approximation (Hendrycks & Gimpel 2016, as in GPT-2). Math in fp32, storage bf16.
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

// sqrt(2/pi) and the cubic coefficient of the tanh approximation of GELU.
constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + __expf(-v)); }

__global__ void swiglu_forward_kernel(const bf16* gate, const bf16* up, bf16* out, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const float g = to_float(gate[i]);
    out[i] = to_bf16(g * sigmoid(g) * to_float(up[i]));
  }
}

__global__ void swiglu_backward_kernel(const bf16* dout, const bf16* gate, const bf16* up, bf16* dgate, bf16* dup,
                                       long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const float g = to_float(gate[i]), s = sigmoid(g), d = to_float(dout[i]);
    dgate[i] = to_bf16(d * to_float(up[i]) * (s + g * s * (1.0f - s)));
    dup[i] = to_bf16(d * g * s);
  }
}

__global__ void gelu_forward_kernel(const bf16* x, bf16* y, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const float v = to_float(x[i]);
    const float t = tanhf(kGeluSqrt2OverPi * (v + kGeluCubic * v * v * v));
    y[i] = to_bf16(0.5f * v * (1.0f + t));
  }
}

__global__ void gelu_backward_kernel(const bf16* dy, const bf16* x, bf16* dx, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const float v = to_float(x[i]);
    const float t = tanhf(kGeluSqrt2OverPi * (v + kGeluCubic * v * v * v));
    const float dinner = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = to_bf16(to_float(dy[i]) * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner));
  }
}

}  // namespace sixfold::cuda
