// Plain-pointer API of the fused AdamW step (cuda_kernels.hpp). The step-dependent constants are
// formed once on the host in fp64.
#include <cmath>

#include "kernels/adamw.cuh"

namespace sixfold::cuda {

void adamw_step(float* master_param, const float* grad, float* m, float* v, Bf16* model_param, long n, double lr,
                double beta1, double beta2, double eps, double weight_decay, long step, Stream stream) {
  if (n < 0 || step < 1 || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps > 0))
    throw UsageError("adamw_step: n=" + std::to_string(n) + " step=" + std::to_string(step) + " beta1=" +
                     std::to_string(beta1) + " beta2=" + std::to_string(beta2) + " eps=" + std::to_string(eps) +
                     " (allowed: n >= 0, step >= 1, betas in [0, 1), eps > 0)");
  if (n == 0) return;
  const double bias1 = 1.0 - std::pow(beta1, double(step));
  const double bias2 = 1.0 - std::pow(beta2, double(step));
  adamw_kernel<<<elementwise_blocks(n, 256), 256, 0, as_cuda(stream)>>>(
      master_param, grad, m, v, model_param ? as_device(model_param) : nullptr, n, float(lr), float(beta1),
      float(beta2), float(eps), float(1.0 - lr * weight_decay), float(1.0 / bias1), float(1.0 / bias2));
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
