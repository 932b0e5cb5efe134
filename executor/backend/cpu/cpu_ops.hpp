#pragma once
// The CPU backend's kernels: the references of kernels/*_ref.hpp (the oracles of the CUDA
// kernels) and plain loops for the row copies and sums. A backend whose memory is guarded
// (guarded_storage.hpp) passes the window that opens it for the span of each call.
#include "executor/backend/device_ops.hpp"

namespace sixfold {

// Opens guarded memory for one backend call and closes it after; calls nest.
class AccessWindow {
 public:
  virtual ~AccessWindow() = default;
  virtual void open() = 0;
  virtual void close() noexcept = 0;
};

class OpenWindow {
 public:
  explicit OpenWindow(AccessWindow* w) : w_(w) {
    if (w_) w_->open();
  }
  ~OpenWindow() {
    if (w_) w_->close();
  }
  OpenWindow(const OpenWindow&) = delete;
  OpenWindow& operator=(const OpenWindow&) = delete;

 private:
  AccessWindow* w_;
};

template <class T>
class CpuOps final : public DeviceOps<T> {
 public:
  explicit CpuOps(AccessWindow* window = nullptr) : window_(window) {}
  void add(T* y, const T* x, long n) override;
  void scale_rows(T* x, const T* row_scale, long rows, long width) override;
  void row_dot(const T* a, const T* b, T* out, long rows, long width) override;
  double sum_squares(const T* x, long n) override;
  void copy_rows(const T* src, const int* src_index, T* dst, const int* dst_index, long n, long width) override;
  void sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out) override;
  void embedding_forward(const T* table, const int* tokens, long rows, long vocab_start, long vocab_local, long width,
                         T* out) override;
  void embedding_backward(const T* dout, const int* tokens, long rows, long vocab_start, long vocab_local, long width,
                          T* grad_accum) override;
  void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) override;
  void rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw_accum, int rows,
                        int cols) override;
  void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols,
                         T eps) override;
  void layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw_accum,
                          T* db_accum, int rows, int cols) override;
  void rope_forward(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                    double theta) override;
  void rope_backward(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                     double theta) override;
  void swiglu_forward(const T* gate, const T* up, T* out, long n) override;
  void swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) override;
  void gelu_forward(const T* x, T* y, long n) override;
  void gelu_backward(const T* dy, const T* x, T* dx, long n) override;
  void squared_relu_forward(const T* x, T* y, long n) override;
  void squared_relu_backward(const T* dy, const T* x, T* dx, long n) override;
  void attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos, int tq,
                         int tk, int heads, int kv_heads, int d, T scale) override;
  void attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq,
                          T* dk_accum, T* dv_accum, const int* q_pos, const int* k_pos, int tq, int tk, int heads,
                          int kv_heads, int d, T scale) override;
  void merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) override;
  void logits_rowmax(const T* logits, T* rowmax, int rows, int vocab_shard) override;
  void logits_sumexp(const T* logits, const T* global_max, T* sumexp, int rows, int vocab_shard) override;
  void target_logit(const T* logits, const int* targets, int vocab_start, T* target_logit, int rows,
                    int vocab_shard) override;
  void softmax(const T* logits, const T* global_max, const T* global_sumexp, T* softmax, int rows,
               int vocab_shard) override;
  void softmax_cross_entropy_backward(const T* softmax, const int* targets, int vocab_start, T dloss, T* dlogits,
                                      int rows, int vocab_shard) override;
  void topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight) override;
  void topk_router_backward(const T* dgate_weight, const int* expert_index, const T* gate_weight, T* dlogits,
                            int tokens, int experts, int k) override;
  void adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
             double weight_decay, long step) override;

 private:
  AccessWindow* window_;
};

}  // namespace sixfold
