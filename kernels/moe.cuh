#pragma once
// Mixture-of-experts routing and token permutation.
// Router (Mixtral, Jiang et al. 2024; Qwen3-MoE): softmax over all experts, keep the top-k,
// renormalise the kept probabilities to sum 1 -- equal to a softmax over the kept logits. Ties
// go to the lower expert index (as moe_permute_indices_ref and the CPU backend).
// Permutation: a stable counting sort of the (token, choice) assignments by expert, so that each
// expert reads one contiguous block of rows in token order (Megatron-LM's token dispatcher).
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

constexpr int kMaxTopK = 32;
constexpr int kPermuteBlock = 256;  // assignments per block of the counting sort

// One warp per token. Each of k rounds finds the largest not-yet-taken logit across the warp.
__global__ void topk_router_kernel(const float* logits, int tokens, int experts, int k, int* expert_index,
                                   float* gate_weight) {
  const int token = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (token >= tokens) return;
  const float* row = logits + long(token) * experts;
  int chosen[kMaxTopK];
  float chosen_logit[kMaxTopK];
  for (int c = 0; c < k; ++c) {
    float best = -INFINITY;
    int best_index = INT_MAX;
    for (int e = lane; e < experts; e += 32) {
      bool taken = false;
      for (int p = 0; p < c; ++p) taken = taken || chosen[p] == e;
      const float value = row[e];
      if (!taken && (best_index == INT_MAX || value > best)) {
        best = value;
        best_index = e;
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, best, offset);
      const int other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
      const bool other_wins = other_index != INT_MAX &&
                              (best_index == INT_MAX || other > best || (other == best && other_index < best_index));
      if (other_wins) {
        best = other;
        best_index = other_index;
      }
    }
    chosen[c] = best_index;
    chosen_logit[c] = best;
  }
  if (lane == 0) {
    // The first choice holds the largest logit; exp relative to it cannot overflow.
    float sum = 0.0f;
    for (int c = 0; c < k; ++c) sum += __expf(chosen_logit[c] - chosen_logit[0]);
    for (int c = 0; c < k; ++c) {
      expert_index[long(token) * k + c] = chosen[c];
      gate_weight[long(token) * k + c] = __expf(chosen_logit[c] - chosen_logit[0]) / sum;
    }
  }
}

// dlogit[e_c] = g_c (dg_c - sum_c' g_c' dg_c'); the other experts get 0. One thread per token.
__global__ void topk_router_backward_kernel(const float* dgate_weight, const int* expert_index,
                                            const float* gate_weight, float* dlogits, int tokens, int experts, int k) {
  const int token = blockIdx.x * blockDim.x + threadIdx.x;
  if (token >= tokens) return;
  float* drow = dlogits + long(token) * experts;
  for (int e = 0; e < experts; ++e) drow[e] = 0.0f;
  const long base = long(token) * k;
  float dot = 0.0f;
  for (int c = 0; c < k; ++c) dot += gate_weight[base + c] * dgate_weight[base + c];
  for (int c = 0; c < k; ++c) drow[expert_index[base + c]] = gate_weight[base + c] * (dgate_weight[base + c] - dot);
}

// Counting sort, pass 1: per-block histogram block_counts[block][expert].
__global__ void permute_count_kernel(const int* expert_index, long assignments, int experts, int* block_counts) {
  extern __shared__ int counts[];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  const long a = blockIdx.x * long(kPermuteBlock) + threadIdx.x;
  if (a < assignments) atomicAdd(&counts[expert_index[a]], 1);
  __syncthreads();
  for (int e = threadIdx.x; e < experts; e += blockDim.x) block_counts[long(blockIdx.x) * experts + e] = counts[e];
}

// Pass 2 (one block): block_counts becomes the first slot of each (block, expert) run, expert-major
// so that experts are contiguous and, within an expert, blocks (hence tokens) stay in order.
__global__ void permute_scan_kernel(int* block_counts, int blocks, int experts, int* expert_start,
                                    int* tokens_per_expert) {
  for (int e = threadIdx.x; e < experts; e += blockDim.x) {
    int running = 0;
    for (int b = 0; b < blocks; ++b) {
      const int count = block_counts[long(b) * experts + e];
      block_counts[long(b) * experts + e] = running;
      running += count;
    }
    tokens_per_expert[e] = running;
  }
  __syncthreads();
  // Exclusive prefix over experts, serial on one thread: experts number in the hundreds at most.
  if (threadIdx.x == 0) {
    int start = 0;
    for (int e = 0; e < experts; ++e) {
      expert_start[e] = start;
      start += tokens_per_expert[e];
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < experts; e += blockDim.x)
    for (int b = 0; b < blocks; ++b) block_counts[long(b) * experts + e] += expert_start[e];
}

// Pass 3: slot = start of this block's run of the expert + rank among earlier same-expert
// assignments of the block (a stable rank).
__global__ void permute_place_kernel(const int* expert_index, long assignments, int experts,
                                     const int* block_starts, int* sorted_slot_of_assignment) {
  __shared__ int block_experts[kPermuteBlock];
  const long a = blockIdx.x * long(kPermuteBlock) + threadIdx.x;
  block_experts[threadIdx.x] = a < assignments ? expert_index[a] : -1;
  __syncthreads();
  if (a >= assignments) return;
  const int e = block_experts[threadIdx.x];
  int rank = 0;
  for (int t = 0; t < int(threadIdx.x); ++t) rank += block_experts[t] == e;
  sorted_slot_of_assignment[a] = block_starts[long(blockIdx.x) * experts + e] + rank;
}

// permuted[slot(t, c)] = x[t]: one block per assignment.
__global__ void moe_permute_kernel(const bf16* x, const int* slots, int k, int hidden, bf16* permuted) {
  const long a = blockIdx.x;
  const long token = a / k;
  const bf16* src = x + token * hidden;
  bf16* dst = permuted + long(slots[a]) * hidden;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) dst[c] = src[c];
}

// out[t] = sum_c gate[t, c] * expert_out[slot(t, c)], fp32 accumulation. One block per token.
__global__ void moe_unpermute_kernel(const bf16* expert_out, const int* slots, const float* gate_weight, int k,
                                     int hidden, bf16* out) {
  const long token = blockIdx.x;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    float sum = 0.0f;
    for (int choice = 0; choice < k; ++choice) {
      const long a = token * k + choice;
      sum += gate_weight[a] * to_float(expert_out[long(slots[a]) * hidden + c]);
    }
    out[token * hidden + c] = to_bf16(sum);
  }
}

}  // namespace sixfold::cuda
