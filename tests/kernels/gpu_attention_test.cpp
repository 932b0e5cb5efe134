// GPU flash attention (WMMA bf16, fp32 accumulation) vs attention_forward_ref / attention_backward_ref,
// on ordinary causal sequences, GQA groups, context-parallel chunks (explicit positions) and rows
// that see no key at all.
#include <cmath>

#include "kernels/attention_ref.hpp"
#include "tests/kernels/gpu_test_util.hpp"

using namespace sixfold;
using namespace sixfold::gpu_test;

namespace {

struct AttentionCase {
  int tq, tk, heads, kv_heads, d;
  std::vector<int> q_pos, k_pos;
};

void check_attention_case(const AttentionCase& c, unsigned seed) {
  CAPTURE(c.tq);
  CAPTURE(c.tk);
  CAPTURE(c.heads);
  CAPTURE(c.kv_heads);
  CAPTURE(c.d);
  const std::size_t nq = std::size_t(c.tq) * c.heads * c.d, nk = std::size_t(c.tk) * c.kv_heads * c.d;
  const auto q = random_bf16_values(nq, -1, 1, seed), k = random_bf16_values(nk, -1, 1, seed + 1),
             v = random_bf16_values(nk, -1, 1, seed + 2), dout = random_bf16_values(nq, -1, 1, seed + 3);
  const double scale = 1.0 / std::sqrt(double(c.d));

  std::vector<double> out_ref(nq), lse_ref(std::size_t(c.heads) * c.tq);
  attention_forward_ref(to_double(q).data(), to_double(k).data(), to_double(v).data(), out_ref.data(),
                        lse_ref.data(), c.q_pos.data(), c.k_pos.data(), c.tq, c.tk, c.heads, c.kv_heads, c.d, scale);

  DeviceBuffer<Bf16> dq_in(to_bf16(q)), dk_in(to_bf16(k)), dv_in(to_bf16(v)), dout_gpu(nq);
  DeviceBuffer<int> dqpos(c.q_pos), dkpos(c.k_pos);
  DeviceBuffer<float> dlse(lse_ref.size());
  cuda::flash_attention_forward(dq_in.get(), dk_in.get(), dv_in.get(), dout_gpu.get(), dlse.get(), dqpos.get(),
                                dkpos.get(), c.tq, c.tk, c.heads, c.kv_heads, c.d, float(scale));
  CHECK(max_relative_error(to_float(dout_gpu.download()), out_ref) < 2e-2);
  CHECK(max_relative_error(dlse.download(), lse_ref) < 1e-3);

  // Backward from the reference's own forward (rounded to bf16 as the GPU stores it), so that
  // both sides differentiate the same out and lse.
  std::vector<float> out_f(out_ref.begin(), out_ref.end());
  for (auto& x : out_f) x = cuda::bf16_to_float(cuda::float_to_bf16(x));
  std::vector<double> dq_ref(nq), dk_ref(nk, 0.0), dv_ref(nk, 0.0);
  attention_backward_ref(to_double(dout).data(), to_double(q).data(), to_double(k).data(), to_double(v).data(),
                         to_double(out_f).data(), lse_ref.data(), dq_ref.data(), dk_ref.data(), dv_ref.data(),
                         c.q_pos.data(), c.k_pos.data(), c.tq, c.tk, c.heads, c.kv_heads, c.d, scale);
  DeviceBuffer<Bf16> ddout(to_bf16(dout)), dout_saved(to_bf16(out_f));
  DeviceBuffer<float> dlse_saved(std::vector<float>(lse_ref.begin(), lse_ref.end()));
  DeviceBuffer<float> ddq(nq), ddk(std::vector<float>(nk, 0.0f)), ddv(std::vector<float>(nk, 0.0f));
  DeviceBuffer<unsigned char> workspace(cuda::flash_attention_backward_workspace_bytes(c.tq, c.heads));
  cuda::flash_attention_backward(ddout.get(), dq_in.get(), dk_in.get(), dv_in.get(), dout_saved.get(),
                                 dlse_saved.get(), ddq.get(), ddk.get(), ddv.get(), dqpos.get(), dkpos.get(), c.tq,
                                 c.tk, c.heads, c.kv_heads, c.d, float(scale), workspace.get());
  CHECK(max_relative_error(ddq.download(), dq_ref) < 3e-2);
  CHECK(max_relative_error(ddk.download(), dk_ref) < 3e-2);
  CHECK(max_relative_error(ddv.download(), dv_ref) < 3e-2);
}

std::vector<int> iota_positions(int n, int start) {
  std::vector<int> p(n);
  for (int i = 0; i < n; ++i) p[i] = start + i;
  return p;
}

}  // namespace

TEST_CASE("flash attention: causal self-attention with GQA, d = 64 and 128, ragged tiles") {
  for (int d : {64, 128}) {
    const int t = 200;  // not a multiple of the 64-row tile
    check_attention_case({t, t, 4, 2, d, iota_positions(t, 0), iota_positions(t, 0)}, 20 + d);
  }
}

TEST_CASE("flash attention: multi-head without grouping") {
  check_attention_case({130, 130, 3, 3, 64, iota_positions(130, 0), iota_positions(130, 0)}, 40);
}

TEST_CASE("flash attention: context-parallel chunk (queries later than all but some keys)") {
  // A CP rank's query chunk at positions 100..179 against keys 0..179, as ring attention sees it.
  check_attention_case({80, 180, 8, 2, 128, iota_positions(80, 100), iota_positions(180, 0)}, 50);
}

TEST_CASE("flash attention: queries with no visible key get out 0 and lse -inf") {
  // Keys start at position 10, so queries 0..9 see nothing.
  check_attention_case({64, 64, 2, 1, 64, iota_positions(64, 0), iota_positions(64, 10)}, 60);
}
