#pragma once
// CPU reference of causal scaled-dot-product attention with grouped-query heads (Ainslie et al.
// 2023, GQA): query head h reads key/value head h / (heads / kv_heads). Visibility comes from
// explicit positions (key j is visible to query i iff k_pos[j] <= q_pos[i]) so that the chunks of
// context parallelism and ring attention (Liu et al. 2023) use the same kernel.
//   q [tq, heads, d], k/v [tk, kv_heads, d], out [tq, heads, d], lse [heads, tq]
// One sequence per call. A query with no visible key gets out 0 and lse -inf; partial results
// over disjoint key sets merge exactly through lse (see merge_attention_partial_ref).
// The forward uses an online softmax (Milakov & Gimelshein 2018) so it needs no scratch memory.
#include <cmath>
#include <limits>

namespace sixfold {

template <class T>
void attention_forward_ref(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos,
                           int tq, int tk, int heads, int kv_heads, int d, T scale) {
  const int group = heads / kv_heads;
  for (int h = 0; h < heads; ++h) {
    const int kvh = h / group;
    for (int i = 0; i < tq; ++i) {
      const T* qi = q + (long(i) * heads + h) * d;
      T* oi = out + (long(i) * heads + h) * d;
      for (int c = 0; c < d; ++c) oi[c] = T(0);
      double running_max = -std::numeric_limits<double>::infinity();
      double running_sum = 0;
      for (int j = 0; j < tk; ++j) {
        if (k_pos[j] > q_pos[i]) continue;
        const T* kj = k + (long(j) * kv_heads + kvh) * d;
        const T* vj = v + (long(j) * kv_heads + kvh) * d;
        double s = 0;
        for (int c = 0; c < d; ++c) s += double(qi[c]) * kj[c];
        s *= double(scale);
        if (s > running_max) {
          const double rescale = std::exp(running_max - s);  // 0 on the first visible key
          running_sum *= rescale;
          for (int c = 0; c < d; ++c) oi[c] = T(oi[c] * rescale);
          running_max = s;
        }
        const double p = std::exp(s - running_max);
        running_sum += p;
        for (int c = 0; c < d; ++c) oi[c] = T(oi[c] + p * vj[c]);
      }
      if (running_sum > 0) {
        for (int c = 0; c < d; ++c) oi[c] = T(oi[c] / running_sum);
        lse[long(h) * tq + i] = T(running_max + std::log(running_sum));
      } else {
        lse[long(h) * tq + i] = -std::numeric_limits<T>::infinity();
      }
    }
  }
}

// Given the final out and lse (after any merge), the gradient of each key block is local:
//   P = exp(s - lse), dP = dout . v, dS = P (dP - D), D = dout . out
//   dq = scale * sum_j dS k_j (written, not accumulated), dk_j += scale * dS q, dv_j += P dout.
template <class T>
void attention_backward_ref(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                            T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int tk, int heads,
                            int kv_heads, int d, T scale) {
  const int group = heads / kv_heads;
  for (int h = 0; h < heads; ++h) {
    const int kvh = h / group;
    for (int i = 0; i < tq; ++i) {
      const long qoff = (long(i) * heads + h) * d;
      for (int c = 0; c < d; ++c) dq[qoff + c] = T(0);
      const double l = lse[long(h) * tq + i];
      if (std::isinf(l)) continue;
      double D = 0;
      for (int c = 0; c < d; ++c) D += double(dout[qoff + c]) * out[qoff + c];
      for (int j = 0; j < tk; ++j) {
        if (k_pos[j] > q_pos[i]) continue;
        const long koff = (long(j) * kv_heads + kvh) * d;
        double s = 0, dp = 0;
        for (int c = 0; c < d; ++c) {
          s += double(q[qoff + c]) * k[koff + c];
          dp += double(dout[qoff + c]) * v[koff + c];
        }
        const double p = std::exp(s * double(scale) - l);
        const double ds = p * (dp - D) * double(scale);
        for (int c = 0; c < d; ++c) {
          dq[qoff + c] = T(dq[qoff + c] + ds * k[koff + c]);
          dk_accum[koff + c] = T(dk_accum[koff + c] + ds * q[qoff + c]);
          dv_accum[koff + c] = T(dv_accum[koff + c] + p * dout[qoff + c]);
        }
      }
    }
  }
}

// Merges a partial result (out_b, lse_b) over another key block into the running (out, lse):
// lse = log(exp(lse) + exp(lse_b)), out = out * exp(lse_old - lse) + out_b * exp(lse_b - lse).
// Used by ring attention; rows with lse -inf on one side take the other side unchanged.
template <class T>
void merge_attention_partial_ref(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) {
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < tq; ++i) {
      const double la = lse[long(h) * tq + i], lb = lse_b[long(h) * tq + i];
      if (std::isinf(lb)) continue;
      T* oi = out + (long(i) * heads + h) * d;
      const T* bi = out_b + (long(i) * heads + h) * d;
      if (std::isinf(la)) {
        for (int c = 0; c < d; ++c) oi[c] = bi[c];
        lse[long(h) * tq + i] = T(lb);
        continue;
      }
      const double m = la > lb ? la : lb;
      const double merged = m + std::log(std::exp(la - m) + std::exp(lb - m));
      const double wa = std::exp(la - merged), wb = std::exp(lb - merged);
      for (int c = 0; c < d; ++c) oi[c] = T(oi[c] * wa + bi[c] * wb);
      lse[long(h) * tq + i] = T(merged);
    }
  }
}

}  // namespace sixfold
