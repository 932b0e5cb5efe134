#pragma once
// Reference of the row moves and sums of the executor's runtime: residual adds, the MoE
// permutations and gate weights, the vocab-parallel embedding. Per-element functions shared with
// the device (host_device.hpp); the _ref loops run them on the CPU.
#include "kernels/host_device.hpp"

namespace sixfold {

// dst[dst_index[i], c] = src[src_index[i], c], element e = (i, c) of [n, width].
template <class T>
SIXFOLD_HD void copy_rows_element(const T* src, const int* src_index, T* dst, const int* dst_index, long width,
                                  long e) {
  const long i = e / width, c = e % width;
  dst[long(dst_index[i]) * width + c] = src[long(src_index[i]) * width + c];
}

// out[t, c] = sum over j < k of src[index[t k + j], c], element e = (t, c).
template <class T>
SIXFOLD_HD void sum_rows_element(const T* src, const int* index, int k, long width, T* out, long e) {
  const long t = e / width, c = e % width;
  T sum = T(0);
  for (int j = 0; j < k; ++j) sum += src[long(index[t * k + j]) * width + c];
  out[e] = sum;
}

// out[r, c] = table[token_r - vocab_start, c] for a token of this shard, else 0.
template <class T>
SIXFOLD_HD void embedding_forward_element(const T* table, const int* tokens, long vocab_start, long vocab_local,
                                          long width, T* out, long e) {
  const long r = e / width, c = e % width, local = tokens[r] - vocab_start;
  out[e] = (local >= 0 && local < vocab_local) ? table[local * width + c] : T(0);
}

// out[r] = a[r, :] . b[r, :] in double.
template <class T>
SIXFOLD_HD void row_dot_row(const T* a, const T* b, T* out, long width, long r) {
  double dot = 0;
  for (long i = 0; i < width; ++i) dot += double(a[r * width + i]) * b[r * width + i];
  out[r] = T(dot);
}

template <class T>
void copy_rows_ref(const T* src, const int* src_index, T* dst, const int* dst_index, long n, long width) {
  for (long e = 0; e < n * width; ++e) copy_rows_element(src, src_index, dst, dst_index, width, e);
}
template <class T>
void sum_rows_ref(const T* src, const int* index, long tokens, int k, long width, T* out) {
  for (long e = 0; e < tokens * width; ++e) sum_rows_element(src, index, k, width, out, e);
}
template <class T>
void embedding_forward_ref(const T* table, const int* tokens, long rows, long vocab_start, long vocab_local, long width,
                           T* out) {
  for (long e = 0; e < rows * width; ++e)
    embedding_forward_element(table, tokens, vocab_start, vocab_local, width, out, e);
}
// grad[token_r - vocab_start, :] += dout[r, :] for tokens of this shard, rows in order (the
// device adds atomically instead: same sums, any order).
template <class T>
void embedding_backward_ref(const T* dout, const int* tokens, long rows, long vocab_start, long vocab_local, long width,
                            T* grad_accum) {
  for (long r = 0; r < rows; ++r) {
    const long local = tokens[r] - vocab_start;
    if (local < 0 || local >= vocab_local) continue;
    for (long i = 0; i < width; ++i) grad_accum[local * width + i] += dout[r * width + i];
  }
}
template <class T>
void row_dot_ref(const T* a, const T* b, T* out, long rows, long width) {
  for (long r = 0; r < rows; ++r) row_dot_row(a, b, out, width, r);
}

}  // namespace sixfold
