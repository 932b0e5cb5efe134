#pragma once
// Host-callable launchers of the sixfold CUDA kernels, with plain pointer + size signatures.
// This header needs no CUDA header and no nvcc: the executor's C++ code includes it and links
// sixfold_kernels_cuda (defined only where a CUDA toolkit was found, with SIXFOLD_HAVE_CUDA=1).
//
// Conventions (the same as the CPU references kernels/*_ref.hpp, which are the test oracles):
//  - every pointer except the stream is device memory; tensors are row-major and contiguous;
//  - activations and weights are bf16 (Bf16), statistics, gradients that accumulate over rows
//    (dw, db, dk, dv, dq) and optimizer state are fp32; arithmetic accumulates in fp32;
//  - "_accum" outputs are added into (zero them for a plain gradient), other outputs overwritten;
//  - launches are asynchronous on `stream` (nullptr = the legacy default stream);
//  - bad arguments throw sixfold::UsageError, CUDA failures sixfold::Error (file, line, message).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "common/error.hpp"

struct CUstream_st;  // the type behind cudaStream_t

namespace sixfold::cuda {

using Stream = CUstream_st*;

// bfloat16 storage: the upper 16 bits of an IEEE float.
struct Bf16 {
  std::uint16_t bits;
};

// Round to nearest even, as __float2bfloat16 does; NaN stays a (quiet) NaN.
inline Bf16 float_to_bf16(float value) {
  std::uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return Bf16{std::uint16_t((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return Bf16{std::uint16_t(u >> 16)};
}

inline float bf16_to_float(Bf16 value) {
  const std::uint32_t u = std::uint32_t(value.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- runtime helpers (so that callers need no CUDA header) ----
int device_count();                 // 0 when there is no driver or no device; never throws
std::string device_name(int device);
void set_device(int device);
void* device_alloc(std::size_t bytes);
void device_free(void* pointer) noexcept;
void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes);
void device_zero(void* device_dst, std::size_t bytes, Stream stream = nullptr);
void synchronize();

void convert_f32_to_bf16(const float* in, Bf16* out, long n, Stream stream = nullptr);
void convert_bf16_to_f32(const Bf16* in, float* out, long n, Stream stream = nullptr);

// ---- normalisation (kernels/norm.cuh): x, y [rows, cols]; w, b [cols]; mean, rstd [rows] ----
void rmsnorm_forward(const Bf16* x, const Bf16* w, Bf16* y, float* rstd, int rows, int cols, float eps,
                     Stream stream = nullptr);
void rmsnorm_backward(const Bf16* dy, const Bf16* x, const Bf16* w, const float* rstd, Bf16* dx, float* dw_accum,
                      int rows, int cols, Stream stream = nullptr);
void layernorm_forward(const Bf16* x, const Bf16* w, const Bf16* b, Bf16* y, float* mean, float* rstd, int rows,
                       int cols, float eps, Stream stream = nullptr);
void layernorm_backward(const Bf16* dy, const Bf16* x, const Bf16* w, const float* mean, const float* rstd,
                        Bf16* dx, float* dw_accum, float* db_accum, int rows, int cols, Stream stream = nullptr);

// ---- rotary embedding (kernels/rope.cuh): x [tokens, heads, head_dim], positions [tokens] ----
void rope_forward(const Bf16* x, Bf16* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                  double theta, Stream stream = nullptr);
void rope_backward(const Bf16* dy, Bf16* dx, const int* positions, int tokens, int heads, int head_dim,
                   int rotary_dim, double theta, Stream stream = nullptr);

// ---- activations (kernels/activation.cuh), n elements ----
void swiglu_forward(const Bf16* gate, const Bf16* up, Bf16* out, long n, Stream stream = nullptr);
void swiglu_backward(const Bf16* dout, const Bf16* gate, const Bf16* up, Bf16* dgate, Bf16* dup, long n,
                     Stream stream = nullptr);
void gelu_forward(const Bf16* x, Bf16* y, long n, Stream stream = nullptr);  // tanh approximation
void gelu_backward(const Bf16* dy, const Bf16* x, Bf16* dx, long n, Stream stream = nullptr);

// ---- vocab-parallel cross-entropy (kernels/cross_entropy.cuh): logits [rows, vocab_shard] ----
// TP all-reduces (max) the rowmax, then (sum) sumexp and target_logit, between these calls.
void logits_rowmax(const Bf16* logits, float* rowmax, int rows, int vocab_shard, Stream stream = nullptr);
void logits_sumexp(const Bf16* logits, const float* global_max, float* sumexp, int rows, int vocab_shard,
                   Stream stream = nullptr);
void target_logit(const Bf16* logits, const int* targets, int vocab_start, float* target_logit, int rows,
                  int vocab_shard, Stream stream = nullptr);
void cross_entropy_backward(const Bf16* logits, const float* global_max, const float* global_sumexp,
                            const int* targets, int vocab_start, float dloss_per_row, Bf16* dlogits, int rows,
                            int vocab_shard, Stream stream = nullptr);

// ---- causal flash attention with GQA (kernels/flash_attention.cuh) ----
// q [tq, heads, d], k/v [tk, kv_heads, d], out [tq, heads, d], lse [heads, tq] (natural log);
// key j is visible to query i iff k_pos[j] <= q_pos[i]. d is 64 or 128; heads % kv_heads == 0;
// q/k/v/out/dout 16-byte aligned. A query with no visible key gets out 0 and lse -inf.
void flash_attention_forward(const Bf16* q, const Bf16* k, const Bf16* v, Bf16* out, float* lse, const int* q_pos,
                             const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, float scale,
                             Stream stream = nullptr);
// Workspace of the backward: heads * tq floats (the row dot products D = dout . out).
std::size_t flash_attention_backward_workspace_bytes(int tq, int heads);
// dq is overwritten (fp32); dk_accum, dv_accum [tk, kv_heads, d] fp32 are added into.
void flash_attention_backward(const Bf16* dout, const Bf16* q, const Bf16* k, const Bf16* v, const Bf16* out,
                              const float* lse, float* dq, float* dk_accum, float* dv_accum, const int* q_pos,
                              const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, float scale,
                              void* workspace, Stream stream = nullptr);

// ---- mixture of experts (kernels/moe.cuh) ----
// Router logits are fp32 (routers run in fp32, as Megatron-LM and Mixtral do). k <= 32.
void topk_router(const float* logits, int tokens, int experts, int k, int* expert_index, float* gate_weight,
                 Stream stream = nullptr);
void topk_router_backward(const float* dgate_weight, const int* expert_index, const float* gate_weight,
                          float* dlogits, int tokens, int experts, int k, Stream stream = nullptr);
std::size_t moe_permute_indices_workspace_bytes(int tokens, int k, int experts);
// Stable sort of the (token, choice) assignments by expert, as moe_permute_indices_ref.
void moe_permute_indices(const int* expert_index, int tokens, int k, int experts, int* sorted_slot_of_assignment,
                         int* tokens_per_expert, void* workspace, Stream stream = nullptr);
// permuted[slot(t, c)] = x[t]; x [tokens, hidden], permuted [tokens * k, hidden].
void moe_permute(const Bf16* x, const int* sorted_slot_of_assignment, int tokens, int k, int hidden,
                 Bf16* permuted, Stream stream = nullptr);
// out[t] = sum_c gate_weight[t, c] * expert_out[slot(t, c)], accumulated in fp32.
void moe_unpermute(const Bf16* expert_out, const int* sorted_slot_of_assignment, const float* gate_weight,
                   int tokens, int k, int hidden, Bf16* out, Stream stream = nullptr);

// ---- optimizer (kernels/adamw.cuh) ----
// Fused AdamW over fp32 master weights, fp32 gradient and moments; when model_param is not null
// the updated weight is also written there in bf16 (the copy the forward reads). step from 1.
void adamw_step(float* master_param, const float* grad, float* m, float* v, Bf16* model_param, long n, double lr,
                double beta1, double beta2, double eps, double weight_decay, long step, Stream stream = nullptr);

// ---- GEMM through cuBLASLt (kernels/gemm_cublaslt.cu): the one cuBLASLt wrapper ----
// Row-major C[m, n] = alpha * op(A) op(B) + beta * C. A is [m, k] ([k, m] when trans_a), B is
// [k, n] ([n, k] when trans_b). bf16 A and B accumulate in fp32 (bf16 or fp32 C); fp32 and fp64
// (the float/double model runtime of the executor's CUDA backend) compute in their own precision,
// fp32 on TF32 tensor cores when the object was made with tf32 (10-bit mantissa inputs: faster,
// results ~1e-3 apart from the CPU's). A handle, its workspace and the algorithm chosen per shape
// live in one object; it is not thread-safe. m, n, k >= 0 (m or n 0: nothing to do).
// Element types of a cuBLASLt GEMM through the typed entry (try_matmul). FP8 is e4m3; cuBLASLt
// runs it only as C = A B^T (trans_a false, trans_b true: its "TN" layout).
enum class GemmType { BF16, FP16, FP8_E4M3, FP32, FP64 };

class CublasLtGemm {
 public:
  explicit CublasLtGemm(std::size_t workspace_bytes = std::size_t(32) << 20, bool tf32 = false);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void matmul(const Bf16* a, const Bf16* b, Bf16* c, int m, int n, int k, bool trans_a, bool trans_b,
              float alpha = 1.0f, float beta = 0.0f, Stream stream = nullptr);
  // fp32 output, e.g. weight gradients accumulated with beta = 1.
  void matmul(const Bf16* a, const Bf16* b, float* c, int m, int n, int k, bool trans_a, bool trans_b,
              float alpha = 1.0f, float beta = 0.0f, Stream stream = nullptr);
  void matmul(const float* a, const float* b, float* c, long m, long n, long k, bool trans_a, bool trans_b,
              float alpha, float beta, Stream stream);
  void matmul(const double* a, const double* b, double* c, long m, long n, long k, bool trans_a, bool trans_b,
              double alpha, double beta, Stream stream);
  // Any supported pair of input and output types (device pointers of those types); false when
  // cuBLASLt offers no algorithm for them on this device (calibration skips the shape).
  bool try_matmul(GemmType in, GemmType out, const void* a, const void* b, void* c, long m, long n, long k,
                  bool trans_a, bool trans_b, double alpha, double beta, Stream stream);
  std::size_t workspace_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sixfold::cuda
