#include "executor/backend/cpu/cpu_ops.hpp"

#include "kernels/activation_ref.hpp"
#include "kernels/adamw_ref.hpp"
#include "kernels/attention_ref.hpp"
#include "kernels/cross_entropy_ref.hpp"
#include "kernels/moe_ref.hpp"
#include "kernels/norm_ref.hpp"
#include "kernels/rope_ref.hpp"
#include "kernels/rows_ref.hpp"

namespace sixfold {

template <class T>
void CpuOps<T>::add(T* y, const T* x, long n) {
  OpenWindow open(window_);
  for (long i = 0; i < n; ++i) y[i] += x[i];
}

template <class T>
void CpuOps<T>::scale_rows(T* x, const T* row_scale, long rows, long width) {
  OpenWindow open(window_);
  for (long r = 0; r < rows; ++r)
    for (long i = 0; i < width; ++i) x[r * width + i] *= row_scale[r];
}

template <class T>
void CpuOps<T>::row_dot(const T* a, const T* b, T* out, long rows, long width) {
  OpenWindow open(window_);
  row_dot_ref(a, b, out, rows, width);
}

template <class T>
double CpuOps<T>::sum_squares(const T* x, long n) {
  OpenWindow open(window_);
  double s = 0;
  for (long i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}

template <class T>
void CpuOps<T>::copy_rows(const T* src, const int* src_index, T* dst, const int* dst_index, long n, long width) {
  OpenWindow open(window_);
  copy_rows_ref(src, src_index, dst, dst_index, n, width);
}

template <class T>
void CpuOps<T>::sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out) {
  OpenWindow open(window_);
  sum_rows_ref(src, index, tokens, k, width, out);
}

template <class T>
void CpuOps<T>::embedding_forward(const T* table, const int* tokens, long rows, long vocab_start, long vocab_local,
                                  long width, T* out) {
  OpenWindow open(window_);
  embedding_forward_ref(table, tokens, rows, vocab_start, vocab_local, width, out);
}

template <class T>
void CpuOps<T>::embedding_backward(const T* dout, const int* tokens, long rows, long vocab_start, long vocab_local,
                                   long width, T* grad_accum) {
  OpenWindow open(window_);
  embedding_backward_ref(dout, tokens, rows, vocab_start, vocab_local, width, grad_accum);
}

template <class T>
void CpuOps<T>::rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) {
  OpenWindow open(window_);
  rmsnorm_forward_ref(x, w, y, rstd, rows, cols, eps);
}

template <class T>
void CpuOps<T>::rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw_accum, int rows,
                                 int cols) {
  OpenWindow open(window_);
  rmsnorm_backward_ref(dy, x, w, rstd, dx, dw_accum, rows, cols);
}

template <class T>
void CpuOps<T>::layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols,
                                  T eps) {
  OpenWindow open(window_);
  layernorm_forward_ref(x, w, b, y, mean, rstd, rows, cols, eps);
}

template <class T>
void CpuOps<T>::layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx,
                                   T* dw_accum, T* db_accum, int rows, int cols) {
  OpenWindow open(window_);
  layernorm_backward_ref(dy, x, w, mean, rstd, dx, dw_accum, db_accum, rows, cols);
}

template <class T>
void CpuOps<T>::rope_forward(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim,
                             int rotary_dim, double theta) {
  OpenWindow open(window_);
  rope_forward_ref(x, y, positions, tokens, heads, head_dim, rotary_dim, theta);
}

template <class T>
void CpuOps<T>::rope_backward(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim,
                              int rotary_dim, double theta) {
  OpenWindow open(window_);
  rope_backward_ref(dy, dx, positions, tokens, heads, head_dim, rotary_dim, theta);
}

template <class T>
void CpuOps<T>::swiglu_forward(const T* gate, const T* up, T* out, long n) {
  OpenWindow open(window_);
  swiglu_forward_ref(gate, up, out, n);
}

template <class T>
void CpuOps<T>::swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) {
  OpenWindow open(window_);
  swiglu_backward_ref(dout, gate, up, dgate, dup, n);
}

template <class T>
void CpuOps<T>::gelu_forward(const T* x, T* y, long n) {
  OpenWindow open(window_);
  gelu_forward_ref(x, y, n);
}

template <class T>
void CpuOps<T>::gelu_backward(const T* dy, const T* x, T* dx, long n) {
  OpenWindow open(window_);
  gelu_backward_ref(dy, x, dx, n);
}

template <class T>
void CpuOps<T>::squared_relu_forward(const T* x, T* y, long n) {
  OpenWindow open(window_);
  squared_relu_forward_ref(x, y, n);
}

template <class T>
void CpuOps<T>::squared_relu_backward(const T* dy, const T* x, T* dx, long n) {
  OpenWindow open(window_);
  squared_relu_backward_ref(dy, x, dx, n);
}

template <class T>
void CpuOps<T>::attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos,
                                  const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, T scale) {
  OpenWindow open(window_);
  attention_forward_ref(q, k, v, out, lse, q_pos, k_pos, tq, tk, heads, kv_heads, d, scale);
}

template <class T>
void CpuOps<T>::attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                                   T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int tk,
                                   int heads, int kv_heads, int d, T scale) {
  OpenWindow open(window_);
  attention_backward_ref(dout, q, k, v, out, lse, dq, dk_accum, dv_accum, q_pos, k_pos, tq, tk, heads, kv_heads, d,
                         scale);
}

template <class T>
void CpuOps<T>::merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) {
  OpenWindow open(window_);
  merge_attention_partial_ref(out, lse, out_b, lse_b, tq, heads, d);
}

template <class T>
void CpuOps<T>::logits_rowmax(const T* logits, T* rowmax, int rows, int vocab_shard) {
  OpenWindow open(window_);
  logits_rowmax_ref(logits, rowmax, rows, vocab_shard);
}

template <class T>
void CpuOps<T>::logits_sumexp(const T* logits, const T* global_max, T* sumexp, int rows, int vocab_shard) {
  OpenWindow open(window_);
  logits_sumexp_ref(logits, global_max, sumexp, rows, vocab_shard);
}

template <class T>
void CpuOps<T>::target_logit(const T* logits, const int* targets, int vocab_start, T* target, int rows,
                             int vocab_shard) {
  OpenWindow open(window_);
  target_logit_ref(logits, targets, vocab_start, target, rows, vocab_shard);
}

template <class T>
void CpuOps<T>::softmax(const T* logits, const T* global_max, const T* global_sumexp, T* out, int rows,
                        int vocab_shard) {
  OpenWindow open(window_);
  softmax_ref(logits, global_max, global_sumexp, out, rows, vocab_shard);
}

template <class T>
void CpuOps<T>::softmax_cross_entropy_backward(const T* softmax, const int* targets, int vocab_start, T dloss,
                                               T* dlogits, int rows, int vocab_shard) {
  OpenWindow open(window_);
  softmax_cross_entropy_backward_ref(softmax, targets, vocab_start, dloss, dlogits, rows, vocab_shard);
}

template <class T>
void CpuOps<T>::topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight) {
  OpenWindow open(window_);
  topk_router_ref(logits, tokens, experts, k, expert_index, gate_weight);
}

template <class T>
void CpuOps<T>::topk_router_backward(const T* dgate_weight, const int* expert_index, const T* gate_weight, T* dlogits,
                                     int tokens, int experts, int k) {
  OpenWindow open(window_);
  topk_router_backward_ref(dgate_weight, expert_index, gate_weight, dlogits, tokens, experts, k);
}

template <class T>
void CpuOps<T>::adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
                      double weight_decay, long step) {
  OpenWindow open(window_);
  adamw_ref(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step);
}

template class CpuOps<float>;
template class CpuOps<double>;

}  // namespace sixfold
