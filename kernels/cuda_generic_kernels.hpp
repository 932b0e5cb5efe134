#pragma once
// Host-callable launchers of the precision-generic CUDA kernels (fp32 and fp64): the executor's
// CUDA backend runs the model runtime's float/double step on them with every tensor in GPU memory
// (executor/backend/cuda/cuda_ops.cpp). Each runs, one thread per output row or element, the
// per-row or per-element function of the CPU reference (kernels/*_ref.hpp): correct before fast. The bf16 kernels of
// cuda_kernels.hpp are the fast path of a bf16 runtime. Every pointer, index arrays included, is device memory;
// launches are asynchronous on `stream`. Needs no CUDA header (defined in generic_kernels.cu, CUDA builds only).
#include "kernels/cuda_kernels.hpp"

namespace sixfold::cuda::generic {

template <class T>
void add(T* y, const T* x, long n, Stream s);
template <class T>
void scale_rows(T* x, const T* row_scale, long rows, long width, Stream s);
template <class T>
void row_dot(const T* a, const T* b, T* out, long rows, long width, Stream s);
// *result (device, one double) = sum of x^2.
template <class T>
void sum_squares(const T* x, long n, double* result, Stream s);
template <class T>
void copy_rows(const T* src, const int* src_index, T* dst, const int* dst_index, long n, long width, Stream s);
template <class T>
void sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out, Stream s);
template <class T>
void embedding_forward(const T* table, const int* tokens, long rows, long vocab_start, long vocab_local, long width,
                       T* out, Stream s);
// Atomic adds: rows with the same token sum in an unspecified order.
template <class T>
void embedding_backward(const T* dout, const int* tokens, long rows, long vocab_start, long vocab_local, long width,
                        T* grad, Stream s);
template <class T>
void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps, Stream s);
template <class T>
void rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw_accum, int rows, int cols,
                      Stream s);
template <class T>
void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols, T eps, Stream s);
template <class T>
void layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw_accum,
                        T* db_accum, int rows, int cols, Stream s);
// sign +1 forward, -1 backward (the transpose rotation).
template <class T>
void rope(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim, double theta,
          double sign, Stream s);
template <class T>
void swiglu_forward(const T* gate, const T* up, T* out, long n, Stream s);
template <class T>
void swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n, Stream s);
template <class T>
void gelu_forward(const T* x, T* y, long n, Stream s);
template <class T>
void gelu_backward(const T* dy, const T* x, T* dx, long n, Stream s);
template <class T>
void squared_relu_forward(const T* x, T* y, long n, Stream s);
template <class T>
void squared_relu_backward(const T* dy, const T* x, T* dx, long n, Stream s);
template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos, int tq,
                       int tk, int heads, int kv_heads, int d, T scale, Stream s);
template <class T>
void attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                        T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int tk, int heads,
                        int kv_heads, int d, T scale, Stream s);
template <class T>
void merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d, Stream s);
template <class T>
void logits_rowmax(const T* logits, T* rowmax, int rows, int vocab, Stream s);
template <class T>
void logits_sumexp(const T* logits, const T* global_max, T* sumexp, int rows, int vocab, Stream s);
template <class T>
void target_logit(const T* logits, const int* targets, int vocab_start, T* target, int rows, int vocab, Stream s);
template <class T>
void softmax(const T* logits, const T* global_max, const T* global_sumexp, T* out, int rows, int vocab, Stream s);
template <class T>
void softmax_cross_entropy_backward(const T* softmax, const int* targets, int vocab_start, T dloss, T* dlogits,
                                    int rows, int vocab, Stream s);
// k <= 32.
template <class T>
void topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight, Stream s);
template <class T>
void topk_router_backward(const T* dgate, const int* expert_index, const T* gate_weight, T* dlogits, int tokens,
                          int experts, int k, Stream s);
template <class T>
void adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
           double weight_decay, long step, Stream s);

}  // namespace sixfold::cuda::generic
