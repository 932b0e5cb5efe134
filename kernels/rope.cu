// Plain-pointer API of the rotary embedding (cuda_kernels.hpp).
#include "kernels/rope.cuh"

namespace sixfold::cuda {

namespace {
void check_rope(const char* what, int tokens, int heads, int head_dim, int rotary_dim, double theta) {
  if (tokens < 0 || heads <= 0 || head_dim <= 0 || rotary_dim <= 0 || rotary_dim > head_dim || rotary_dim % 2 != 0 ||
      !(theta > 1.0))
    throw UsageError(std::string(what) + ": tokens=" + std::to_string(tokens) + " heads=" + std::to_string(heads) +
                     " head_dim=" + std::to_string(head_dim) + " rotary_dim=" + std::to_string(rotary_dim) +
                     " theta=" + std::to_string(theta) +
                     " (allowed: rotary_dim even and in [2, head_dim], theta > 1)");
}
}  // namespace

void rope_forward(const Bf16* x, Bf16* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                  double theta, Stream stream) {
  check_rope("rope_forward", tokens, heads, head_dim, rotary_dim, theta);
  launch_rope(as_device(x), as_device(y), positions, tokens, heads, head_dim, rotary_dim, theta, 1.0,
              as_cuda(stream));
}

void rope_backward(const Bf16* dy, Bf16* dx, const int* positions, int tokens, int heads, int head_dim,
                   int rotary_dim, double theta, Stream stream) {
  check_rope("rope_backward", tokens, heads, head_dim, rotary_dim, theta);
  launch_rope(as_device(dy), as_device(dx), positions, tokens, heads, head_dim, rotary_dim, theta, -1.0,
              as_cuda(stream));
}

}  // namespace sixfold::cuda
