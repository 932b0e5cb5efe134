// Plain-pointer API of the activation kernels (cuda_kernels.hpp).
#include "kernels/activation.cuh"

namespace sixfold::cuda {

namespace {
constexpr int kThreads = 256;
void check_count(const char* what, long n) {
  if (n < 0) throw UsageError(std::string(what) + ": n=" + std::to_string(n) + " (allowed: n >= 0)");
}
}  // namespace

void swiglu_forward(const Bf16* gate, const Bf16* up, Bf16* out, long n, Stream stream) {
  check_count("swiglu_forward", n);
  if (n == 0) return;
  swiglu_forward_kernel<<<elementwise_blocks(n, kThreads), kThreads, 0, as_cuda(stream)>>>(
      as_device(gate), as_device(up), as_device(out), n);
  CHECK_LAUNCH();
}

void swiglu_backward(const Bf16* dout, const Bf16* gate, const Bf16* up, Bf16* dgate, Bf16* dup, long n,
                     Stream stream) {
  check_count("swiglu_backward", n);
  if (n == 0) return;
  swiglu_backward_kernel<<<elementwise_blocks(n, kThreads), kThreads, 0, as_cuda(stream)>>>(
      as_device(dout), as_device(gate), as_device(up), as_device(dgate), as_device(dup), n);
  CHECK_LAUNCH();
}

void gelu_forward(const Bf16* x, Bf16* y, long n, Stream stream) {
  check_count("gelu_forward", n);
  if (n == 0) return;
  gelu_forward_kernel<<<elementwise_blocks(n, kThreads), kThreads, 0, as_cuda(stream)>>>(as_device(x),
                                                                                        as_device(y), n);
  CHECK_LAUNCH();
}

void gelu_backward(const Bf16* dy, const Bf16* x, Bf16* dx, long n, Stream stream) {
  check_count("gelu_backward", n);
  if (n == 0) return;
  gelu_backward_kernel<<<elementwise_blocks(n, kThreads), kThreads, 0, as_cuda(stream)>>>(
      as_device(dy), as_device(x), as_device(dx), n);
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
