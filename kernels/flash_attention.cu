// Plain-pointer API of the flash-attention kernels (cuda_kernels.hpp): checks, then dispatch on
// the head dimension.
#include <cstdint>

#include "kernels/flash_attention.cuh"

namespace sixfold::cuda {

namespace {

void check_attention(const char* what, int tq, int tk, int heads, int kv_heads, int d,
                     std::initializer_list<const void*> tensors) {
  std::string problem;
  if (tq < 0 || tk < 0) problem = "tq and tk must be >= 0";
  else if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0) problem = "heads must be a multiple of kv_heads";
  else if (d != 64 && d != 128) problem = "d must be 64 or 128";
  for (const void* p : tensors)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) problem = "q, k, v, out and dout must be 16-byte aligned";
  if (!problem.empty())
    throw UsageError(std::string(what) + ": tq=" + std::to_string(tq) + " tk=" + std::to_string(tk) + " heads=" +
                     std::to_string(heads) + " kv_heads=" + std::to_string(kv_heads) + " d=" + std::to_string(d) +
                     ": " + problem);
}

}  // namespace

void flash_attention_forward(const Bf16* q, const Bf16* k, const Bf16* v, Bf16* out, float* lse, const int* q_pos,
                             const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, float scale,
                             Stream stream) {
  check_attention("flash_attention_forward", tq, tk, heads, kv_heads, d, {q, k, v, out});
  if (tq == 0) return;
  if (d == 64)
    launch_flash_attention_forward<64>(as_device(q), as_device(k), as_device(v), as_device(out), lse, q_pos, k_pos,
                                       tq, tk, heads, kv_heads, scale, as_cuda(stream));
  else
    launch_flash_attention_forward<128>(as_device(q), as_device(k), as_device(v), as_device(out), lse, q_pos, k_pos,
                                        tq, tk, heads, kv_heads, scale, as_cuda(stream));
}

std::size_t flash_attention_backward_workspace_bytes(int tq, int heads) {
  return sizeof(float) * std::size_t(std::max(tq, 0)) * std::size_t(std::max(heads, 0));
}

void flash_attention_backward(const Bf16* dout, const Bf16* q, const Bf16* k, const Bf16* v, const Bf16* out,
                              const float* lse, float* dq, float* dk_accum, float* dv_accum, const int* q_pos,
                              const int* k_pos, int tq, int tk, int heads, int kv_heads, int d, float scale,
                              void* workspace, Stream stream) {
  check_attention("flash_attention_backward", tq, tk, heads, kv_heads, d, {dout, q, k, v, out});
  if (tq == 0) return;
  if (workspace == nullptr) throw UsageError("flash_attention_backward: workspace is null (size: "
                                             "flash_attention_backward_workspace_bytes)");
  float* delta = static_cast<float*>(workspace);
  if (d == 64)
    launch_flash_attention_backward<64>(as_device(dout), as_device(q), as_device(k), as_device(v), as_device(out),
                                        lse, dq, dk_accum, dv_accum, q_pos, k_pos, tq, tk, heads, kv_heads, scale,
                                        delta, as_cuda(stream));
  else
    launch_flash_attention_backward<128>(as_device(dout), as_device(q), as_device(k), as_device(v), as_device(out),
                                         lse, dq, dk_accum, dv_accum, q_pos, k_pos, tq, tk, heads, kv_heads, scale,
                                         delta, as_cuda(stream));
}

}  // namespace sixfold::cuda
