#pragma once
// CPU reference of softmax cross-entropy split over a vocabulary shard, Megatron-style
// vocab-parallel (Shoeybi et al. 2019): each TP rank holds logits [rows, vocab_shard] for the
// vocabulary ids [vocab_start, vocab_start + vocab_shard). Between the pieces the caller
// all-reduces: max of rowmax, sum of sumexp, sum of target_logit. Then
//   loss_row = log(global_sumexp) + global_max - target_logit.
// A negative target marks a row that is ignored (contributes no gradient).
#include <cmath>
#include <limits>

namespace sixfold {

template <class T>
void logits_rowmax_ref(const T* logits, T* rowmax, int rows, int vocab_shard) {
  for (int r = 0; r < rows; ++r) {
    T m = -std::numeric_limits<T>::infinity();
    for (int v = 0; v < vocab_shard; ++v) m = logits[long(r) * vocab_shard + v] > m ? logits[long(r) * vocab_shard + v] : m;
    rowmax[r] = m;
  }
}

template <class T>
void logits_sumexp_ref(const T* logits, const T* global_max, T* sumexp, int rows, int vocab_shard) {
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int v = 0; v < vocab_shard; ++v) s += std::exp(double(logits[long(r) * vocab_shard + v]) - global_max[r]);
    sumexp[r] = T(s);
  }
}

template <class T>
void target_logit_ref(const T* logits, const int* targets, int vocab_start, T* target_logit, int rows,
                      int vocab_shard) {
  for (int r = 0; r < rows; ++r) {
    const int local = targets[r] - vocab_start;
    target_logit[r] = (targets[r] >= 0 && local >= 0 && local < vocab_shard) ? logits[long(r) * vocab_shard + local] : T(0);
  }
}

// dlogits = dloss_per_row * (softmax - onehot(target)); dloss_per_row is the same for every row
// (e.g. 1 / tokens for a mean loss).
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
      const double p = std::exp(double(logits[row + v]) - global_max[r]) / global_sumexp[r];
      dlogits[row + v] = T(double(dloss_per_row) * (p - (v == local ? 1.0 : 0.0)));
    }
  }
}

}  // namespace sixfold
