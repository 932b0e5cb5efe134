// Plain-pointer API of the vocab-parallel cross-entropy pieces (cuda_kernels.hpp).
#include "kernels/cross_entropy.cuh"

namespace sixfold::cuda {

namespace {
void check_logits(const char* what, int rows, int vocab_shard) {
  if (rows < 0 || vocab_shard <= 0)
    throw UsageError(std::string(what) + ": rows=" + std::to_string(rows) + " vocab_shard=" +
                     std::to_string(vocab_shard) + " (allowed: rows >= 0, vocab_shard >= 1)");
}
}  // namespace

void logits_rowmax(const Bf16* logits, float* rowmax, int rows, int vocab_shard, Stream stream) {
  check_logits("logits_rowmax", rows, vocab_shard);
  if (rows == 0) return;
  logits_rowmax_kernel<<<rows, kCrossEntropyThreads, 0, as_cuda(stream)>>>(as_device(logits), rowmax, vocab_shard);
  CHECK_LAUNCH();
}

void logits_sumexp(const Bf16* logits, const float* global_max, float* sumexp, int rows, int vocab_shard,
                   Stream stream) {
  check_logits("logits_sumexp", rows, vocab_shard);
  if (rows == 0) return;
  logits_sumexp_kernel<<<rows, kCrossEntropyThreads, 0, as_cuda(stream)>>>(as_device(logits), global_max, sumexp,
                                                                          vocab_shard);
  CHECK_LAUNCH();
}

void target_logit(const Bf16* logits, const int* targets, int vocab_start, float* target_logit_out, int rows,
                  int vocab_shard, Stream stream) {
  check_logits("target_logit", rows, vocab_shard);
  if (rows == 0) return;
  target_logit_kernel<<<(rows + 255) / 256, 256, 0, as_cuda(stream)>>>(as_device(logits), targets, vocab_start,
                                                                      target_logit_out, rows, vocab_shard);
  CHECK_LAUNCH();
}

void cross_entropy_backward(const Bf16* logits, const float* global_max, const float* global_sumexp,
                            const int* targets, int vocab_start, float dloss_per_row, Bf16* dlogits, int rows,
                            int vocab_shard, Stream stream) {
  check_logits("cross_entropy_backward", rows, vocab_shard);
  if (rows == 0) return;
  cross_entropy_backward_kernel<<<rows, kCrossEntropyThreads, 0, as_cuda(stream)>>>(
      as_device(logits), global_max, global_sumexp, targets, vocab_start, dloss_per_row, as_device(dlogits),
      vocab_shard);
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
