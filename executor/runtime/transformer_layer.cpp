#include "executor/runtime/transformer_layer.hpp"

#include <cmath>

#include "executor/runtime/param_init.hpp"
#include "executor/runtime/ring_attention.hpp"
#include "kernels/activation_ref.hpp"
#include "kernels/norm_ref.hpp"
#include "kernels/rope_ref.hpp"

namespace sixfold {

namespace {
constexpr double kInitStd = 0.02;  // GPT-2 / Megatron init_method_std

template <class T>
void add_into(T* dst, const T* src, long n) {
  for (long i = 0; i < n; ++i) dst[i] += src[i];
}
}  // namespace

template <class T>
TransformerLayer<T>::TransformerLayer(const ExecContext& ctx, int layer, std::uint64_t seed) : layer_(layer) {
  const ModelSpec& m = *ctx.model;
  const int tp_rank = ctx.groups->me.tp;
  moe_ = m.is_moe_layer(layer);
  swiglu_ = m.activation == Activation::SwiGLU;
  layernorm_ = m.norm == NormKind::LayerNorm;
  const long H = ctx.hidden, d = ctx.head_dim, hl = ctx.heads_local, kvl = ctx.kv_heads_local;
  const std::string p = "layer" + std::to_string(layer) + ".";
  const double out_std = kInitStd / std::sqrt(2.0 * m.layers);
  params_ = std::make_unique<ParamGroup<T>>(p + "dense", ctx.layout->zero, ctx.groups->dp_cp.get(), ctx.memory());
  auto& g = *params_;
  const std::vector<double> ones(H, 1.0), zeros(H, 0.0);
  auto column_slice = [&](const std::string& name, long in, long out, long shard, double stddev) {
    return normal_block(p + name, seed, out, 0, in, tp_rank * shard, (tp_rank + 1) * shard, stddev);
  };
  auto row_slice = [&](const std::string& name, long in, long out, long shard, double stddev) {
    return normal_block(p + name, seed, out, tp_rank * shard, (tp_rank + 1) * shard, 0, out, stddev);
  };
  norm1_w_ = g.add(p + "norm1.weight", ones, ctx.sp);
  if (layernorm_) norm1_b_ = g.add(p + "norm1.bias", zeros, ctx.sp);
  wq_ = g.add(p + "wq", column_slice("wq", H, m.heads * d, hl * d, kInitStd), false);
  wk_ = g.add(p + "wk", column_slice("wk", H, m.kv_heads * d, kvl * d, kInitStd), false);
  wv_ = g.add(p + "wv", column_slice("wv", H, m.kv_heads * d, kvl * d, kInitStd), false);
  wo_ = g.add(p + "wo", row_slice("wo", m.heads * d, H, hl * d, out_std), false);
  norm2_w_ = g.add(p + "norm2.weight", ones, ctx.sp);
  if (layernorm_) norm2_b_ = g.add(p + "norm2.bias", zeros, ctx.sp);
  if (!moe_) {
    const long F = m.ffn, Fl = ctx.ffn_local;
    w_gate_ = g.add(p + "w_gate", column_slice("w_gate", H, F, Fl, kInitStd), false);
    if (swiglu_) w_up_ = g.add(p + "w_up", column_slice("w_up", H, F, Fl, kInitStd), false);
    w_down_ = g.add(p + "w_down", row_slice("w_down", F, H, Fl, out_std), false);
  } else {
    const int E = m.moe.num_experts, local = E / ctx.layout->ep;
    const long F = m.moe.expert_ffn;
    router_ = g.add(p + "router", normal_tensor(p + "router", seed, H, E, kInitStd), ctx.sp);
    experts_ = std::make_unique<ParamGroup<T>>(p + "experts", ctx.layout->zero, ctx.groups->expert_dp.get(), ctx.memory(),
                                               true);
    // Every replica of an expert is in its expert-data group (the experts' mesh: TP peers too, when
    // they hold the same experts), so its gradient needs no sum over TP.
    for (int j = 0; j < local; ++j) {
      const std::string e = "expert" + std::to_string(ctx.groups->ep_rank * local + j) + ".";
      ex_gate_.push_back(experts_->add(p + e + "w_gate", normal_tensor(p + e + "w_gate", seed, H, F, kInitStd), false));
      if (swiglu_) ex_up_.push_back(experts_->add(p + e + "w_up", normal_tensor(p + e + "w_up", seed, H, F, kInitStd), false));
      ex_down_.push_back(experts_->add(p + e + "w_down", normal_tensor(p + e + "w_down", seed, F, H, out_std), false));
    }
    experts_->finalize();
  }
  g.finalize();
}

template <class T>
MoeWeights<T> TransformerLayer<T>::moe_weights() {
  MoeWeights<T> w;
  w.router = params_->weight(router_);
  for (size_t j = 0; j < ex_gate_.size(); ++j) {
    w.gate.push_back(experts_->weight(ex_gate_[j]));
    w.up.push_back(swiglu_ ? experts_->weight(ex_up_[j]) : nullptr);
    w.down.push_back(experts_->weight(ex_down_[j]));
  }
  return w;
}

template <class T>
MoeGrads<T> TransformerLayer<T>::moe_grads() {
  MoeGrads<T> g;
  g.router = params_->grad(router_);
  for (size_t j = 0; j < ex_gate_.size(); ++j) {
    g.gate.push_back(experts_->grad(ex_gate_[j]));
    g.up.push_back(swiglu_ ? experts_->grad(ex_up_[j]) : nullptr);
    g.down.push_back(experts_->grad(ex_down_[j]));
  }
  return g;
}

template <class T>
void TransformerLayer<T>::norm_forward(const ExecContext& ctx, const OpHandle& op, int w, int b, const T* in, T* out,
                                       T* mean, T* rstd, long rows) {
  OpScope timer(op);
  if (layernorm_)
    layernorm_forward_ref(in, params_->weight(w), params_->weight(b), out, mean, rstd, int(rows), int(ctx.hidden),
                          T(ctx.norm_eps));
  else
    rmsnorm_forward_ref(in, params_->weight(w), out, rstd, int(rows), int(ctx.hidden), T(ctx.norm_eps));
}

template <class T>
void TransformerLayer<T>::norm_backward(const ExecContext& ctx, const OpHandle& op, int w, int b, const T* dy,
                                        const T* x, const T* mean, const T* rstd, T* dx, long rows) {
  OpScope timer(op);
  if (layernorm_)
    layernorm_backward_ref(dy, x, params_->weight(w), mean, rstd, dx, params_->grad(w), params_->grad(b), int(rows),
                           int(ctx.hidden));
  else
    rmsnorm_backward_ref(dy, x, params_->weight(w), rstd, dx, params_->grad(w), int(rows), int(ctx.hidden));
}

template <class T>
const T* TransformerLayer<T>::gathered(const ExecContext& ctx, const OpHandle& op, const TrackedBuffer<T>& shard,
                                      TrackedBuffer<T>& full) const {
  if (!ctx.sp) return shard.data();
  full.reset(ctx.memory(), MemoryCategory::Buffers, ctx.rows * ctx.hidden);
  ctx.enter_tp_forward(op, shard.data(), full.data());
  return full.data();
}

template <class T>
void TransformerLayer<T>::forward(const ExecContext& ctx, const T* x, T* out, LayerSaved<T>& s) {
  ctx.acquire_weights(params_.get());
  ctx.acquire_weights(experts_.get());
  s.x.reset(ctx.memory(), MemoryCategory::Activations, ctx.rows_residual * ctx.hidden);
  std::copy_n(x, s.x.size(), s.x.data());
  OpCursor ops(*ctx.backend, ctx.program->layer(moe_, true));
  forward_impl(ctx, s, out, ops);
  ops.finish();
  const Recompute policy = ctx.layout->recompute;
  if (policy == Recompute::Selective) {
    s.lse.free();
  } else if (policy == Recompute::Full) {
    TrackedBuffer<T> keep = std::move(s.x);
    s = LayerSaved<T>();
    s.x = std::move(keep);
  }
  params_->release_weights();
  if (experts_) experts_->release_weights();
}

template <class T>
void TransformerLayer<T>::forward_impl(const ExecContext& ctx, LayerSaved<T>& s, T* out, OpCursor& ops) {
  MemoryTracker* mem = ctx.memory();
  const Recompute policy = ctx.layout->recompute;
  // Tensors that outlive the forward are activations; those the recompute policy drops (all but
  // the input under full, the log-sum-exp under selective) are transient buffers.
  const auto Bf = MemoryCategory::Buffers;
  const auto A = policy == Recompute::Full ? Bf : MemoryCategory::Activations;
  const auto core = policy == Recompute::None ? MemoryCategory::Activations : Bf;
  const long H = ctx.hidden, N = ctx.rows, Nr = ctx.rows_residual, d = ctx.head_dim;
  const long hl = ctx.heads_local, kvl = ctx.kv_heads_local;
  s.complete = true;
  // Attention block.
  s.norm1_mean.reset(mem, A, layernorm_ ? Nr : 0);
  s.norm1_rstd.reset(mem, A, Nr);
  s.n1.reset(mem, A, Nr * H);
  norm_forward(ctx, ops.take("attn_norm"), norm1_w_, norm1_b_, s.x.data(), s.n1.data(), s.norm1_mean.data(),
               s.norm1_rstd.data(), Nr);
  {
    const OpHandle gather = ctx.tp_enter_op(ops, "attn_allgather"), qkv = ops.take("qkv_proj"), rope = ops.take("rope");
    TrackedBuffer<T> full, pre(mem, Bf, N * hl * d);
    const T* attn_in = gathered(ctx, gather, s.n1, full);
    s.q.reset(mem, A, N * hl * d);
    s.k.reset(mem, A, N * kvl * d);
    s.v.reset(mem, A, N * kvl * d);
    ctx.gemm(qkv, false, false, N, hl * d, H, attn_in, params_->weight(wq_), T(0), pre.data());
    {
      OpScope timer(rope);
      rope_forward_ref(pre.data(), s.q.data(), ctx.positions.data(), int(N), int(hl), int(d), ctx.rotary_dim, ctx.rope_theta);
    }
    ctx.gemm(qkv, false, false, N, kvl * d, H, attn_in, params_->weight(wk_), T(0), pre.data());
    {
      OpScope timer(rope);
      rope_forward_ref(pre.data(), s.k.data(), ctx.positions.data(), int(N), int(kvl), int(d), ctx.rotary_dim, ctx.rope_theta);
    }
    ctx.gemm(qkv, false, false, N, kvl * d, H, attn_in, params_->weight(wv_), T(0), s.v.data());
  }
  s.attn_out.reset(mem, A, N * hl * d);
  s.lse.reset(mem, core, long(ctx.micro_batch) * hl * ctx.seq_local);
  {
    const OpHandle exchange = ops.take_collective("cp_kv_exchange");
    ring_attention_forward(ctx, ops.take("flash_attention"), exchange, s.q.data(), s.k.data(), s.v.data(),
                           s.attn_out.data(), s.lse.data());
  }
  TrackedBuffer<T> partial(mem, Bf, N * H);
  ctx.gemm(ops.take("out_proj"), false, false, N, H, hl * d, s.attn_out.data(), params_->weight(wo_), T(0), partial.data());
  s.h.reset(mem, A, Nr * H);
  ctx.exit_tp_forward(ctx.tp_exit_op(ops, "attn_allreduce", "attn_reducescatter"), partial.data(), s.h.data());
  {
    OpScope timer(ops.take("attn_residual"));
    add_into(s.h.data(), s.x.data(), Nr * H);
  }
  // FFN block.
  s.norm2_out.reset(mem, A, Nr * H);
  s.norm2_mean.reset(mem, A, layernorm_ ? Nr : 0);
  s.norm2_rstd.reset(mem, A, Nr);
  norm_forward(ctx, ops.take("mlp_norm"), norm2_w_, norm2_b_, s.h.data(), s.norm2_out.data(), s.norm2_mean.data(),
               s.norm2_rstd.data(), Nr);
  if (moe_) {
    moe_forward(ctx, ops, Nr, s.norm2_out.data(), moe_weights(), out, s.moe, A);
  } else {
    const long Fl = ctx.ffn_local;
    const OpHandle gather = ctx.tp_enter_op(ops, "mlp_allgather"), up = ops.take("mlp_up"), act = ops.take("mlp_act");
    TrackedBuffer<T> full;
    const T* mlp_in = gathered(ctx, gather, s.norm2_out, full);
    s.gate.reset(mem, A, N * Fl);
    s.act.reset(mem, A, N * Fl);
    ctx.gemm(up, false, false, N, Fl, H, mlp_in, params_->weight(w_gate_), T(0), s.gate.data());
    if (swiglu_) {
      s.up.reset(mem, A, N * Fl);
      ctx.gemm(up, false, false, N, Fl, H, mlp_in, params_->weight(w_up_), T(0), s.up.data());
      full.free();
      OpScope timer(act);
      swiglu_forward_ref(s.gate.data(), s.up.data(), s.act.data(), N * Fl);
    } else {
      full.free();
      OpScope timer(act);
      gelu_forward_ref(s.gate.data(), s.act.data(), N * Fl);
    }
    ctx.gemm(ops.take("mlp_down"), false, false, N, H, Fl, s.act.data(), params_->weight(w_down_), T(0), partial.data());
    ctx.exit_tp_forward(ctx.tp_exit_op(ops, "mlp_allreduce", "mlp_reducescatter"), partial.data(), out);
  }
  OpScope timer(ops.take("mlp_residual"));
  add_into(out, s.h.data(), Nr * H);
}

template <class T>
void TransformerLayer<T>::backward(const ExecContext& ctx, const T* dout, T* dx, LayerSaved<T>& s) {
  ctx.acquire_weights(params_.get());
  ctx.acquire_weights(experts_.get());
  MemoryTracker* mem = ctx.memory();
  const auto Bf = MemoryCategory::Buffers;
  const long H = ctx.hidden, N = ctx.rows, Nr = ctx.rows_residual, d = ctx.head_dim;
  const long hl = ctx.heads_local, kvl = ctx.kv_heads_local;
  // The backward list starts with the forward ops the recompute policy re-runs.
  OpCursor ops(*ctx.backend, ctx.program->layer(moe_, false));
  if (!s.complete) {  // full recompute: rerun the forward from the saved input
    TrackedBuffer<T> discard(mem, Bf, Nr * H);
    forward_impl(ctx, s, discard.data(), ops);
  } else if (s.lse.empty()) {  // selective recompute of the core attention (its output is saved)
    TrackedBuffer<T> out_again(mem, Bf, N * hl * d);
    s.lse.reset(mem, Bf, long(ctx.micro_batch) * hl * ctx.seq_local);
    const OpHandle exchange = ops.take_collective("cp_kv_exchange");
    ring_attention_forward(ctx, ops.take("flash_attention"), exchange, s.q.data(), s.k.data(), s.v.data(),
                           out_again.data(), s.lse.data());
  }
  params_->acquire_grads();
  if (experts_) experts_->acquire_grads();
  // FFN block.
  TrackedBuffer<T> dn2(mem, Bf, Nr * H), dh(mem, Bf, Nr * H);
  const OpHandle mlp_residual = ops.take("mlp_residual");
  if (moe_) {
    moe_backward(ctx, ops, Nr, s.norm2_out.data(), dout, moe_weights(), moe_grads(), s.moe, dn2.data());
  } else {
    const long Fl = ctx.ffn_local;
    const OpHandle exit = ctx.tp_exit_grad_op(ops, "mlp_reducescatter"), down = ops.take("mlp_down"),
                   down_w = ops.take("mlp_down", true), act = ops.take("mlp_act"), up = ops.take("mlp_up"),
                   up_w = ops.take("mlp_up", true), enter = ctx.tp_enter_grad_op(ops, "mlp_allgather", "mlp_allreduce");
    TrackedBuffer<T> dfull(mem, Bf, N * H), dact(mem, Bf, N * Fl), dgate(mem, Bf, N * Fl), dup(mem, Bf, swiglu_ ? N * Fl : 0);
    ctx.exit_tp_backward(exit, dout, dfull.data());
    ctx.gemm(down, false, true, N, Fl, H, dfull.data(), params_->weight(w_down_), T(0), dact.data());
    ctx.gemm(down_w, true, false, Fl, H, N, s.act.data(), dfull.data(), T(1), params_->grad(w_down_));
    {
      OpScope timer(act);
      if (swiglu_) swiglu_backward_ref(dact.data(), s.gate.data(), s.up.data(), dgate.data(), dup.data(), N * Fl);
      else gelu_backward_ref(dact.data(), s.gate.data(), dgate.data(), N * Fl);
    }
    // Under SP the weight gradient needs the gathered input again (Megatron re-gathers the saved
    // shard); the program prices only the gradient's reduce-scatter under this op.
    TrackedBuffer<T> full;
    const T* mlp_in = gathered(ctx, enter, s.norm2_out, full);
    ctx.gemm(up_w, true, false, H, Fl, N, mlp_in, dgate.data(), T(1), params_->grad(w_gate_));
    ctx.gemm(up, false, true, N, H, Fl, dgate.data(), params_->weight(w_gate_), T(0), dfull.data());
    if (swiglu_) {
      ctx.gemm(up_w, true, false, H, Fl, N, mlp_in, dup.data(), T(1), params_->grad(w_up_));
      ctx.gemm(up, false, true, N, H, Fl, dup.data(), params_->weight(w_up_), T(1), dfull.data());
    }
    full.free();
    ctx.enter_tp_backward(enter, dfull.data(), dn2.data());
  }
  norm_backward(ctx, ops.take("mlp_norm"), norm2_w_, norm2_b_, dn2.data(), s.h.data(), s.norm2_mean.data(),
                s.norm2_rstd.data(), dh.data(), Nr);
  {
    OpScope timer(mlp_residual);
    add_into(dh.data(), dout, Nr * H);
  }
  // Attention block.
  {
    const OpHandle residual = ops.take("attn_residual"), exit = ctx.tp_exit_grad_op(ops, "attn_reducescatter"),
                   out_proj = ops.take("out_proj"), out_proj_w = ops.take("out_proj", true);
    TrackedBuffer<T> dfull(mem, Bf, N * H), dattn(mem, Bf, N * hl * d), dq(mem, Bf, N * hl * d), dk(mem, Bf, N * kvl * d),
        dv(mem, Bf, N * kvl * d), dpre(mem, Bf, N * hl * d);
    ctx.exit_tp_backward(exit, dh.data(), dfull.data());
    ctx.gemm(out_proj, false, true, N, hl * d, H, dfull.data(), params_->weight(wo_), T(0), dattn.data());
    ctx.gemm(out_proj_w, true, false, hl * d, H, N, s.attn_out.data(), dfull.data(), T(1), params_->grad(wo_));
    const OpHandle attention = ops.take("flash_attention"), exchange = ops.take_collective("cp_kv_exchange");
    ring_attention_backward(ctx, attention, exchange, dattn.data(), s.q.data(), s.k.data(), s.v.data(), s.attn_out.data(),
                            s.lse.data(), dq.data(), dk.data(), dv.data());
    const OpHandle rope = ops.take("rope"), qkv = ops.take("qkv_proj"), qkv_w = ops.take("qkv_proj", true),
                   enter = ctx.tp_enter_grad_op(ops, "attn_allgather", "attn_allreduce");
    TrackedBuffer<T> full;
    const T* attn_in = gathered(ctx, enter, s.n1, full);
    {
      OpScope timer(rope);
      rope_backward_ref(dq.data(), dpre.data(), ctx.positions.data(), int(N), int(hl), int(d), ctx.rotary_dim, ctx.rope_theta);
    }
    ctx.gemm(qkv_w, true, false, H, hl * d, N, attn_in, dpre.data(), T(1), params_->grad(wq_));
    ctx.gemm(qkv, false, true, N, H, hl * d, dpre.data(), params_->weight(wq_), T(0), dfull.data());
    {
      OpScope timer(rope);
      rope_backward_ref(dk.data(), dpre.data(), ctx.positions.data(), int(N), int(kvl), int(d), ctx.rotary_dim, ctx.rope_theta);
    }
    ctx.gemm(qkv_w, true, false, H, kvl * d, N, attn_in, dpre.data(), T(1), params_->grad(wk_));
    ctx.gemm(qkv, false, true, N, H, kvl * d, dpre.data(), params_->weight(wk_), T(1), dfull.data());
    ctx.gemm(qkv_w, true, false, H, kvl * d, N, attn_in, dv.data(), T(1), params_->grad(wv_));
    ctx.gemm(qkv, false, true, N, H, kvl * d, dv.data(), params_->weight(wv_), T(1), dfull.data());
    full.free();
    TrackedBuffer<T> dn1(mem, Bf, Nr * H);
    ctx.enter_tp_backward(enter, dfull.data(), dn1.data());
    norm_backward(ctx, ops.take("attn_norm"), norm1_w_, norm1_b_, dn1.data(), s.x.data(), s.norm1_mean.data(),
                  s.norm1_rstd.data(), dx, Nr);
    OpScope timer(residual);
    add_into(dx, dh.data(), Nr * H);
  }
  ops.finish();
  s = LayerSaved<T>();
  Communicator* tp = ctx.sp ? &ctx.tp() : nullptr;
  ctx.release_grads(params_.get(), tp);
  ctx.release_grads(experts_.get(), tp);
  params_->release_weights();
  if (experts_) experts_->release_weights();
}

template class TransformerLayer<float>;
template class TransformerLayer<double>;

}  // namespace sixfold
