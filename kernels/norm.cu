// Plain-pointer API of the normalisation kernels (cuda_kernels.hpp): argument checks, then launch.
#include "kernels/norm.cuh"

namespace sixfold::cuda {

namespace {
void check_norm_shape(const char* what, int rows, int cols) {
  // Two fp32 rows of the weight gradient live in shared memory (227 KiB per block on Hopper).
  if (rows < 0 || cols <= 0 || cols > 28 * 1024)
    throw UsageError(std::string(what) + ": rows=" + std::to_string(rows) + ", cols=" + std::to_string(cols) +
                     " (allowed: rows >= 0, 1 <= cols <= 28672)");
}
}  // namespace

void rmsnorm_forward(const Bf16* x, const Bf16* w, Bf16* y, float* rstd, int rows, int cols, float eps,
                     Stream stream) {
  check_norm_shape("rmsnorm_forward", rows, cols);
  if (rows == 0) return;
  launch_rmsnorm_forward(as_device(x), as_device(w), as_device(y), rstd, rows, cols, eps, as_cuda(stream));
}

void rmsnorm_backward(const Bf16* dy, const Bf16* x, const Bf16* w, const float* rstd, Bf16* dx, float* dw_accum,
                      int rows, int cols, Stream stream) {
  check_norm_shape("rmsnorm_backward", rows, cols);
  if (rows == 0) return;
  launch_rmsnorm_backward(as_device(dy), as_device(x), as_device(w), rstd, as_device(dx), dw_accum, rows, cols,
                          as_cuda(stream));
}

void layernorm_forward(const Bf16* x, const Bf16* w, const Bf16* b, Bf16* y, float* mean, float* rstd, int rows,
                       int cols, float eps, Stream stream) {
  check_norm_shape("layernorm_forward", rows, cols);
  if (rows == 0) return;
  launch_layernorm_forward(as_device(x), as_device(w), as_device(b), as_device(y), mean, rstd, rows, cols, eps,
                           as_cuda(stream));
}

void layernorm_backward(const Bf16* dy, const Bf16* x, const Bf16* w, const float* mean, const float* rstd,
                        Bf16* dx, float* dw_accum, float* db_accum, int rows, int cols, Stream stream) {
  check_norm_shape("layernorm_backward", rows, cols);
  if (rows == 0) return;
  launch_layernorm_backward(as_device(dy), as_device(x), as_device(w), mean, rstd, as_device(dx), dw_accum,
                            db_accum, rows, cols, as_cuda(stream));
}

}  // namespace sixfold::cuda
