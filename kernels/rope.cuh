#pragma once
// Rotary position embedding (Su et al. 2021, RoFormer), NeoX/Llama layout: within each head the
// first rotary_dim channels rotate as pairs (i, i + rotary_dim/2) by angle pos * theta^(-2i/rotary_dim);
// the remaining channels pass through. The backward is the rotation by the opposite angle.
// Angles are formed in fp64: at positions of 10^5 an fp32 argument would already be off by ~1e-2 rad.
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

// One thread per (token, head, i) with i < head_dim - rotary_dim/2: i < half rotates the pair
// (i, i + half), the rest copy channel i + half (>= rotary_dim).
__global__ void rope_kernel(const bf16* x, bf16* y, const int* positions, int tokens, int heads, int head_dim,
                            int rotary_dim, double theta, double sign) {
  const int half = rotary_dim / 2;
  const int per_head = head_dim - half;
  const long total = long(tokens) * heads * per_head;
  for (long idx = blockIdx.x * long(blockDim.x) + threadIdx.x; idx < total; idx += long(gridDim.x) * blockDim.x) {
    const int i = int(idx % per_head);
    const long token_head = idx / per_head;
    const int t = int(token_head / heads);
    const long base = token_head * head_dim;
    if (i < half) {
      const double inv_freq = pow(theta, -2.0 * i / rotary_dim);
      double s, c;
      sincos(double(positions[t]) * inv_freq, &s, &c);
      s *= sign;
      const float x1 = to_float(x[base + i]), x2 = to_float(x[base + i + half]);
      y[base + i] = to_bf16(float(x1 * c - x2 * s));
      y[base + i + half] = to_bf16(float(x2 * c + x1 * s));
    } else {
      y[base + i + half] = x[base + i + half];
    }
  }
}

inline void launch_rope(const bf16* x, bf16* y, const int* positions, int tokens, int heads, int head_dim,
                        int rotary_dim, double theta, double sign, cudaStream_t stream) {
  const long total = long(tokens) * heads * (head_dim - rotary_dim / 2);
  if (total == 0) return;
  rope_kernel<<<elementwise_blocks(total, 256), 256, 0, stream>>>(x, y, positions, tokens, heads, head_dim,
                                                                  rotary_dim, theta, sign);
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
