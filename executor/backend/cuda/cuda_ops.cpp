#include "executor/backend/cuda/cuda_ops.hpp"

#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "kernels/cuda_generic_kernels.hpp"

namespace sixfold {

void* CudaStorage::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  CHECK_CUDA(cudaMallocAsync(&p, bytes, streams_->compute));
  CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, streams_->compute));
  return p;
}

void CudaStorage::release(void* pointer, std::size_t) noexcept {
  // Ordered after the compute stream's use of it; NCCL's use has been waited for (the communicator
  // waits for every collective, and sends go from a copy of their own).
  if (pointer) cudaFreeAsync(pointer, streams_->compute);
}

void CudaStorage::upload(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, streams_->compute));
  CHECK_CUDA(cudaStreamSynchronize(streams_->compute));  // the host buffer may go at once
}

void CudaStorage::download(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, streams_->compute));
  CHECK_CUDA(cudaStreamSynchronize(streams_->compute));  // the host reads it next
}

void CudaStorage::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (is_device_memory(dst) && is_device_memory(src)) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, streams_->compute));
    return;
  }
  // A host side (the emulated communicator's messages and counts): after the stream's work, at once.
  CHECK_CUDA(cudaStreamSynchronize(streams_->compute));
  CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void CudaStorage::zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  if (is_device_memory(dst)) {
    CHECK_CUDA(cudaMemsetAsync(dst, 0, bytes, streams_->compute));
    return;
  }
  CHECK_CUDA(cudaStreamSynchronize(streams_->compute));
  std::memset(dst, 0, bytes);
}

namespace {

namespace g = cuda::generic;

template <class T>
class CudaOps final : public DeviceOps<T> {
 public:
  explicit CudaOps(std::shared_ptr<CudaStreams> streams) : streams_(std::move(streams)) {}

  void add(T* y, const T* x, long n) override { g::add(y, x, n, s()); }
  void scale_rows(T* x, const T* sc, long rows, long width) override { g::scale_rows(x, sc, rows, width, s()); }
  void row_dot(const T* a, const T* b, T* out, long rows, long width) override {
    g::row_dot(a, b, out, rows, width, s());
  }
  double sum_squares(const T* x, long n) override {
    auto* result = static_cast<double*>(scalar_.ensure(sizeof(double)));
    g::sum_squares(x, n, result, s());
    double h = 0;
    CHECK_CUDA(cudaMemcpyAsync(&h, result, sizeof h, cudaMemcpyDeviceToHost, streams_->compute));
    CHECK_CUDA(cudaStreamSynchronize(streams_->compute));
    return h;
  }
  void copy_rows(const T* src, const int* si, T* dst, const int* di, long n, long width) override {
    const auto d = upload({{si, n}, {di, n}});
    g::copy_rows(src, d[0], dst, d[1], n, width, s());
  }
  void sum_rows(const T* src, const int* index, long tokens, int k, long width, T* out) override {
    const auto d = upload({{index, tokens * k}});
    g::sum_rows(src, d[0], tokens, k, width, out, s());
  }
  void embedding_forward(const T* table, const int* tokens, long rows, long start, long local_n, long width,
                         T* out) override {
    const auto d = upload({{tokens, rows}});
    g::embedding_forward(table, d[0], rows, start, local_n, width, out, s());
  }
  void embedding_backward(const T* dout, const int* tokens, long rows, long start, long local_n, long width,
                          T* grad) override {
    const auto d = upload({{tokens, rows}});
    g::embedding_backward(dout, d[0], rows, start, local_n, width, grad, s());
  }
  void rmsnorm_forward(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) override {
    g::rmsnorm_forward(x, w, y, rstd, rows, cols, eps, s());
  }
  void rmsnorm_backward(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw, int rows, int cols) override {
    g::rmsnorm_backward(dy, x, w, rstd, dx, dw, rows, cols, s());
  }
  void layernorm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols,
                         T eps) override {
    g::layernorm_forward(x, w, b, y, mean, rstd, rows, cols, eps, s());
  }
  void layernorm_backward(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw, T* db,
                          int rows, int cols) override {
    g::layernorm_backward(dy, x, w, mean, rstd, dx, dw, db, rows, cols, s());
  }
  void rope_forward(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                    double theta) override {
    const auto d = upload({{positions, tokens}});
    g::rope(x, y, d[0], tokens, heads, head_dim, rotary_dim, theta, 1.0, s());
  }
  void rope_backward(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                     double theta) override {
    const auto d = upload({{positions, tokens}});
    g::rope(dy, dx, d[0], tokens, heads, head_dim, rotary_dim, theta, -1.0, s());
  }
  void swiglu_forward(const T* gate, const T* up, T* out, long n) override { g::swiglu_forward(gate, up, out, n, s()); }
  void swiglu_backward(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) override {
    g::swiglu_backward(dout, gate, up, dgate, dup, n, s());
  }
  void gelu_forward(const T* x, T* y, long n) override { g::gelu_forward(x, y, n, s()); }
  void gelu_backward(const T* dy, const T* x, T* dx, long n) override { g::gelu_backward(dy, x, dx, n, s()); }
  void squared_relu_forward(const T* x, T* y, long n) override { g::squared_relu_forward(x, y, n, s()); }
  void squared_relu_backward(const T* dy, const T* x, T* dx, long n) override {
    g::squared_relu_backward(dy, x, dx, n, s());
  }
  void attention_forward(const T* q, const T* k, const T* v, T* out, T* lse, const int* q_pos, const int* k_pos, int tq,
                         int tk, int heads, int kv_heads, int d, T scale) override {
    const auto p = upload({{q_pos, tq}, {k_pos, tk}});
    g::attention_forward(q, k, v, out, lse, p[0], p[1], tq, tk, heads, kv_heads, d, scale, s());
  }
  void attention_backward(const T* dout, const T* q, const T* k, const T* v, const T* out, const T* lse, T* dq, T* dk,
                          T* dv, const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads, int d,
                          T scale) override {
    const auto p = upload({{q_pos, tq}, {k_pos, tk}});
    g::attention_backward(dout, q, k, v, out, lse, dq, dk, dv, p[0], p[1], tq, tk, heads, kv_heads, d, scale, s());
  }
  void merge_attention_partial(T* out, T* lse, const T* out_b, const T* lse_b, int tq, int heads, int d) override {
    g::merge_attention_partial(out, lse, out_b, lse_b, tq, heads, d, s());
  }
  void logits_rowmax(const T* logits, T* rowmax, int rows, int vocab) override {
    g::logits_rowmax(logits, rowmax, rows, vocab, s());
  }
  void logits_sumexp(const T* logits, const T* gmax, T* sumexp, int rows, int vocab) override {
    g::logits_sumexp(logits, gmax, sumexp, rows, vocab, s());
  }
  void target_logit(const T* logits, const int* targets, int start, T* target, int rows, int vocab) override {
    const auto d = upload({{targets, rows}});
    g::target_logit(logits, d[0], start, target, rows, vocab, s());
  }
  void softmax(const T* logits, const T* gmax, const T* gsum, T* out, int rows, int vocab) override {
    g::softmax(logits, gmax, gsum, out, rows, vocab, s());
  }
  void softmax_cross_entropy_backward(const T* sm, const int* targets, int start, T dloss, T* dlogits, int rows,
                                      int vocab) override {
    const auto d = upload({{targets, rows}});
    g::softmax_cross_entropy_backward(sm, d[0], start, dloss, dlogits, rows, vocab, s());
  }
  void topk_router(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate) override {
    const std::size_t bytes = std::size_t(tokens) * k * sizeof(int);
    auto* d = static_cast<int*>(indices_.ensure(std::max<std::size_t>(bytes, sizeof(int))));
    g::topk_router(logits, tokens, experts, k, d, gate, s());
    if (bytes > 0) CHECK_CUDA(cudaMemcpyAsync(expert_index, d, bytes, cudaMemcpyDeviceToHost, streams_->compute));
    CHECK_CUDA(cudaStreamSynchronize(streams_->compute));  // the host sorts the choices next
  }
  void topk_router_backward(const T* dgate, const int* expert_index, const T* gate, T* dlogits, int tokens, int experts,
                            int k) override {
    const auto d = upload({{expert_index, long(tokens) * k}});
    g::topk_router_backward(dgate, d[0], gate, dlogits, tokens, experts, k, s());
  }
  void adamw(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps, double wd,
             long step) override {
    g::adamw(param, grad, m, v, n, lr, beta1, beta2, eps, wd, step, s());
  }

 private:
  cuda::Stream s() const { return reinterpret_cast<cuda::Stream>(streams_->compute); }
  // Host index arrays to the device, one staging buffer, on the compute stream (ordered after the
  // kernels that read the previous upload).
  std::vector<const int*> upload(std::initializer_list<std::pair<const int*, long>> arrays) {
    std::size_t total = 0;
    for (const auto& [p, n] : arrays) total += (std::size_t(n) * sizeof(int) + 255) / 256 * 256;
    char* base = static_cast<char*>(indices_.ensure(std::max<std::size_t>(total, 256)));
    std::vector<const int*> out;
    std::size_t offset = 0;
    for (const auto& [p, n] : arrays) {
      const std::size_t bytes = std::size_t(n) * sizeof(int);
      if (bytes > 0) CHECK_CUDA(cudaMemcpyAsync(base + offset, p, bytes, cudaMemcpyHostToDevice, streams_->compute));
      out.push_back(reinterpret_cast<const int*>(base + offset));
      offset += (bytes + 255) / 256 * 256;
    }
    return out;
  }

  std::shared_ptr<CudaStreams> streams_;
  DeviceStaging indices_, scalar_;
};

}  // namespace

template <class T>
std::unique_ptr<DeviceOps<T>> make_cuda_ops(std::shared_ptr<CudaStreams> streams) {
  return std::make_unique<CudaOps<T>>(std::move(streams));
}

template std::unique_ptr<DeviceOps<float>> make_cuda_ops<float>(std::shared_ptr<CudaStreams>);
template std::unique_ptr<DeviceOps<double>> make_cuda_ops<double>(std::shared_ptr<CudaStreams>);

}  // namespace sixfold
