// Precision-generic kernels (cuda_generic_kernels.hpp): one thread per output row or element,
// double accumulation, the references' formulas (kernels/*_ref.hpp) written for the device.
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda_check.cuh"
#include "kernels/cuda_generic_kernels.hpp"

namespace sixfold::cuda::generic {

namespace {

constexpr int kThreads = 256;

cudaStream_t as_cuda(Stream s) { return static_cast<cudaStream_t>(s); }

// Blocks for n threads (at least one; a grid-stride loop covers any n).
unsigned blocks_for(long n) {
  const long b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 65535L * 8 ? 65535L * 8 : b));
}

#define SIXFOLD_FOR_EACH(i, n) for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += long(gridDim.x) * blockDim.x)

template <class T> __global__ void add_k(T* y, const T* x, long n) { SIXFOLD_FOR_EACH(i, n) y[i] += x[i]; }

template <class T> __global__ void scale_rows_k(T* x, const T* sc, long rows, long width) {
  SIXFOLD_FOR_EACH(i, rows * width) x[i] *= sc[i / width];
}

template <class T> __global__ void row_dot_k(const T* a, const T* b, T* out, long rows, long width) {
  SIXFOLD_FOR_EACH(r, rows) {
    double dot = 0;
    for (long i = 0; i < width; ++i) dot += double(a[r * width + i]) * b[r * width + i];
    out[r] = T(dot);
  }
}

template <class T> __global__ void sum_squares_k(const T* x, long n, double* result) {
  double s = 0;
  SIXFOLD_FOR_EACH(i, n) s += double(x[i]) * x[i];
  atomicAdd(result, s);
}

template <class T> __global__ void copy_rows_k(const T* src, const int* si, T* dst, const int* di, long n, long width) {
  SIXFOLD_FOR_EACH(e, n * width) {
    const long i = e / width, c = e % width;
    dst[long(di[i]) * width + c] = src[long(si[i]) * width + c];
  }
}

template <class T> __global__ void sum_rows_k(const T* src, const int* index, long tokens, int k, long width, T* out) {
  SIXFOLD_FOR_EACH(e, tokens * width) {
    const long t = e / width, c = e % width;
    T sum = T(0);
    for (int j = 0; j < k; ++j) sum += src[long(index[t * k + j]) * width + c];
    out[e] = sum;
  }
}

template <class T>
__global__ void embedding_forward_k(const T* table, const int* tokens, long rows, long start, long local_n, long width, T* out) {
  SIXFOLD_FOR_EACH(e, rows * width) {
    const long r = e / width, c = e % width, local = tokens[r] - start;
    out[e] = (local >= 0 && local < local_n) ? table[local * width + c] : T(0);
  }
}

template <class T>
__global__ void embedding_backward_k(const T* dout, const int* tokens, long rows, long start, long local_n, long width, T* grad) {
  SIXFOLD_FOR_EACH(e, rows * width) {
    const long r = e / width, c = e % width, local = tokens[r] - start;
    if (local >= 0 && local < local_n) atomicAdd(grad + local * width + c, dout[e]);
  }
}

template <class T> __global__ void rmsnorm_forward_k(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) {
  SIXFOLD_FOR_EACH(r, rows) {
    const T* xr = x + r * cols;
    double sum_sq = 0;
    for (int c = 0; c < cols; ++c) sum_sq += double(xr[c]) * xr[c];
    const double rs = 1.0 / sqrt(sum_sq / cols + double(eps));
    rstd[r] = T(rs);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = T(double(xr[c]) * rs * w[c]);
  }
}

// dx per row; dw per column (a loop over rows: no atomics, the reference's order).
template <class T> __global__ void rmsnorm_dx_k(const T* dy, const T* x, const T* w, const T* rstd, T* dx, int rows, int cols) {
  SIXFOLD_FOR_EACH(r, rows) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const double rs = rstd[r];
    double dot = 0;
    for (int c = 0; c < cols; ++c) dot += double(dyr[c]) * w[c] * xr[c] * rs;
    const double mean_dot = dot / cols;
    for (int c = 0; c < cols; ++c) dx[r * cols + c] = T(rs * (double(dyr[c]) * w[c] - xr[c] * rs * mean_dot));
  }
}
template <class T> __global__ void rmsnorm_dw_k(const T* dy, const T* x, const T* rstd, T* dw, int rows, int cols) {
  SIXFOLD_FOR_EACH(c, cols) {
    T acc = dw[c];
    for (int r = 0; r < rows; ++r) acc += T(double(dy[long(r) * cols + c]) * (x[long(r) * cols + c] * double(rstd[r])));
    dw[c] = acc;
  }
}

template <class T>
__global__ void layernorm_forward_k(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols, T eps) {
  SIXFOLD_FOR_EACH(r, rows) {
    const T* xr = x + r * cols;
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += xr[c];
    const double mu = sum / cols;
    double var = 0;
    for (int c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    const double rs = 1.0 / sqrt(var / cols + double(eps));
    mean[r] = T(mu);
    rstd[r] = T(rs);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = T((xr[c] - mu) * rs * w[c] + b[c]);
  }
}
template <class T>
__global__ void layernorm_dx_k(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, int rows, int cols) {
  SIXFOLD_FOR_EACH(r, rows) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const double mu = mean[r], rs = rstd[r];
    double sum_g = 0, sum_gx = 0;
    for (int c = 0; c < cols; ++c) {
      const double g = double(dyr[c]) * w[c];
      sum_g += g;
      sum_gx += g * (xr[c] - mu) * rs;
    }
    const double mean_g = sum_g / cols, mean_gx = sum_gx / cols;
    for (int c = 0; c < cols; ++c) dx[r * cols + c] = T(rs * (double(dyr[c]) * w[c] - mean_g - (xr[c] - mu) * rs * mean_gx));
  }
}
template <class T>
__global__ void layernorm_dwdb_k(const T* dy, const T* x, const T* mean, const T* rstd, T* dw, T* db, int rows, int cols) {
  SIXFOLD_FOR_EACH(c, cols) {
    T aw = dw[c], ab = db[c];
    for (int r = 0; r < rows; ++r) {
      const long i = long(r) * cols + c;
      aw += T(double(dy[i]) * ((x[i] - double(mean[r])) * double(rstd[r])));
      ab += dy[i];
    }
    dw[c] = aw;
    db[c] = ab;
  }
}

template <class T>
__global__ void rope_k(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim, double theta, double sign) {
  const int half = rotary_dim / 2;
  SIXFOLD_FOR_EACH(e, long(tokens) * heads * head_dim) {
    const long th = e / head_dim;
    const int i = int(e % head_dim), t = int(th / heads);
    const long base = th * head_dim;
    if (i >= 2 * half) {
      y[e] = x[e];
    } else {
      const int p = i < half ? i : i - half;
      const double angle = double(positions[t]) * pow(theta, -2.0 * p / rotary_dim);
      const double c = cos(angle), s = sign * sin(angle);
      const double x1 = x[base + p], x2 = x[base + p + half];
      y[e] = T(i < half ? x1 * c - x2 * s : x2 * c + x1 * s);
    }
  }
}

__device__ double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
constexpr double kGeluC = 0.7978845608028654, kGeluA = 0.044715;  // as kernels/activation_ref.hpp

template <class T> __global__ void swiglu_forward_k(const T* gate, const T* up, T* out, long n) {
  SIXFOLD_FOR_EACH(i, n) {
    const double g = gate[i];
    out[i] = T(g * sigmoid(g) * up[i]);
  }
}
template <class T> __global__ void swiglu_backward_k(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) {
  SIXFOLD_FOR_EACH(i, n) {
    const double g = gate[i], s = sigmoid(g);
    dgate[i] = T(double(dout[i]) * up[i] * (s + g * s * (1.0 - s)));
    dup[i] = T(double(dout[i]) * g * s);
  }
}
template <class T> __global__ void gelu_forward_k(const T* x, T* y, long n) {
  SIXFOLD_FOR_EACH(i, n) {
    const double v = x[i];
    y[i] = T(0.5 * v * (1.0 + tanh(kGeluC * (v + kGeluA * v * v * v))));
  }
}
template <class T> __global__ void gelu_backward_k(const T* dy, const T* x, T* dx, long n) {
  SIXFOLD_FOR_EACH(i, n) {
    const double v = x[i];
    const double t = tanh(kGeluC * (v + kGeluA * v * v * v));
    const double dinner = kGeluC * (1.0 + 3.0 * kGeluA * v * v);
    dx[i] = T(double(dy[i]) * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * dinner));
  }
}

// One thread per (query, head): the reference's online softmax, accumulating into out.
template <class T>
__global__ void attention_forward_k(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos,
                                    int tq, int tk, int heads, int kv_heads, int d, T scale) {
  const int group = heads / kv_heads;
  SIXFOLD_FOR_EACH(e, long(tq) * heads) {
    const int i = int(e / heads), h = int(e % heads), kvh = h / group;
    const T* qi = q + (long(i) * heads + h) * d;
    T* oi = out + (long(i) * heads + h) * d;
    for (int c = 0; c < d; ++c) oi[c] = T(0);
    double running_max = -INFINITY, running_sum = 0;
    for (int j = 0; j < tk; ++j) {
      if (k_pos[j] > q_pos[i]) continue;
      const T* kj = k + (long(j) * kv_heads + kvh) * d;
      const T* vj = v + (long(j) * kv_heads + kvh) * d;
      double s = 0;
      for (int c = 0; c < d; ++c) s += double(qi[c]) * kj[c];
      s *= double(scale);
      if (s > running_max) {
        const double rescale = exp(running_max - s);
        running_sum *= rescale;
        for (int c = 0; c < d; ++c) oi[c] = T(oi[c] * rescale);
        running_max = s;
      }
      const double p = exp(s - running_max);
      running_sum += p;
      for (int c = 0; c < d; ++c) oi[c] = T(oi[c] + p * vj[c]);
    }
    if (running_sum > 0) {
      for (int c = 0; c < d; ++c) oi[c] = T(oi[c] / running_sum);
      lse[long(h) * tq + i] = T(running_max + log(running_sum));
    } else {
      lse[long(h) * tq + i] = T(-INFINITY);
    }
  }
}

template <class T>
__global__ void attention_rowdot_k(const T* dout, const T* out, double* D, int tq, int heads, int d) {
  SIXFOLD_FOR_EACH(e, long(tq) * heads) {
    const int i = int(e / heads), h = int(e % heads);
    const long off = (long(i) * heads + h) * d;
    double s = 0;
    for (int c = 0; c < d; ++c) s += double(dout[off + c]) * out[off + c];
    D[long(h) * tq + i] = s;
  }
}

// dq per (query, head); written, not accumulated.
template <class T>
__global__ void attention_dq_k(const T* dout, const T* q, const T* k, const T* v, const T* lse, const double* D, T* dq,
                               const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, T scale) {
  const int group = heads / kv_heads;
  SIXFOLD_FOR_EACH(e, long(tq) * heads) {
    const int i = int(e / heads), h = int(e % heads), kvh = h / group;
    const long qoff = (long(i) * heads + h) * d;
    for (int c = 0; c < d; ++c) dq[qoff + c] = T(0);
    const double l = lse[long(h) * tq + i];
    if (isinf(l)) continue;
    const double Di = D[long(h) * tq + i];
    for (int j = 0; j < tk; ++j) {
      if (k_pos[j] > q_pos[i]) continue;
      const long koff = (long(j) * kv_heads + kvh) * d;
      double s = 0, dp = 0;
      for (int c = 0; c < d; ++c) {
        s += double(q[qoff + c]) * k[koff + c];
        dp += double(dout[qoff + c]) * v[koff + c];
      }
      const double ds = exp(s * double(scale) - l) * (dp - Di) * double(scale);
      for (int c = 0; c < d; ++c) dq[qoff + c] = T(dq[qoff + c] + ds * k[koff + c]);
    }
  }
}

// dk, dv per (key, kv head): a loop over the query heads of its group and the queries that see it.
template <class T>
__global__ void attention_dkdv_k(const T* dout, const T* q, const T* k, const T* v, const T* lse, const double* D, T* dk,
                                 T* dv, const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads, int d,
                                 T scale) {
  const int group = heads / kv_heads;
  SIXFOLD_FOR_EACH(e, long(tk) * kv_heads) {
    const int j = int(e / kv_heads), kvh = int(e % kv_heads);
    const long koff = (long(j) * kv_heads + kvh) * d;
    for (int h = kvh * group; h < (kvh + 1) * group; ++h)
      for (int i = 0; i < tq; ++i) {
        if (k_pos[j] > q_pos[i]) continue;
        const double l = lse[long(h) * tq + i];
        if (isinf(l)) continue;
        const long qoff = (long(i) * heads + h) * d;
        double s = 0, dp = 0;
        for (int c = 0; c < d; ++c) {
          s += double(q[qoff + c]) * k[koff + c];
          dp += double(dout[qoff + c]) * v[koff + c];
        }
        const double p = exp(s * double(scale) - l);
        const double ds = p * (dp - D[long(h) * tq + i]) * double(scale);
        for (int c = 0; c < d; ++c) {
          dk[koff + c] = T(dk[koff + c] + ds * q[qoff + c]);
          dv[koff + c] = T(dv[koff + c] + p * dout[qoff + c]);
        }
      }
  }
}

template <class T>
__global__ void merge_attention_partial_k(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) {
  SIXFOLD_FOR_EACH(e, long(tq) * heads) {
    const int i = int(e / heads), h = int(e % heads);
    const double la = lse[long(h) * tq + i], lb = lse_b[long(h) * tq + i];
    if (isinf(lb)) continue;
    T* oi = out + (long(i) * heads + h) * d;
    const T* bi = out_b + (long(i) * heads + h) * d;
    if (isinf(la)) {
      for (int c = 0; c < d; ++c) oi[c] = bi[c];
      lse[long(h) * tq + i] = T(lb);
      continue;
    }
    const double m = la > lb ? la : lb;
    const double merged = m + log(exp(la - m) + exp(lb - m));
    const double wa = exp(la - merged), wb = exp(lb - merged);
    for (int c = 0; c < d; ++c) oi[c] = T(oi[c] * wa + bi[c] * wb);
    lse[long(h) * tq + i] = T(merged);
  }
}

template <class T> __global__ void logits_rowmax_k(const T* logits, T* rowmax, int rows, int vocab) {
  SIXFOLD_FOR_EACH(r, rows) {
    T m = T(-INFINITY);
    for (int v = 0; v < vocab; ++v) m = logits[r * vocab + v] > m ? logits[r * vocab + v] : m;
    rowmax[r] = m;
  }
}
template <class T> __global__ void logits_sumexp_k(const T* logits, const T* gmax, T* sumexp, int rows, int vocab) {
  SIXFOLD_FOR_EACH(r, rows) {
    double s = 0;
    for (int v = 0; v < vocab; ++v) s += exp(double(logits[r * vocab + v]) - gmax[r]);
    sumexp[r] = T(s);
  }
}
template <class T>
__global__ void target_logit_k(const T* logits, const int* targets, int start, T* target, int rows, int vocab) {
  SIXFOLD_FOR_EACH(r, rows) {
    const int local = targets[r] - start;
    target[r] = (targets[r] >= 0 && local >= 0 && local < vocab) ? logits[r * vocab + local] : T(0);
  }
}
template <class T>
__global__ void softmax_k(const T* logits, const T* gmax, const T* gsum, T* out, int rows, int vocab) {
  SIXFOLD_FOR_EACH(e, long(rows) * vocab) {
    const long r = e / vocab;
    out[e] = T(exp(double(logits[e]) - gmax[r]) * (1.0 / double(gsum[r])));
  }
}
template <class T>
__global__ void softmax_xent_backward_k(const T* sm, const int* targets, int start, T dloss, T* dlogits, int rows, int vocab) {
  SIXFOLD_FOR_EACH(e, long(rows) * vocab) {
    const long r = e / vocab, v = e % vocab;
    T g = sm[e] * dloss;
    if (targets[r] - start == v) g -= dloss;
    dlogits[e] = g;
  }
}

template <class T>
__global__ void topk_router_k(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight) {
  SIXFOLD_FOR_EACH(t, tokens) {
    const T* row = logits + t * experts;
    int* idx = expert_index + t * k;
    for (int c = 0; c < k; ++c) {
      int best = -1;
      for (int e = 0; e < experts; ++e) {
        bool taken = false;
        for (int p = 0; p < c; ++p) taken = taken || idx[p] == e;
        if (!taken && (best < 0 || row[e] > row[best])) best = e;
      }
      idx[c] = best;
    }
    const double max_logit = row[idx[0]];
    double sum = 0;
    for (int c = 0; c < k; ++c) sum += exp(double(row[idx[c]]) - max_logit);
    for (int c = 0; c < k; ++c) gate_weight[t * k + c] = T(exp(double(row[idx[c]]) - max_logit) / sum);
  }
}
template <class T>
__global__ void topk_router_backward_k(const T* dgate, const int* expert_index, const T* gate, T* dlogits, int tokens, int experts, int k) {
  SIXFOLD_FOR_EACH(t, tokens) {
    T* drow = dlogits + t * experts;
    for (int e = 0; e < experts; ++e) drow[e] = T(0);
    double dot = 0;
    for (int c = 0; c < k; ++c) dot += double(gate[t * k + c]) * dgate[t * k + c];
    for (int c = 0; c < k; ++c) drow[expert_index[t * k + c]] = T(double(gate[t * k + c]) * (double(dgate[t * k + c]) - dot));
  }
}

template <class T>
__global__ void adamw_k(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
                        double wd, double bias1, double bias2) {
  SIXFOLD_FOR_EACH(i, n) {
    const double g = grad[i];
    const double mi = beta1 * m[i] + (1.0 - beta1) * g;
    const double vi = beta2 * v[i] + (1.0 - beta2) * g * g;
    m[i] = T(mi);
    v[i] = T(vi);
    double p = double(param[i]) * (1.0 - lr * wd);
    p -= lr * (mi / bias1) / (sqrt(vi / bias2) + eps);
    param[i] = T(p);
  }
}

#undef SIXFOLD_FOR_EACH

}  // namespace

#define SIXFOLD_LAUNCH(kernel, n, s, ...)                                               \
  do {                                                                                   \
    kernel<<<blocks_for(n), kThreads, 0, as_cuda(s)>>>(__VA_ARGS__);                     \
    CHECK_LAUNCH();                                                                      \
  } while (0)

template <class T> void add(T* y, const T* x, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(add_k<T>, n, s, y, x, n);
}
template <class T> void scale_rows(T* x, const T* sc, long rows, long width, Stream s) {
  if (rows * width > 0) SIXFOLD_LAUNCH(scale_rows_k<T>, rows * width, s, x, sc, rows, width);
}
template <class T> void row_dot(const T* a, const T* b, T* out, long rows, long width, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(row_dot_k<T>, rows, s, a, b, out, rows, width);
}
template <class T> void sum_squares(const T* x, long n, double* result, Stream s) {
  CHECK_CUDA(cudaMemsetAsync(result, 0, sizeof(double), as_cuda(s)));
  if (n > 0) SIXFOLD_LAUNCH(sum_squares_k<T>, n, s, x, n, result);
}
template <class T> void copy_rows(const T* src, const int* si, T* dst, const int* di, long n, long width, Stream s) {
  if (n * width > 0) SIXFOLD_LAUNCH(copy_rows_k<T>, n * width, s, src, si, dst, di, n, width);
}
template <class T> void sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out, Stream s) {
  if (tokens * width > 0) SIXFOLD_LAUNCH(sum_rows_k<T>, tokens * width, s, src, index, tokens, k, width, out);
}
template <class T>
void embedding_forward(const T* table, const int* tokens, long rows, long start, long local_n, long width, T* out, Stream s) {
  if (rows * width > 0) SIXFOLD_LAUNCH(embedding_forward_k<T>, rows * width, s, table, tokens, rows, start, local_n, width, out);
}
template <class T>
void embedding_backward(const T* dout, const int* tokens, long rows, long start, long local_n, long width, T* grad, Stream s) {
  if (rows * width > 0) SIXFOLD_LAUNCH(embedding_backward_k<T>, rows * width, s, dout, tokens, rows, start, local_n, width, grad);
}
template <class T> void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(rmsnorm_forward_k<T>, rows, s, x, w, y, rstd, rows, cols, eps);
}
template <class T>
void rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw, int rows, int cols, Stream s) {
  if (rows <= 0) return;
  SIXFOLD_LAUNCH(rmsnorm_dx_k<T>, rows, s, dy, x, w, rstd, dx, rows, cols);
  SIXFOLD_LAUNCH(rmsnorm_dw_k<T>, cols, s, dy, x, rstd, dw, rows, cols);
}
template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols, T eps, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(layernorm_forward_k<T>, rows, s, x, w, b, y, mean, rstd, rows, cols, eps);
}
template <class T>
void layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw, T* db, int rows,
                        int cols, Stream s) {
  if (rows <= 0) return;
  SIXFOLD_LAUNCH(layernorm_dx_k<T>, rows, s, dy, x, w, mean, rstd, dx, rows, cols);
  SIXFOLD_LAUNCH(layernorm_dwdb_k<T>, cols, s, dy, x, mean, rstd, dw, db, rows, cols);
}
template <class T>
void rope(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim, double theta,
          double sign, Stream s) {
  const long n = long(tokens) * heads * head_dim;
  if (n > 0) SIXFOLD_LAUNCH(rope_k<T>, n, s, x, y, positions, tokens, heads, head_dim, rotary_dim, theta, sign);
}
template <class T> void swiglu_forward(const T* gate, const T* up, T* out, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(swiglu_forward_k<T>, n, s, gate, up, out, n);
}
template <class T> void swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(swiglu_backward_k<T>, n, s, dout, gate, up, dgate, dup, n);
}
template <class T> void gelu_forward(const T* x, T* y, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(gelu_forward_k<T>, n, s, x, y, n);
}
template <class T> void gelu_backward(const T* dy, const T* x, T* dx, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(gelu_backward_k<T>, n, s, dy, x, dx, n);
}
template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos, int tq,
                       int tk, int heads, int kv_heads, int d, T scale, Stream s) {
  const long n = long(tq) * heads;
  if (n > 0) SIXFOLD_LAUNCH(attention_forward_k<T>, n, s, q, k, v, out, lse, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale);
}
template <class T>
void attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq, T* dk,
                        T* dv, const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads, int d,
                        T scale, double* workspace, Stream s) {
  const long nq = long(tq) * heads, nk = long(tk) * kv_heads;
  if (nq <= 0) return;
  SIXFOLD_LAUNCH(attention_rowdot_k<T>, nq, s, dout, out, workspace, tq, heads, d);
  SIXFOLD_LAUNCH(attention_dq_k<T>, nq, s, dout, q, k, v, lse, workspace, dq, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale);
  if (nk > 0)
    SIXFOLD_LAUNCH(attention_dkdv_k<T>, nk, s, dout, q, k, v, lse, workspace, dk, dv, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale);
}
template <class T>
void merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d, Stream s) {
  const long n = long(tq) * heads;
  if (n > 0) SIXFOLD_LAUNCH(merge_attention_partial_k<T>, n, s, out, lse, out_b, lse_b, tq, heads, d);
}
template <class T> void logits_rowmax(const T* logits, T* rowmax, int rows, int vocab, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(logits_rowmax_k<T>, rows, s, logits, rowmax, rows, vocab);
}
template <class T> void logits_sumexp(const T* logits, const T* gmax, T* sumexp, int rows, int vocab, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(logits_sumexp_k<T>, rows, s, logits, gmax, sumexp, rows, vocab);
}
template <class T> void target_logit(const T* logits, const int* targets, int start, T* target, int rows, int vocab, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(target_logit_k<T>, rows, s, logits, targets, start, target, rows, vocab);
}
template <class T> void softmax(const T* logits, const T* gmax, const T* gsum, T* out, int rows, int vocab, Stream s) {
  if (long(rows) * vocab > 0) SIXFOLD_LAUNCH(softmax_k<T>, long(rows) * vocab, s, logits, gmax, gsum, out, rows, vocab);
}
template <class T>
void softmax_cross_entropy_backward(const T* sm, const int* targets, int start, T dloss, T* dlogits, int rows, int vocab, Stream s) {
  if (long(rows) * vocab > 0)
    SIXFOLD_LAUNCH(softmax_xent_backward_k<T>, long(rows) * vocab, s, sm, targets, start, dloss, dlogits, rows, vocab);
}
template <class T> void topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate, Stream s) {
  if (k > 32) throw UsageError("topk_router: k=" + std::to_string(k) + " (allowed: k <= 32)");
  if (tokens > 0) SIXFOLD_LAUNCH(topk_router_k<T>, tokens, s, logits, tokens, experts, k, expert_index, gate);
}
template <class T>
void topk_router_backward(const T* dgate, const int* expert_index, const T* gate, T* dlogits, int tokens, int experts, int k, Stream s) {
  if (tokens > 0) SIXFOLD_LAUNCH(topk_router_backward_k<T>, tokens, s, dgate, expert_index, gate, dlogits, tokens, experts, k);
}
template <class T>
void adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps, double wd,
           long step, Stream s) {
  const double bias1 = 1.0 - std::pow(beta1, double(step)), bias2 = 1.0 - std::pow(beta2, double(step));
  if (n > 0) SIXFOLD_LAUNCH(adamw_k<T>, n, s, param, grad, m, v, n, lr, beta1, beta2, eps, wd, bias1, bias2);
}

#undef SIXFOLD_LAUNCH

#define SIXFOLD_INSTANTIATE(T)                                                                                        \
  template void add<T>(T*, const T*, long, Stream);                                                                   \
  template void scale_rows<T>(T*, const T*, long, long, Stream);                                                      \
  template void row_dot<T>(const T*, const T*, T*, long, long, Stream);                                               \
  template void sum_squares<T>(const T*, long, double*, Stream);                                                      \
  template void copy_rows<T>(const T*, const int*, T*, const int*, long, long, Stream);                               \
  template void sum_rows<T>(const T*, const int*, long, int, long, T*, Stream);                                       \
  template void embedding_forward<T>(const T*, const int*, long, long, long, long, T*, Stream);                       \
  template void embedding_backward<T>(const T*, const int*, long, long, long, long, T*, Stream);                      \
  template void rmsnorm_forward<T>(const T*, const T*, T*, T*, int, int, T, Stream);                                  \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const T*, T*, T*, int, int, Stream);                \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int, int, T, Stream);                  \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int, int, Stream); \
  template void rope<T>(const T*, T*, const int*, int, int, int, int, double, double, Stream);                        \
  template void swiglu_forward<T>(const T*, const T*, T*, long, Stream);                                              \
  template void swiglu_backward<T>(const T*, const T*, const T*, T*, T*, long, Stream);                               \
  template void gelu_forward<T>(const T*, T*, long, Stream);                                                          \
  template void gelu_backward<T>(const T*, const T*, T*, long, Stream);                                               \
  template void attention_forward<T>(const T*, const T*, const T*, T*, T*, const int*, const int*, int, int, int, int, \
                                     int, T, Stream);                                                                 \
  template void attention_backward<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, T*,         \
                                      const int*, const int*, int, int, int, int, int, T, double*, Stream);           \
  template void merge_attention_partial<T>(T*, T*, const T*, const T*, int, int, int, Stream);                        \
  template void logits_rowmax<T>(const T*, T*, int, int, Stream);                                                     \
  template void logits_sumexp<T>(const T*, const T*, T*, int, int, Stream);                                           \
  template void target_logit<T>(const T*, const int*, int, T*, int, int, Stream);                                     \
  template void softmax<T>(const T*, const T*, const T*, T*, int, int, Stream);                                       \
  template void softmax_cross_entropy_backward<T>(const T*, const int*, int, T, T*, int, int, Stream);                \
  template void topk_router<T>(const T*, int, int, int, int*, T*, Stream);                                            \
  template void topk_router_backward<T>(const T*, const int*, const T*, T*, int, int, int, Stream);                   \
  template void adamw<T>(T*, const T*, T*, T*, long, double, double, double, double, double, long, Stream);

SIXFOLD_INSTANTIATE(float)
SIXFOLD_INSTANTIATE(double)

#undef SIXFOLD_INSTANTIATE

}  // namespace sixfold::cuda::generic
