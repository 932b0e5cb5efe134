#pragma once
// Reference of softmax cross-entropy split over a vocabulary shard, Megatron-style
// vocab-parallel (Shoeybi et al. 2019): each TP rank holds logits [rows, vocab_shard] for the
// vocabulary ids [vocab_start, vocab_start + vocab_shard). Between the pieces the caller
// all-reduces: max of rowmax, sum of sumexp, sum of target_logit. Then
//   loss_row = log(global_sumexp) + global_max - target_logit.
// A negative target marks a row that is ignored (contributes no gradient). The per-row and
// per-element functions are shared with the device (host_device.hpp).
#include "kernels/host_device.hpp"

namespace sixfold {

template <class T>
SIXFOLD_HD void logits_rowmax_row(const T* logits, T* rowmax, long r, int vocab_shard) {
  T m = T(-HUGE_VAL);
  for (int v = 0; v < vocab_shard; ++v) m = logits[r * vocab_shard + v] > m ? logits[r * vocab_shard + v] : m;
  rowmax[r] = m;
}

template <class T>
SIXFOLD_HD void logits_sumexp_row(const T* logits, const T* global_max, T* sumexp, long r, int vocab_shard) {
  double s = 0;
  for (int v = 0; v < vocab_shard; ++v) s += ::exp(double(logits[r * vocab_shard + v]) - global_max[r]);
  sumexp[r] = T(s);
}

template <class T>
SIXFOLD_HD void target_logit_row(const T* logits, const int* targets, int vocab_start, T* target_logit, long r,
                                 int vocab_shard) {
  const int local = targets[r] - vocab_start;
  target_logit[r] = (targets[r] >= 0 && local >= 0 && local < vocab_shard) ? logits[r * vocab_shard + local] : T(0);
}

// Element e of [rows, vocab_shard]: the probability, and the gradient from it:
// dlogits = dloss (softmax - onehot(target)).
template <class T>
SIXFOLD_HD void softmax_element(const T* logits, const T* global_max, const T* global_sumexp, T* softmax,
                                int vocab_shard, long e) {
  const long r = e / vocab_shard;
  softmax[e] = T(::exp(double(logits[e]) - global_max[r]) * (1.0 / double(global_sumexp[r])));
}

template <class T>
SIXFOLD_HD void softmax_cross_entropy_backward_element(const T* softmax, const int* targets, int vocab_start, T dloss,
                                                       T* dlogits, int vocab_shard, long e) {
  const long r = e / vocab_shard, v = e % vocab_shard;
  T g = softmax[e] * dloss;
  if (targets[r] - vocab_start == v) g -= dloss;
  dlogits[e] = g;
}

template <class T>
void logits_rowmax_ref(const T* logits, T* rowmax, int rows, int vocab_shard) {
  for (int r = 0; r < rows; ++r) logits_rowmax_row(logits, rowmax, r, vocab_shard);
}

template <class T>
void logits_sumexp_ref(const T* logits, const T* global_max, T* sumexp, int rows, int vocab_shard) {
  for (int r = 0; r < rows; ++r) logits_sumexp_row(logits, global_max, sumexp, r, vocab_shard);
}

template <class T>
void target_logit_ref(const T* logits, const int* targets, int vocab_start, T* target_logit, int rows,
                      int vocab_shard) {
  for (int r = 0; r < rows; ++r) target_logit_row(logits, targets, vocab_start, target_logit, r, vocab_shard);
}

template <class T>
void softmax_ref(const T* logits, const T* global_max, const T* global_sumexp, T* softmax, int rows, int vocab_shard) {
  for (long e = 0; e < long(rows) * vocab_shard; ++e)
    softmax_element(logits, global_max, global_sumexp, softmax, vocab_shard, e);
}

template <class T>
void softmax_cross_entropy_backward_ref(const T* softmax, const int* targets, int vocab_start, T dloss, T* dlogits,
                                        int rows, int vocab_shard) {
  for (long e = 0; e < long(rows) * vocab_shard; ++e)
    softmax_cross_entropy_backward_element(softmax, targets, vocab_start, dloss, dlogits, vocab_shard, e);
}

// dlogits = dloss_per_row * (softmax - onehot(target)) from the logits themselves; dloss_per_row
// is the same for every row (e.g. 1 / tokens for a mean loss).
template <class T>
void cross_entropy_backward_ref(const T* logits, const T* global_max, const T* global_sumexp, const int* targets,
                                int vocab_start, T dloss_per_row, T* dlogits, int rows, int vocab_shard) {
  for (int r = 0; r < rows; ++r) {
    const long row = long(r) * vocab_shard;
    if (targets[r] < 0) {
      for (int v = 0; v < vocab_shard; ++v) dlogits[row + v] = T(0);
      continue;
    }
    const int local = targets[r] - vocab_start;
    for (int v = 0; v < vocab_shard; ++v) {
      const double p = ::exp(double(logits[row + v]) - global_max[r]) / global_sumexp[r];
      dlogits[row + v] = T(double(dloss_per_row) * (p - (v == local ? 1.0 : 0.0)));
    }
  }
}

}  // namespace sixfold
