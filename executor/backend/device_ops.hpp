#pragma once
// The kernels the model runtime hands to a backend, on tensors in the backend's memory
// (device_storage.hpp), in the runtime's precision T (float or double). The CPU backend runs the
// references of kernels/*_ref.hpp (cpu/cpu_ops.cpp); the CUDA backend runs kernels/device_ops.cu
// on the GPU. Shapes and conventions are the references' (row-major, "_accum" outputs added into,
// the others overwritten); index arrays (token ids, positions, expert choices and slots) are host
// memory: they are the step's metadata, which the host needs anyway to size the all-to-alls, and
// the CUDA backend uploads them per call.
namespace sixfold {

template <class T>
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // ---- element-wise and row-wise ----
  virtual void add(T* y, const T* x, long n) = 0;                                   // y += x
  virtual void scale_rows(T* x, const T* row_scale, long rows, long width) = 0;     // x[r, :] *= s[r]
  virtual void row_dot(const T* a, const T* b, T* out, long rows, long width) = 0;  // out[r] = a[r, :] . b[r, :]
  virtual double sum_squares(const T* x, long n) = 0;
  // dst[dst_index[i], :] = src[src_index[i], :] for i < n (rows of `width`).
  virtual void copy_rows(const T* src, const int* src_index, T* dst, const int* dst_index, long n, long width) = 0;
  // out[t, :] = sum over c < k of src[index[t k + c], :] (the MoE combine and its input gradient).
  virtual void sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out) = 0;

  // ---- vocab-parallel embedding: rows whose token is outside [vocab_start, vocab_start + vocab_local) get 0 ----
  virtual void embedding_forward(const T* table, const int* tokens, long rows, long vocab_start, long vocab_local,
                                 long width, T* out) = 0;
  virtual void embedding_backward(const T* dout, const int* tokens, long rows, long vocab_start, long vocab_local,
                                  long width, T* grad_accum) = 0;

  // ---- normalisation (kernels/norm_ref.hpp) ----
  virtual void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) = 0;
  virtual void rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw_accum, int rows,
                                int cols) = 0;
  virtual void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols,
                                 T eps) = 0;
  virtual void layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw_accum,
                                  T* db_accum, int rows, int cols) = 0;

  // ---- rotary embedding (kernels/rope_ref.hpp) ----
  virtual void rope_forward(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                            double theta) = 0;
  virtual void rope_backward(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim,
                             int rotary_dim, double theta) = 0;

  // ---- activations (kernels/activation_ref.hpp) ----
  virtual void swiglu_forward(const T* gate, const T* up, T* out, long n) = 0;
  virtual void swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) = 0;
  virtual void gelu_forward(const T* x, T* y, long n) = 0;
  virtual void gelu_backward(const T* dy, const T* x, T* dx, long n) = 0;
  virtual void squared_relu_forward(const T* x, T* y, long n) = 0;
  virtual void squared_relu_backward(const T* dy, const T* x, T* dx, long n) = 0;

  // ---- attention (kernels/attention_ref.hpp) ----
  virtual void attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos,
                                 int tq, int tk, int heads, int kv_heads, int d, T scale) = 0;
  virtual void attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                                  T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int tk,
                                  int heads, int kv_heads, int d, T scale) = 0;
  virtual void merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) = 0;

  // ---- vocab-parallel cross-entropy (kernels/cross_entropy_ref.hpp) ----
  virtual void logits_rowmax(const T* logits, T* rowmax, int rows, int vocab_shard) = 0;
  virtual void logits_sumexp(const T* logits, const T* global_max, T* sumexp, int rows, int vocab_shard) = 0;
  virtual void target_logit(const T* logits, const int* targets, int vocab_start, T* target_logit, int rows,
                            int vocab_shard) = 0;
  // softmax = exp(logits - max) / sumexp, the probabilities Megatron's cross-entropy saves.
  virtual void softmax(const T* logits, const T* global_max, const T* global_sumexp, T* softmax, int rows,
                       int vocab_shard) = 0;
  // dlogits = dloss (softmax - onehot(target)).
  virtual void softmax_cross_entropy_backward(const T* softmax, const int* targets, int vocab_start, T dloss,
                                              T* dlogits, int rows, int vocab_shard) = 0;

  // ---- mixture of experts (kernels/moe_ref.hpp); expert_index is host memory ----
  virtual void topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight) = 0;
  virtual void topk_router_backward(const T* dgate_weight, const int* expert_index, const T* gate_weight, T* dlogits,
                                    int tokens, int experts, int k) = 0;

  // ---- optimizer (kernels/adamw_ref.hpp) ----
  virtual void adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
                     double weight_decay, long step) = 0;
};

}  // namespace sixfold
