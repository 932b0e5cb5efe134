#pragma once
// Fused AdamW (Loshchilov & Hutter 2019) in the order of torch.optim.AdamW: decoupled weight
// decay on the parameter, moment updates, bias-corrected step. Master weights, gradient and
// moments are fp32 (mixed-precision training, Micikevicius et al. 2018); the bf16 copy that the
// forward reads is written in the same pass, saving a separate cast kernel.
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, bf16* model_param, long n,
                             float lr, float beta1, float beta2, float eps, float decay_factor,
                             float inv_bias_correction1, float inv_bias_correction2) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float p = param[i] * decay_factor - lr * (mi * inv_bias_correction1) / (sqrtf(vi * inv_bias_correction2) + eps);
    param[i] = p;
    if (model_param) model_param[i] = to_bf16(p);
  }
}

}  // namespace sixfold::cuda
