#pragma once
// Reference of causal scaled-dot-product attention with grouped-query heads (Ainslie et al.
// 2023, GQA): query head h reads key/value head h / (heads / kv_heads). Visibility comes from
// explicit positions (key j is visible to query i iff k_pos[j] <= q_pos[i]) so that the chunks of
// context parallelism and ring attention (Liu et al. 2023) use the same kernel.
//   q [tq, heads, d], k/v [tk, kv_heads, d], out [tq, heads, d], lse [heads, tq]
// One sequence per call. A query with no visible key gets out 0 and lse -inf; partial results
// over disjoint key sets merge exactly through lse (see merge_attention_partial_ref).
// The forward uses an online softmax (Milakov & Gimelshein 2018) so it needs no scratch memory.
// The per-query and per-key functions are shared with the device (host_device.hpp).
#include "kernels/host_device.hpp"

namespace sixfold {

// Query i of head h.
template <class T>
SIXFOLD_HD void attention_forward_query(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos,
                                        const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, T scale,
                                        int h, int i) {
  const int kvh = h / (heads / kv_heads);
  const T* qi = q + (long(i) * heads + h) * d;
  T* oi = out + (long(i) * heads + h) * d;
  for (int c = 0; c < d; ++c) oi[c] = T(0);
  double running_max = -HUGE_VAL;
  double running_sum = 0;
  for (int j = 0; j < tk; ++j) {
    if (k_pos[j] > q_pos[i]) continue;
    const T* kj = k + (long(j) * kv_heads + kvh) * d;
    const T* vj = v + (long(j) * kv_heads + kvh) * d;
    double s = 0;
    for (int c = 0; c < d; ++c) s += double(qi[c]) * kj[c];
    s *= double(scale);
    if (s > running_max) {
      const double rescale = ::exp(running_max - s);  // 0 on the first visible key
      running_sum *= rescale;
      for (int c = 0; c < d; ++c) oi[c] = T(oi[c] * rescale);
      running_max = s;
    }
    const double p = ::exp(s - running_max);
    running_sum += p;
    for (int c = 0; c < d; ++c) oi[c] = T(oi[c] + p * vj[c]);
  }
  if (running_sum > 0) {
    for (int c = 0; c < d; ++c) oi[c] = T(oi[c] / running_sum);
    lse[long(h) * tq + i] = T(running_max + ::log(running_sum));
  } else {
    lse[long(h) * tq + i] = T(-HUGE_VAL);
  }
}

template <class T>
void attention_forward_ref(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos,
                           int tq, int tk, int heads, int kv_heads, int d, T scale) {
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < tq; ++i)
      attention_forward_query(q, k, v, out, lse, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale, h, i);
}

// Given the final out and lse (after any merge), the gradient of each key block is local:
//   P = exp(s - lse), dP = dout . v, dS = P (dP - D), D = dout . out
//   dq = scale * sum_j dS k_j (written, not accumulated), dk_j += scale * dS q, dv_j += P dout.
// The backward runs per query (dq) and per key (dk, dv), each over the pairs it sees in the order
// (head, query, key), so no two outputs share an accumulator.
template <class T>
SIXFOLD_HD double attention_row_dot(const T* dout, const T* out, int heads, int d, int h, int i) {
  const long off = (long(i) * heads + h) * d;
  double D = 0;
  for (int c = 0; c < d; ++c) D += double(dout[off + c]) * out[off + c];
  return D;
}

// The pair (query i of head h, key j): P and dS.
template <class T>
SIXFOLD_HD void attention_pair(const T* dout, const T* q, const T* k, const T* v, double l, double D, int heads,
                               int kv_heads, int d, T scale, int h, int i, int j, double& p, double& ds) {
  const int kvh = h / (heads / kv_heads);
  const long qoff = (long(i) * heads + h) * d, koff = (long(j) * kv_heads + kvh) * d;
  double s = 0, dp = 0;
  for (int c = 0; c < d; ++c) {
    s += double(q[qoff + c]) * k[koff + c];
    dp += double(dout[qoff + c]) * v[koff + c];
  }
  p = ::exp(s * double(scale) - l);
  ds = p * (dp - D) * double(scale);
}

template <class T>
SIXFOLD_HD void attention_backward_query(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse,
                                         T* dq, const int* q_pos, const int* k_pos, int tq, int tk, int heads,
                                         int kv_heads, int d, T scale, int h, int i) {
  const int kvh = h / (heads / kv_heads);
  const long qoff = (long(i) * heads + h) * d;
  for (int c = 0; c < d; ++c) dq[qoff + c] = T(0);
  const double l = lse[long(h) * tq + i];
  if (is_infinite(l)) return;
  const double D = attention_row_dot(dout, out, heads, d, h, i);
  for (int j = 0; j < tk; ++j) {
    if (k_pos[j] > q_pos[i]) continue;
    double p, ds;
    attention_pair(dout, q, k, v, l, D, heads, kv_heads, d, scale, h, i, j, p, ds);
    const long koff = (long(j) * kv_heads + kvh) * d;
    for (int c = 0; c < d; ++c) dq[qoff + c] = T(dq[qoff + c] + ds * k[koff + c]);
  }
}

// Key j of kv head kvh: its gradient from every query head of its group.
template <class T>
SIXFOLD_HD void attention_backward_key(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse,
                                       T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int heads,
                                       int kv_heads, int d, T scale, int kvh, int j) {
  const int group = heads / kv_heads;
  const long koff = (long(j) * kv_heads + kvh) * d;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int i = 0; i < tq; ++i) {
      if (k_pos[j] > q_pos[i]) continue;
      const double l = lse[long(h) * tq + i];
      if (is_infinite(l)) continue;
      double p, ds;
      attention_pair(dout, q, k, v, l, attention_row_dot(dout, out, heads, d, h, i), heads, kv_heads, d, scale, h, i, j,
                     p, ds);
      const long qoff = (long(i) * heads + h) * d;
      for (int c = 0; c < d; ++c) {
        dk_accum[koff + c] = T(dk_accum[koff + c] + ds * q[qoff + c]);
        dv_accum[koff + c] = T(dv_accum[koff + c] + p * dout[qoff + c]);
      }
    }
}

template <class T>
void attention_backward_ref(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                            T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int tk, int heads,
                            int kv_heads, int d, T scale) {
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < tq; ++i)
      attention_backward_query(dout, q, k, v, out, lse, dq, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale, h, i);
  for (int kvh = 0; kvh < kv_heads; ++kvh)
    for (int j = 0; j < tk; ++j)
      attention_backward_key(dout, q, k, v, out, lse, dk_accum, dv_accum, q_pos, k_pos, tq, heads, kv_heads, d, scale,
                             kvh, j);
}

// Merges a partial result (out_b, lse_b) over another key block into the running (out, lse):
// lse = log(exp(lse) + exp(lse_b)), out = out * exp(lse_old - lse) + out_b * exp(lse_b - lse).
// Used by ring attention; rows with lse -inf on one side take the other side unchanged.
template <class T>
SIXFOLD_HD void merge_attention_partial_query(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d,
                                              int h, int i) {
  const double la = lse[long(h) * tq + i], lb = lse_b[long(h) * tq + i];
  if (is_infinite(lb)) return;
  T* oi = out + (long(i) * heads + h) * d;
  const T* bi = out_b + (long(i) * heads + h) * d;
  if (is_infinite(la)) {
    for (int c = 0; c < d; ++c) oi[c] = bi[c];
    lse[long(h) * tq + i] = T(lb);
    return;
  }
  const double m = la > lb ? la : lb;
  const double merged = m + ::log(::exp(la - m) + ::exp(lb - m));
  const double wa = ::exp(la - merged), wb = ::exp(lb - merged);
  for (int c = 0; c < d; ++c) oi[c] = T(oi[c] * wa + bi[c] * wb);
  lse[long(h) * tq + i] = T(merged);
}

template <class T>
void merge_attention_partial_ref(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) {
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < tq; ++i) merge_attention_partial_query(out, lse, out_b, lse_b, tq, heads, d, h, i);
}

}  // namespace sixfold
