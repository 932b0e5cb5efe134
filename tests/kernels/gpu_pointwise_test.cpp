// GPU vs CPU reference: normalisation, RoPE, activations, vocab-parallel cross-entropy, AdamW.
// Tolerances: bf16 outputs carry a relative rounding of 2^-9 (~0.2 %); fp32 statistics much less.
#include "kernels/activation_ref.hpp"
#include "kernels/adamw_ref.hpp"
#include "kernels/cross_entropy_ref.hpp"
#include "kernels/norm_ref.hpp"
#include "kernels/rope_ref.hpp"
#include "tests/kernels/gpu_test_util.hpp"

using namespace sixfold;
using namespace sixfold::gpu_test;

TEST_CASE("rmsnorm forward and backward match the reference") {
  const int rows = 37, cols = 1000;  // odd sizes: partial warps and blocks
  const auto x = random_bf16_values(std::size_t(rows) * cols, -2, 2, 1);
  const auto w = random_bf16_values(cols, 0.5, 1.5, 2);
  const auto dy = random_bf16_values(std::size_t(rows) * cols, -1, 1, 3);
  std::vector<double> y_ref(x.size()), rstd_ref(rows), dx_ref(x.size()), dw_ref(cols, 0.0);
  rmsnorm_forward_ref(to_double(x).data(), to_double(w).data(), y_ref.data(), rstd_ref.data(), rows, cols, 1e-5);
  rmsnorm_backward_ref(to_double(dy).data(), to_double(x).data(), to_double(w).data(), rstd_ref.data(),
                       dx_ref.data(), dw_ref.data(), rows, cols);

  DeviceBuffer<Bf16> dx_in(to_bf16(x)), dw_in(to_bf16(w)), ddy(to_bf16(dy)), dy_out(x.size()), ddx(x.size());
  DeviceBuffer<float> drstd(rows), ddw(std::vector<float>(cols, 0.0f));
  cuda::rmsnorm_forward(dx_in.get(), dw_in.get(), dy_out.get(), drstd.get(), rows, cols, 1e-5f);
  cuda::rmsnorm_backward(ddy.get(), dx_in.get(), dw_in.get(), drstd.get(), ddx.get(), ddw.get(), rows, cols);
  CHECK(max_relative_error(to_float(dy_out.download()), y_ref) < 1e-2);
  CHECK(max_relative_error(drstd.download(), rstd_ref) < 1e-4);
  CHECK(max_relative_error(to_float(ddx.download()), dx_ref) < 1e-2);
  CHECK(max_relative_error(ddw.download(), dw_ref) < 1e-4);
}

TEST_CASE("layernorm forward and backward match the reference") {
  const int rows = 29, cols = 768;
  const auto x = random_bf16_values(std::size_t(rows) * cols, -1, 3, 4);  // non-zero mean
  const auto w = random_bf16_values(cols, 0.5, 1.5, 5);
  const auto b = random_bf16_values(cols, -0.5, 0.5, 6);
  const auto dy = random_bf16_values(std::size_t(rows) * cols, -1, 1, 7);
  std::vector<double> y_ref(x.size()), mean_ref(rows), rstd_ref(rows), dx_ref(x.size()), dw_ref(cols, 0.0),
      db_ref(cols, 0.0);
  layernorm_forward_ref(to_double(x).data(), to_double(w).data(), to_double(b).data(), y_ref.data(), mean_ref.data(),
                        rstd_ref.data(), rows, cols, 1e-5);
  layernorm_backward_ref(to_double(dy).data(), to_double(x).data(), to_double(w).data(), mean_ref.data(),
                         rstd_ref.data(), dx_ref.data(), dw_ref.data(), db_ref.data(), rows, cols);

  DeviceBuffer<Bf16> dx_in(to_bf16(x)), dw_in(to_bf16(w)), db_in(to_bf16(b)), ddy(to_bf16(dy)), dy_out(x.size()),
      ddx(x.size());
  DeviceBuffer<float> dmean(rows), drstd(rows), ddw(std::vector<float>(cols, 0.0f)), ddb(std::vector<float>(cols, 0.0f));
  cuda::layernorm_forward(dx_in.get(), dw_in.get(), db_in.get(), dy_out.get(), dmean.get(), drstd.get(), rows, cols,
                          1e-5f);
  cuda::layernorm_backward(ddy.get(), dx_in.get(), dw_in.get(), dmean.get(), drstd.get(), ddx.get(), ddw.get(),
                           ddb.get(), rows, cols);
  CHECK(max_relative_error(to_float(dy_out.download()), y_ref) < 1e-2);
  CHECK(max_relative_error(dmean.download(), mean_ref) < 1e-4);
  CHECK(max_relative_error(drstd.download(), rstd_ref) < 1e-4);
  CHECK(max_relative_error(to_float(ddx.download()), dx_ref) < 1e-2);
  CHECK(max_relative_error(ddw.download(), dw_ref) < 1e-4);
  CHECK(max_relative_error(ddb.download(), db_ref) < 1e-4);
}

TEST_CASE("rope forward and backward match the reference, partial rotary dim included") {
  for (int rotary_dim : {64, 32}) {
    const int tokens = 50, heads = 3, head_dim = 64;
    const auto x = random_bf16_values(std::size_t(tokens) * heads * head_dim, -1, 1, 8);
    std::vector<int> positions(tokens);
    for (int t = 0; t < tokens; ++t) positions[t] = 1000 * t + 7;  // large positions: angle precision matters
    std::vector<double> y_ref(x.size()), dx_ref(x.size());
    rope_forward_ref(to_double(x).data(), y_ref.data(), positions.data(), tokens, heads, head_dim, rotary_dim, 1e4);
    rope_backward_ref(to_double(x).data(), dx_ref.data(), positions.data(), tokens, heads, head_dim, rotary_dim, 1e4);
    DeviceBuffer<Bf16> din(to_bf16(x)), dout(x.size()), dback(x.size());
    DeviceBuffer<int> dpos(positions);
    cuda::rope_forward(din.get(), dout.get(), dpos.get(), tokens, heads, head_dim, rotary_dim, 1e4);
    cuda::rope_backward(din.get(), dback.get(), dpos.get(), tokens, heads, head_dim, rotary_dim, 1e4);
    CHECK(max_relative_error(to_float(dout.download()), y_ref) < 1e-2);
    CHECK(max_relative_error(to_float(dback.download()), dx_ref) < 1e-2);
  }
}

TEST_CASE("swiglu and gelu forward and backward match the reference") {
  const long n = 100003;
  const auto a = random_bf16_values(n, -6, 6, 9), b = random_bf16_values(n, -2, 2, 10),
             d = random_bf16_values(n, -1, 1, 11);
  std::vector<double> out_ref(n), dgate_ref(n), dup_ref(n), gelu_ref(n), dgelu_ref(n);
  swiglu_forward_ref(to_double(a).data(), to_double(b).data(), out_ref.data(), n);
  swiglu_backward_ref(to_double(d).data(), to_double(a).data(), to_double(b).data(), dgate_ref.data(),
                      dup_ref.data(), n);
  gelu_forward_ref(to_double(a).data(), gelu_ref.data(), n);
  gelu_backward_ref(to_double(d).data(), to_double(a).data(), dgelu_ref.data(), n);
  DeviceBuffer<Bf16> da(to_bf16(a)), db(to_bf16(b)), dd(to_bf16(d)), o1(n), o2(n), o3(n), o4(n), o5(n);
  cuda::swiglu_forward(da.get(), db.get(), o1.get(), n);
  cuda::swiglu_backward(dd.get(), da.get(), db.get(), o2.get(), o3.get(), n);
  cuda::gelu_forward(da.get(), o4.get(), n);
  cuda::gelu_backward(dd.get(), da.get(), o5.get(), n);
  CHECK(max_relative_error(to_float(o1.download()), out_ref) < 1e-2);
  CHECK(max_relative_error(to_float(o2.download()), dgate_ref) < 1e-2);
  CHECK(max_relative_error(to_float(o3.download()), dup_ref) < 1e-2);
  CHECK(max_relative_error(to_float(o4.download()), gelu_ref) < 1e-2);
  CHECK(max_relative_error(to_float(o5.download()), dgelu_ref) < 1e-2);
}

TEST_CASE("vocab-parallel cross-entropy pieces match the reference on one shard") {
  const int rows = 33, vocab = 5000, vocab_start = 10000;
  const auto logits = random_bf16_values(std::size_t(rows) * vocab, -8, 8, 12);
  std::vector<int> targets(rows);
  for (int r = 0; r < rows; ++r) targets[r] = r % 5 == 0 ? -1 : r % 3 == 0 ? 3 : vocab_start + 97 * r;  // ignored, other shard, here
  const auto l = to_double(logits);
  std::vector<double> max_ref(rows), sum_ref(rows), tgt_ref(rows), dlogits_ref(logits.size());
  logits_rowmax_ref(l.data(), max_ref.data(), rows, vocab);
  logits_sumexp_ref(l.data(), max_ref.data(), sum_ref.data(), rows, vocab);
  target_logit_ref(l.data(), targets.data(), vocab_start, tgt_ref.data(), rows, vocab);
  cross_entropy_backward_ref(l.data(), max_ref.data(), sum_ref.data(), targets.data(), vocab_start, 1.0 / rows,
                             dlogits_ref.data(), rows, vocab);

  DeviceBuffer<Bf16> dlog(to_bf16(logits)), dgrad(logits.size());
  DeviceBuffer<int> dtgt(targets);
  DeviceBuffer<float> dmax(rows), dsum(rows), dt(rows);
  cuda::logits_rowmax(dlog.get(), dmax.get(), rows, vocab);
  cuda::logits_sumexp(dlog.get(), dmax.get(), dsum.get(), rows, vocab);
  cuda::target_logit(dlog.get(), dtgt.get(), vocab_start, dt.get(), rows, vocab);
  cuda::cross_entropy_backward(dlog.get(), dmax.get(), dsum.get(), dtgt.get(), vocab_start, 1.0f / rows, dgrad.get(),
                               rows, vocab);
  CHECK(max_relative_error(dmax.download(), max_ref) == 0.0);  // a max of bf16 values is exact
  CHECK(max_relative_error(dsum.download(), sum_ref) < 1e-4);
  CHECK(max_relative_error(dt.download(), tgt_ref) == 0.0);
  CHECK(max_relative_error(to_float(dgrad.download()), dlogits_ref) < 1e-2);
}

TEST_CASE("fused adamw matches the reference over several steps and writes the bf16 copy") {
  const long n = 4099;
  auto param = random_bf16_values(n, -1, 1, 13);
  std::vector<double> p_ref(param.begin(), param.end()), m_ref(n, 0.0), v_ref(n, 0.0);
  DeviceBuffer<float> dp(param), dg(n), dm(std::vector<float>(n, 0.0f)), dv(std::vector<float>(n, 0.0f));
  DeviceBuffer<Bf16> dmodel(n);
  for (long step = 1; step <= 3; ++step) {
    const auto grad = random_bf16_values(n, -0.1f, 0.1f, 100 + unsigned(step));
    adamw_ref(p_ref.data(), to_double(grad).data(), m_ref.data(), v_ref.data(), n, 1e-3, 0.9, 0.95, 1e-8, 0.1, step);
    dg.upload(grad);
    cuda::adamw_step(dp.get(), dg.get(), dm.get(), dv.get(), dmodel.get(), n, 1e-3, 0.9, 0.95, 1e-8, 0.1, step);
  }
  const auto p_gpu = dp.download();
  CHECK(max_relative_error(p_gpu, p_ref) < 1e-5);
  CHECK(max_relative_error(dm.download(), m_ref) < 1e-5);
  CHECK(max_relative_error(dv.download(), v_ref) < 1e-5);
  const auto model = dmodel.download();
  for (long i = 0; i < n; i += 97) CHECK(model[i].bits == cuda::float_to_bf16(p_gpu[i]).bits);
}

TEST_CASE("launchers reject impossible shapes with a usage error") {
  CHECK_THROWS_AS(cuda::rope_forward(nullptr, nullptr, nullptr, 1, 1, 64, 65, 1e4), UsageError);
  CHECK_THROWS_AS(cuda::flash_attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1,
                                                8, 3, 64, 1.0f),
                  UsageError);
  CHECK_THROWS_AS(cuda::topk_router(nullptr, 1, 4, 5, nullptr, nullptr), UsageError);
}

TEST_CASE("fp32 <-> bf16 conversion rounds to nearest even like the host helper") {
  std::vector<float> values = random_bf16_values(1000, -3, 3, 14);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] += float(i % 7) * 1e-3f;  // not representable
  values.push_back(1.00390625f);  // halfway between two bf16 values: ties to even (1.0)
  DeviceBuffer<float> din(values), dback(values.size());
  DeviceBuffer<Bf16> dbf(values.size());
  cuda::convert_f32_to_bf16(din.get(), dbf.get(), long(values.size()));
  cuda::convert_bf16_to_f32(dbf.get(), dback.get(), long(values.size()));
  const auto bf = dbf.download();
  const auto back = dback.download();
  bool same = true;
  for (std::size_t i = 0; i < values.size(); ++i)
    same = same && bf[i].bits == cuda::float_to_bf16(values[i]).bits && back[i] == cuda::bf16_to_float(bf[i]);
  CHECK(same);
  CHECK(bf.back().bits == cuda::float_to_bf16(1.0f).bits);
}
