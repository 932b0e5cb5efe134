#pragma once
// Vocab-parallel softmax cross-entropy (Megatron-LM's vocab_parallel_cross_entropy, Shoeybi et
// al. 2019): each TP rank holds logits [rows, vocab_shard] for vocabulary ids
// [vocab_start, vocab_start + vocab_shard). The pieces below are separated by the all-reduces:
// rowmax -> all-reduce(max) -> sumexp and target_logit -> all-reduce(sum) -> loss and backward.
// loss[r] = log(global_sumexp[r]) + global_max[r] - target_logit[r]. A target < 0 is ignored.
#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

constexpr int kCrossEntropyThreads = 256;

__global__ void logits_rowmax_kernel(const bf16* logits, float* rowmax, int vocab_shard) {
  const bf16* row = logits + long(blockIdx.x) * vocab_shard;
  float m = -INFINITY;
  for (int v = threadIdx.x; v < vocab_shard; v += blockDim.x) m = fmaxf(m, to_float(row[v]));
  m = block_max(m);
  if (threadIdx.x == 0) rowmax[blockIdx.x] = m;
}

__global__ void logits_sumexp_kernel(const bf16* logits, const float* global_max, float* sumexp, int vocab_shard) {
  const bf16* row = logits + long(blockIdx.x) * vocab_shard;
  const float m = global_max[blockIdx.x];
  float s = 0.0f;
  for (int v = threadIdx.x; v < vocab_shard; v += blockDim.x) s += __expf(to_float(row[v]) - m);
  s = block_sum(s);
  if (threadIdx.x == 0) sumexp[blockIdx.x] = s;
}

__global__ void target_logit_kernel(const bf16* logits, const int* targets, int vocab_start, float* target_logit,
                                    int rows, int vocab_shard) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int local = targets[r] - vocab_start;
  const bool here = targets[r] >= 0 && local >= 0 && local < vocab_shard;
  target_logit[r] = here ? to_float(logits[long(r) * vocab_shard + local]) : 0.0f;
}

__global__ void cross_entropy_backward_kernel(const bf16* logits, const float* global_max,
                                              const float* global_sumexp, const int* targets, int vocab_start,
                                              float dloss_per_row, bf16* dlogits, int vocab_shard) {
  const int r = blockIdx.x;
  const long base = long(r) * vocab_shard;
  const int target = targets[r];
  if (target < 0) {
    for (int v = threadIdx.x; v < vocab_shard; v += blockDim.x) dlogits[base + v] = to_bf16(0.0f);
    return;
  }
  const int local = target - vocab_start;
  const float m = global_max[r];
  const float inv_sum = 1.0f / global_sumexp[r];
  for (int v = threadIdx.x; v < vocab_shard; v += blockDim.x) {
    const float p = __expf(to_float(logits[base + v]) - m) * inv_sum;
    dlogits[base + v] = to_bf16(dloss_per_row * (p - (v == local ? 1.0f : 0.0f)));
  }
}

}  // namespace sixfold::cuda
