// Precision-generic kernels (cuda_generic_kernels.hpp): one thread per output row or element,
// each running the reference's own per-row or per-element function (kernels/*_ref.hpp,
// host_device.hpp), so the device computes what the CPU oracle computes, in the same order.
#include <cuda_runtime.h>

#include "kernels/activation_ref.hpp"
#include "kernels/adamw_ref.hpp"
#include "kernels/attention_ref.hpp"
#include "kernels/cross_entropy_ref.hpp"
#include "kernels/cuda_common.cuh"
#include "kernels/cuda_generic_kernels.hpp"
#include "kernels/moe_ref.hpp"
#include "kernels/norm_ref.hpp"
#include "kernels/rope_ref.hpp"
#include "kernels/rows_ref.hpp"

namespace sixfold::cuda::generic {

namespace {

constexpr int kThreads = 256;

#define SIXFOLD_FOR_EACH(i, n) \
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += long(gridDim.x) * blockDim.x)

template <class T>
__global__ void add_k(T* y, const T* x, long n) {
  SIXFOLD_FOR_EACH(i, n) y[i] += x[i];
}

template <class T>
__global__ void scale_rows_k(T* x, const T* sc, long rows, long width) {
  SIXFOLD_FOR_EACH(i, rows * width) x[i] *= sc[i / width];
}

template <class T>
__global__ void row_dot_k(const T* a, const T* b, T* out, long rows, long width) {
  SIXFOLD_FOR_EACH(r, rows) row_dot_row(a, b, out, width, r);
}

template <class T>
__global__ void sum_squares_k(const T* x, long n, double* result) {
  double s = 0;
  SIXFOLD_FOR_EACH(i, n) s += double(x[i]) * x[i];
  atomicAdd(result, s);
}

template <class T>
__global__ void copy_rows_k(const T* src, const int* si, T* dst, const int* di, long n, long width) {
  SIXFOLD_FOR_EACH(e, n * width) copy_rows_element(src, si, dst, di, width, e);
}

template <class T>
__global__ void sum_rows_k(const T* src, const int* index, long tokens, int k, long width, T* out) {
  SIXFOLD_FOR_EACH(e, tokens * width) sum_rows_element(src, index, k, width, out, e);
}

template <class T>
__global__ void embedding_forward_k(const T* table, const int* tokens, long rows, long start, long local_n, long width,
                                    T* out) {
  SIXFOLD_FOR_EACH(e, rows * width) embedding_forward_element(table, tokens, start, local_n, width, out, e);
}

// Rows with the same token add atomically (the reference adds them in row order).
template <class T>
__global__ void embedding_backward_k(const T* dout, const int* tokens, long rows, long start, long local_n, long width,
                                     T* grad) {
  SIXFOLD_FOR_EACH(e, rows * width) {
    const long r = e / width, c = e % width, local = tokens[r] - start;
    if (local >= 0 && local < local_n) atomicAdd(grad + local * width + c, dout[e]);
  }
}

template <class T>
__global__ void rmsnorm_forward_k(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) {
  SIXFOLD_FOR_EACH(r, rows) rmsnorm_forward_row(x, w, y, rstd, r, cols, eps);
}
template <class T>
__global__ void rmsnorm_dx_k(const T* dy, const T* x, const T* w, const T* rstd, T* dx, int rows, int cols) {
  SIXFOLD_FOR_EACH(r, rows) rmsnorm_backward_row(dy, x, w, rstd, dx, r, cols);
}
template <class T>
__global__ void rmsnorm_dw_k(const T* dy, const T* x, const T* rstd, T* dw, int rows, int cols) {
  SIXFOLD_FOR_EACH(c, cols) rmsnorm_weight_grad_column(dy, x, rstd, dw, rows, cols, int(c));
}
template <class T>
__global__ void layernorm_forward_k(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols,
                                    T eps) {
  SIXFOLD_FOR_EACH(r, rows) layernorm_forward_row(x, w, b, y, mean, rstd, r, cols, eps);
}
template <class T>
__global__ void layernorm_dx_k(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, int rows,
                               int cols) {
  SIXFOLD_FOR_EACH(r, rows) layernorm_backward_row(dy, x, w, mean, rstd, dx, r, cols);
}
template <class T>
__global__ void layernorm_dwdb_k(const T* dy, const T* x, const T* mean, const T* rstd, T* dw, T* db, int rows,
                                 int cols) {
  SIXFOLD_FOR_EACH(c, cols) layernorm_param_grad_column(dy, x, mean, rstd, dw, db, rows, cols, int(c));
}

template <class T>
__global__ void rope_k(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                       double theta, double sign) {
  SIXFOLD_FOR_EACH(th, long(tokens) * heads) rope_row(x, y, positions, heads, head_dim, rotary_dim, theta, sign, th);
}

template <class T>
__global__ void swiglu_forward_k(const T* gate, const T* up, T* out, long n) {
  SIXFOLD_FOR_EACH(i, n) swiglu_forward_element(gate, up, out, i);
}
template <class T>
__global__ void swiglu_backward_k(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) {
  SIXFOLD_FOR_EACH(i, n) swiglu_backward_element(dout, gate, up, dgate, dup, i);
}
template <class T>
__global__ void gelu_forward_k(const T* x, T* y, long n) {
  SIXFOLD_FOR_EACH(i, n) gelu_forward_element(x, y, i);
}
template <class T>
__global__ void gelu_backward_k(const T* dy, const T* x, T* dx, long n) {
  SIXFOLD_FOR_EACH(i, n) gelu_backward_element(dy, x, dx, i);
}
template <class T>
__global__ void squared_relu_forward_k(const T* x, T* y, long n) {
  SIXFOLD_FOR_EACH(i, n) squared_relu_forward_element(x, y, i);
}
template <class T>
__global__ void squared_relu_backward_k(const T* dy, const T* x, T* dx, long n) {
  SIXFOLD_FOR_EACH(i, n) squared_relu_backward_element(dy, x, dx, i);
}

template <class T>
__global__ void attention_forward_k(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos,
                                    const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, T scale) {
  SIXFOLD_FOR_EACH(e, long(tq) * heads)
  attention_forward_query(q, k, v, out, lse, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale, int(e % heads),
                          int(e / heads));
}
template <class T>
__global__ void attention_dq_k(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                               const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads, int d,
                               T scale) {
  SIXFOLD_FOR_EACH(e, long(tq) * heads)
  attention_backward_query(dout, q, k, v, out, lse, dq, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale, int(e % heads),
                           int(e / heads));
}
template <class T>
__global__ void attention_dkdv_k(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dk,
                                 T* dv, const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads,
                                 int d, T scale) {
  SIXFOLD_FOR_EACH(e, long(tk) * kv_heads)
  attention_backward_key(dout, q, k, v, out, lse, dk, dv, q_pos, k_pos, tq, heads, kv_heads, d, scale,
                         int(e % kv_heads), int(e / kv_heads));
}
template <class T>
__global__ void merge_attention_partial_k(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) {
  SIXFOLD_FOR_EACH(e, long(tq) * heads)
  merge_attention_partial_query(out, lse, out_b, lse_b, tq, heads, d, int(e % heads), int(e / heads));
}

template <class T>
__global__ void logits_rowmax_k(const T* logits, T* rowmax, int rows, int vocab) {
  SIXFOLD_FOR_EACH(r, rows) logits_rowmax_row(logits, rowmax, r, vocab);
}
template <class T>
__global__ void logits_sumexp_k(const T* logits, const T* gmax, T* sumexp, int rows, int vocab) {
  SIXFOLD_FOR_EACH(r, rows) logits_sumexp_row(logits, gmax, sumexp, r, vocab);
}
template <class T>
__global__ void target_logit_k(const T* logits, const int* targets, int start, T* target, int rows, int vocab) {
  SIXFOLD_FOR_EACH(r, rows) target_logit_row(logits, targets, start, target, r, vocab);
}
template <class T>
__global__ void softmax_k(const T* logits, const T* gmax, const T* gsum, T* out, int rows, int vocab) {
  SIXFOLD_FOR_EACH(e, long(rows) * vocab) softmax_element(logits, gmax, gsum, out, vocab, e);
}
template <class T>
__global__ void softmax_xent_backward_k(const T* sm, const int* targets, int start, T dloss, T* dlogits, int rows,
                                        int vocab) {
  SIXFOLD_FOR_EACH(e, long(rows) * vocab)
  softmax_cross_entropy_backward_element(sm, targets, start, dloss, dlogits, vocab, e);
}

template <class T>
__global__ void topk_router_k(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight) {
  SIXFOLD_FOR_EACH(t, tokens) topk_router_token(logits, experts, k, expert_index, gate_weight, t);
}
template <class T>
__global__ void topk_router_backward_k(const T* dgate, const int* expert_index, const T* gate, T* dlogits, int tokens,
                                       int experts, int k) {
  SIXFOLD_FOR_EACH(t, tokens) topk_router_backward_token(dgate, expert_index, gate, dlogits, experts, k, t);
}

template <class T>
__global__ void adamw_k(T* param, const T* grad, T* m, T* v, long n, AdamwStep a) {
  SIXFOLD_FOR_EACH(i, n) adamw_element(param, grad, m, v, a, i);
}

#undef SIXFOLD_FOR_EACH

}  // namespace

#define SIXFOLD_LAUNCH(kernel, n, s, ...)                            \
  do {                                                               \
    kernel<<<elementwise_blocks(n, kThreads), kThreads, 0, as_cuda(s)>>>(__VA_ARGS__); \
    CHECK_LAUNCH();                                                  \
  } while (0)

template <class T>
void add(T* y, const T* x, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(add_k<T>, n, s, y, x, n);
}
template <class T>
void scale_rows(T* x, const T* sc, long rows, long width, Stream s) {
  if (rows * width > 0) SIXFOLD_LAUNCH(scale_rows_k<T>, rows * width, s, x, sc, rows, width);
}
template <class T>
void row_dot(const T* a, const T* b, T* out, long rows, long width, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(row_dot_k<T>, rows, s, a, b, out, rows, width);
}
template <class T>
void sum_squares(const T* x, long n, double* result, Stream s) {
  CHECK_CUDA(cudaMemsetAsync(result, 0, sizeof(double), as_cuda(s)));
  if (n > 0) SIXFOLD_LAUNCH(sum_squares_k<T>, n, s, x, n, result);
}
template <class T>
void copy_rows(const T* src, const int* si, T* dst, const int* di, long n, long width, Stream s) {
  if (n * width > 0) SIXFOLD_LAUNCH(copy_rows_k<T>, n * width, s, src, si, dst, di, n, width);
}
template <class T>
void sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out, Stream s) {
  if (tokens * width > 0) SIXFOLD_LAUNCH(sum_rows_k<T>, tokens * width, s, src, index, tokens, k, width, out);
}
template <class T>
void embedding_forward(const T* table, const int* tokens, long rows, long start, long local_n, long width, T* out,
                       Stream s) {
  if (rows * width > 0)
    SIXFOLD_LAUNCH(embedding_forward_k<T>, rows * width, s, table, tokens, rows, start, local_n, width, out);
}
template <class T>
void embedding_backward(const T* dout, const int* tokens, long rows, long start, long local_n, long width, T* grad,
                        Stream s) {
  if (rows * width > 0)
    SIXFOLD_LAUNCH(embedding_backward_k<T>, rows * width, s, dout, tokens, rows, start, local_n, width, grad);
}
template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(rmsnorm_forward_k<T>, rows, s, x, w, y, rstd, rows, cols, eps);
}
template <class T>
void rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw, int rows, int cols, Stream s) {
  if (rows <= 0) return;
  SIXFOLD_LAUNCH(rmsnorm_dx_k<T>, rows, s, dy, x, w, rstd, dx, rows, cols);
  SIXFOLD_LAUNCH(rmsnorm_dw_k<T>, cols, s, dy, x, rstd, dw, rows, cols);
}
template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols, T eps,
                       Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(layernorm_forward_k<T>, rows, s, x, w, b, y, mean, rstd, rows, cols, eps);
}
template <class T>
void layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw, T* db,
                        int rows, int cols, Stream s) {
  if (rows <= 0) return;
  SIXFOLD_LAUNCH(layernorm_dx_k<T>, rows, s, dy, x, w, mean, rstd, dx, rows, cols);
  SIXFOLD_LAUNCH(layernorm_dwdb_k<T>, cols, s, dy, x, mean, rstd, dw, db, rows, cols);
}
template <class T>
void rope(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim, double theta,
          double sign, Stream s) {
  const long n = long(tokens) * heads;
  if (n > 0) SIXFOLD_LAUNCH(rope_k<T>, n, s, x, y, positions, tokens, heads, head_dim, rotary_dim, theta, sign);
}
template <class T>
void swiglu_forward(const T* gate, const T* up, T* out, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(swiglu_forward_k<T>, n, s, gate, up, out, n);
}
template <class T>
void swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(swiglu_backward_k<T>, n, s, dout, gate, up, dgate, dup, n);
}
template <class T>
void gelu_forward(const T* x, T* y, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(gelu_forward_k<T>, n, s, x, y, n);
}
template <class T>
void gelu_backward(const T* dy, const T* x, T* dx, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(gelu_backward_k<T>, n, s, dy, x, dx, n);
}
template <class T>
void squared_relu_forward(const T* x, T* y, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(squared_relu_forward_k<T>, n, s, x, y, n);
}
template <class T>
void squared_relu_backward(const T* dy, const T* x, T* dx, long n, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(squared_relu_backward_k<T>, n, s, dy, x, dx, n);
}
template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos, int tq,
                       int tk, int heads, int kv_heads, int d, T scale, Stream s) {
  const long n = long(tq) * heads;
  if (n > 0)
    SIXFOLD_LAUNCH(attention_forward_k<T>, n, s, q, k, v, out, lse, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale);
}
template <class T>
void attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq, T* dk,
                        T* dv, const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads, int d,
                        T scale, Stream s) {
  const long nq = long(tq) * heads, nk = long(tk) * kv_heads;
  if (nq > 0)
    SIXFOLD_LAUNCH(attention_dq_k<T>, nq, s, dout, q, k, v, out, lse, dq, q_pos, k_pos, tq, tk, heads, kv_heads, d,
                   scale);
  if (nk > 0)
    SIXFOLD_LAUNCH(attention_dkdv_k<T>, nk, s, dout, q, k, v, out, lse, dk, dv, q_pos, k_pos, tq, tk, heads, kv_heads,
                   d, scale);
}
template <class T>
void merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d, Stream s) {
  const long n = long(tq) * heads;
  if (n > 0) SIXFOLD_LAUNCH(merge_attention_partial_k<T>, n, s, out, lse, out_b, lse_b, tq, heads, d);
}
template <class T>
void logits_rowmax(const T* logits, T* rowmax, int rows, int vocab, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(logits_rowmax_k<T>, rows, s, logits, rowmax, rows, vocab);
}
template <class T>
void logits_sumexp(const T* logits, const T* gmax, T* sumexp, int rows, int vocab, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(logits_sumexp_k<T>, rows, s, logits, gmax, sumexp, rows, vocab);
}
template <class T>
void target_logit(const T* logits, const int* targets, int start, T* target, int rows, int vocab, Stream s) {
  if (rows > 0) SIXFOLD_LAUNCH(target_logit_k<T>, rows, s, logits, targets, start, target, rows, vocab);
}
template <class T>
void softmax(const T* logits, const T* gmax, const T* gsum, T* out, int rows, int vocab, Stream s) {
  if (long(rows) * vocab > 0) SIXFOLD_LAUNCH(softmax_k<T>, long(rows) * vocab, s, logits, gmax, gsum, out, rows, vocab);
}
template <class T>
void softmax_cross_entropy_backward(const T* sm, const int* targets, int start, T dloss, T* dlogits, int rows,
                                    int vocab, Stream s) {
  if (long(rows) * vocab > 0)
    SIXFOLD_LAUNCH(softmax_xent_backward_k<T>, long(rows) * vocab, s, sm, targets, start, dloss, dlogits, rows, vocab);
}
template <class T>
void topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate, Stream s) {
  if (k > 32) throw UsageError("topk_router: k=" + std::to_string(k) + " (allowed: k <= 32)");
  if (tokens > 0) SIXFOLD_LAUNCH(topk_router_k<T>, tokens, s, logits, tokens, experts, k, expert_index, gate);
}
template <class T>
void topk_router_backward(const T* dgate, const int* expert_index, const T* gate, T* dlogits, int tokens, int experts,
                          int k, Stream s) {
  if (tokens > 0)
    SIXFOLD_LAUNCH(topk_router_backward_k<T>, tokens, s, dgate, expert_index, gate, dlogits, tokens, experts, k);
}
template <class T>
void adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps, double wd,
           long step, Stream s) {
  if (n > 0) SIXFOLD_LAUNCH(adamw_k<T>, n, s, param, grad, m, v, n, adamw_step_of(lr, beta1, beta2, eps, wd, step));
}

#undef SIXFOLD_LAUNCH

#define SIXFOLD_INSTANTIATE(T)                                                                                         \
  template void add<T>(T*, const T*, long, Stream);                                                                    \
  template void scale_rows<T>(T*, const T*, long, long, Stream);                                                       \
  template void row_dot<T>(const T*, const T*, T*, long, long, Stream);                                                \
  template void sum_squares<T>(const T*, long, double*, Stream);                                                       \
  template void copy_rows<T>(const T*, const int*, T*, const int*, long, long, Stream);                                \
  template void sum_rows<T>(const T*, const int*, long, int, long, T*, Stream);                                        \
  template void embedding_forward<T>(const T*, const int*, long, long, long, long, T*, Stream);                        \
  template void embedding_backward<T>(const T*, const int*, long, long, long, long, T*, Stream);                       \
  template void rmsnorm_forward<T>(const T*, const T*, T*, T*, int, int, T, Stream);                                   \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const T*, T*, T*, int, int, Stream);                 \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int, int, T, Stream);                   \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int, int, Stream); \
  template void rope<T>(const T*, T*, const int*, int, int, int, int, double, double, Stream);                         \
  template void swiglu_forward<T>(const T*, const T*, T*, long, Stream);                                               \
  template void swiglu_backward<T>(const T*, const T*, const T*, T*, T*, long, Stream);                                \
  template void gelu_forward<T>(const T*, T*, long, Stream);                                                           \
  template void gelu_backward<T>(const T*, const T*, T*, long, Stream);                                                \
  template void squared_relu_forward<T>(const T*, T*, long, Stream);                                                   \
  template void squared_relu_backward<T>(const T*, const T*, T*, long, Stream);                                        \
  template void attention_forward<T>(const T*, const T*, const T*, T*, T*, const int*, const int*, int, int, int, int, \
                                     int, T, Stream);                                                                  \
  template void attention_backward<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, T*,          \
                                      const int*, const int*, int, int, int, int, int, T, Stream);                     \
  template void merge_attention_partial<T>(T*, T*, const T*, const T*, int, int, int, Stream);                         \
  template void logits_rowmax<T>(const T*, T*, int, int, Stream);                                                      \
  template void logits_sumexp<T>(const T*, const T*, T*, int, int, Stream);                                            \
  template void target_logit<T>(const T*, const int*, int, T*, int, int, Stream);                                      \
  template void softmax<T>(const T*, const T*, const T*, T*, int, int, Stream);                                        \
  template void softmax_cross_entropy_backward<T>(const T*, const int*, int, T, T*, int, int, Stream);                 \
  template void topk_router<T>(const T*, int, int, int, int*, T*, Stream);                                             \
  template void topk_router_backward<T>(const T*, const int*, const T*, T*, int, int, int, Stream);                    \
  template void adamw<T>(T*, const T*, T*, T*, long, double, double, double, double, double, long, Stream);

SIXFOLD_INSTANTIATE(float)
SIXFOLD_INSTANTIATE(double)

#undef SIXFOLD_INSTANTIATE

}  // namespace sixfold::cuda::generic
