// Plain-pointer API of the MoE router and permutation kernels (cuda_kernels.hpp).
#include <climits>

#include "kernels/moe.cuh"

namespace sixfold::cuda {

namespace {

int permute_blocks(long assignments) { return int((assignments + kPermuteBlock - 1) / kPermuteBlock); }

void check_routing(const char* what, int tokens, int experts, int k) {
  if (tokens < 0 || experts <= 0 || k <= 0 || k > experts || k > kMaxTopK)
    throw UsageError(std::string(what) + ": tokens=" + std::to_string(tokens) + " experts=" +
                     std::to_string(experts) + " k=" + std::to_string(k) + " (allowed: 1 <= k <= min(experts, " +
                     std::to_string(kMaxTopK) + "))");
}

}  // namespace

void topk_router(const float* logits, int tokens, int experts, int k, int* expert_index, float* gate_weight,
                 Stream stream) {
  check_routing("topk_router", tokens, experts, k);
  if (tokens == 0) return;
  const int warps_per_block = 8;
  topk_router_kernel<<<(tokens + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0, as_cuda(stream)>>>(
      logits, tokens, experts, k, expert_index, gate_weight);
  CHECK_LAUNCH();
}

void topk_router_backward(const float* dgate_weight, const int* expert_index, const float* gate_weight,
                          float* dlogits, int tokens, int experts, int k, Stream stream) {
  check_routing("topk_router_backward", tokens, experts, k);
  if (tokens == 0) return;
  topk_router_backward_kernel<<<(tokens + 127) / 128, 128, 0, as_cuda(stream)>>>(dgate_weight, expert_index,
                                                                                gate_weight, dlogits, tokens,
                                                                                experts, k);
  CHECK_LAUNCH();
}

std::size_t moe_permute_indices_workspace_bytes(int tokens, int k, int experts) {
  const long assignments = long(std::max(tokens, 0)) * std::max(k, 0);
  return sizeof(int) * (std::size_t(permute_blocks(assignments)) * std::max(experts, 0) + std::max(experts, 0));
}

void moe_permute_indices(const int* expert_index, int tokens, int k, int experts, int* sorted_slot_of_assignment,
                         int* tokens_per_expert, void* workspace, Stream stream) {
  check_routing("moe_permute_indices", tokens, experts, k);
  if (long(tokens) * k > INT_MAX) throw UsageError("moe_permute_indices: tokens * k exceeds 2^31");
  if (workspace == nullptr)
    throw UsageError("moe_permute_indices: workspace is null (size: moe_permute_indices_workspace_bytes)");
  const long assignments = long(tokens) * k;
  const int blocks = permute_blocks(assignments);
  int* block_counts = static_cast<int*>(workspace);
  int* expert_start = block_counts + long(blocks) * experts;
  cudaStream_t s = as_cuda(stream);
  if (blocks > 0) {
    permute_count_kernel<<<blocks, kPermuteBlock, experts * sizeof(int), s>>>(expert_index, assignments, experts,
                                                                              block_counts);
    CHECK_LAUNCH();
  }
  permute_scan_kernel<<<1, 256, 0, s>>>(block_counts, blocks, experts, expert_start, tokens_per_expert);
  CHECK_LAUNCH();
  if (blocks > 0) {
    permute_place_kernel<<<blocks, kPermuteBlock, 0, s>>>(expert_index, assignments, experts, block_counts,
                                                          sorted_slot_of_assignment);
    CHECK_LAUNCH();
  }
}

void moe_permute(const Bf16* x, const int* sorted_slot_of_assignment, int tokens, int k, int hidden,
                 Bf16* permuted, Stream stream) {
  if (tokens < 0 || k <= 0 || hidden <= 0)
    throw UsageError("moe_permute: tokens=" + std::to_string(tokens) + " k=" + std::to_string(k) +
                     " hidden=" + std::to_string(hidden) + " (allowed: tokens >= 0, k >= 1, hidden >= 1)");
  const long assignments = long(tokens) * k;
  if (assignments == 0) return;
  moe_permute_kernel<<<unsigned(assignments), 256, 0, as_cuda(stream)>>>(as_device(x), sorted_slot_of_assignment, k,
                                                                         hidden, as_device(permuted));
  CHECK_LAUNCH();
}

void moe_unpermute(const Bf16* expert_out, const int* sorted_slot_of_assignment, const float* gate_weight,
                   int tokens, int k, int hidden, Bf16* out, Stream stream) {
  if (tokens < 0 || k <= 0 || hidden <= 0)
    throw UsageError("moe_unpermute: tokens=" + std::to_string(tokens) + " k=" + std::to_string(k) +
                     " hidden=" + std::to_string(hidden) + " (allowed: tokens >= 0, k >= 1, hidden >= 1)");
  if (tokens == 0) return;
  moe_unpermute_kernel<<<tokens, 256, 0, as_cuda(stream)>>>(as_device(expert_out), sorted_slot_of_assignment,
                                                             gate_weight, k, hidden, as_device(out));
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
