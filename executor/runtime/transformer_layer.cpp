#include "executor/runtime/transformer_layer.hpp"

#include <cmath>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "common/error.hpp"
#include "executor/runtime/param_init.hpp"
#include "executor/runtime/ring_attention.hpp"

namespace sixfold {

namespace {
constexpr double kInitStd = 0.02;  // GPT-2 / Megatron init_method_std
}  // namespace

template <class T>
TransformerLayer<T>::TransformerLayer(const ExecContext& ctx, int layer, std::uint64_t seed, bool kept)
    : layer_(layer), kept_(kept) {
  const ModelSpec& m = *ctx.model;
  const int tp_rank = ctx.groups->me.tp;
  moe_ = m.is_moe_layer(layer);
  swiglu_ = m.activation == Activation::SwiGLU;
  squared_relu_ = m.activation == Activation::SquaredReLU;
  layernorm_ = m.norm == NormKind::LayerNorm;
  const long H = ctx.hidden, d = ctx.head_dim, hl = ctx.heads_local, kvl = ctx.kv_heads_local;
  const std::string p = "layer" + std::to_string(layer) + ".";
  const double out_std = kInitStd / std::sqrt(2.0 * m.layers);
  params_ = std::make_unique<ParamGroup<T>>(p + "dense", ctx.layout->zero, ctx.groups->dp_shard.get(), *ctx.backend);
  params_->replicate_over(ctx.groups->dp_replica.get(), ctx.dp.grad_replica_reduce.id);
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
    experts_ = std::make_unique<ParamGroup<T>>(p + "experts", ctx.layout->zero, ctx.groups->expert_dp.get(), *ctx.backend,
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
    ctx.ops<T>().layernorm_forward(in, params_->weight(w), params_->weight(b), out, mean, rstd, int(rows),
                                   int(ctx.hidden), T(ctx.norm_eps));
  else
    ctx.ops<T>().rmsnorm_forward(in, params_->weight(w), out, rstd, int(rows), int(ctx.hidden), T(ctx.norm_eps));
}

template <class T>
void TransformerLayer<T>::norm_backward(const ExecContext& ctx, const OpHandle& op, int w, int b, const T* dy,
                                        const T* x, const T* mean, const T* rstd, T* dx, long rows) {
  OpScope timer(op);
  if (layernorm_)
    ctx.ops<T>().layernorm_backward(dy, x, params_->weight(w), mean, rstd, dx, params_->grad(w), params_->grad(b),
                                    int(rows), int(ctx.hidden));
  else
    ctx.ops<T>().rmsnorm_backward(dy, x, params_->weight(w), rstd, dx, params_->grad(w), int(rows), int(ctx.hidden));
}

template <class T>
const T* TransformerLayer<T>::gathered(const ExecContext& ctx, const OpHandle& op, const TrackedBuffer<T>& shard,
                                      TrackedBuffer<T>& full, MemoryCategory category) const {
  if (!ctx.sp) return shard.data();
  full.reset(ctx.memory(), category, ctx.rows * ctx.hidden);
  ctx.enter_tp_forward(op, shard.data(), full.data());
  return full.data();
}

namespace {
bool named_any(const Op& op, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (named(op, n)) return true;
  return false;
}
// Whether the list holds an op of this name in this pass (a TP collective over one rank is left out).
bool lists(const ProgramOpList& list, const char* name, bool backward) {
  for (const ProgramOp& p : list.ops)
    if (p.op->backward == backward && named(*p.op, name)) return true;
  return false;
}
}  // namespace

template <class T>
struct TransformerLayer<T>::Forward {
  // A forward run over `list` (the forward, or the backward's re-run ops).
  Forward(const ExecContext& ctx, const ProgramOpList& list, LayerSaved<T>& saved_, T* out_, MemoryCategory saved_as,
          MemoryCategory core_as)
      : s(saved_), out(out_), saved(saved_as), core(core_as),
        attn_exit(lists(list, ctx.sp ? "attn_reducescatter" : "attn_allreduce", false)),
        mlp_exit(lists(list, ctx.sp ? "mlp_reducescatter" : "mlp_allreduce", false)) {}
  LayerSaved<T>& s;
  T* out;                      // the layer output (a discarded buffer when the backward re-runs it all)
  MemoryCategory saved, core;  // what the ops keep: Activations, or Buffers when recompute drops it
  bool attn_exit, mlp_exit;    // the list holds the row-parallel GEMMs' TP collectives (tp > 1)
  const T* attn_in = nullptr;  // the QKV GEMMs' input: the norm output, gathered under SP
  const T* mlp_in = nullptr;
  TrackedBuffer<T> full, pre_q, pre_k, partial, scratch;
  std::optional<MoeBlock<T>> moe;  // an MoE layer's block, from its first op on
};

template <class T>
struct TransformerLayer<T>::Backward {
  LayerSaved<T>& s;
  const T* dout;
  T* dx;
  bool grads_acquired = false;
  OpHandle mlp_residual{}, attn_residual{};  // their adds run where the branches meet (after each norm)
  // dfull: the row-parallel GEMM's output gradient (gathered under SP); dinput: the column-parallel
  // GEMMs' input gradient before its TP reduction; dn: after it.
  TrackedBuffer<T> dfull{}, dinput{}, dn{}, dh{}, dact{}, dgate{}, dup{}, full{}, dattn{}, dq{}, dk{}, dv{}, dpre_q{}, dpre_k{};
  std::optional<MoeBlock<T>> moe{};
};

template <class T>
void TransformerLayer<T>::run(const ExecContext& ctx, OpCursor& ops, Forward& f, Backward* b) {
  bool in_backward = false;
  walk(ops, [&](const Op& op) {
    if (op.backward && !in_backward) {  // the re-run forward's transient buffers are done with
      in_backward = true;
      for (TrackedBuffer<T>* t : {&f.full, &f.pre_q, &f.pre_k, &f.partial, &f.scratch}) t->free();
    }
    if (!op.backward) forward_op(ctx, ops, op, f);
    else if (b) backward_op(ctx, ops, op, *b);
  });
}

template <class T>
void TransformerLayer<T>::forward(const ExecContext& ctx, const T* x, T* out, LayerSaved<T>& s) {
  ctx.acquire_weights(params_.get());
  ctx.acquire_weights(experts_.get());
  s.x.reset(ctx.memory(), MemoryCategory::Activations, ctx.rows_residual * ctx.hidden);
  ctx.copy(s.x.data(), x, s.x.size());
  const Recompute policy = this->policy(ctx);
  // Tensors that outlive the forward are activations; those the recompute policy drops (all but
  // the input under full, the log-sum-exp under selective) are transient buffers.
  const auto Bf = MemoryCategory::Buffers;
  const ProgramOpList& list = ctx.program->layer(moe_, true, kept_);
  Forward f(ctx, list, s, out, policy == Recompute::Full ? Bf : MemoryCategory::Activations,
            policy == Recompute::None ? MemoryCategory::Activations : Bf);
  OpCursor ops(*ctx.backend, list);
  run(ctx, ops, f, nullptr);
  s.complete = true;
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
void TransformerLayer<T>::forward_op(const ExecContext& ctx, OpCursor& ops, const Op& op, Forward& f) {
  MemoryTracker* mem = ctx.memory();
  LayerSaved<T>& s = f.s;
  const auto Bf = MemoryCategory::Buffers, A = f.saved;
  const long H = ctx.hidden, N = ctx.rows, Nr = ctx.rows_residual, d = ctx.head_dim;
  const long hl = ctx.heads_local, kvl = ctx.kv_heads_local, Fl = ctx.ffn_local;
  if (named(op, "attn_norm")) {
    s.norm1_mean.reset(mem, A, layernorm_ ? Nr : 0);
    s.norm1_rstd.reset(mem, A, Nr);
    s.n1.reset(mem, A, Nr * H);
    norm_forward(ctx, ops.take(op.name), norm1_w_, norm1_b_, s.x.data(), s.n1.data(), s.norm1_mean.data(),
                 s.norm1_rstd.data(), Nr);
    f.attn_in = s.n1.data();
  } else if (named(op, "attn_allgather")) {
    // Kept for the weight gradient where SP keeps the gathered input (torchtitan), else transient.
    f.attn_in = ctx.sp_keeps_gathered ? gathered(ctx, ops.take(op.name), s.n1, s.attn_full, A)
                                      : gathered(ctx, ops.take(op.name), s.n1, f.full);
  } else if (named(op, "qkv_proj")) {
    const OpHandle qkv = ops.take(op.name);
    s.q.reset(mem, A, N * hl * d);
    s.k.reset(mem, A, N * kvl * d);
    s.v.reset(mem, A, N * kvl * d);
    f.pre_q.reset(mem, Bf, N * hl * d);
    f.pre_k.reset(mem, Bf, N * kvl * d);
    ctx.gemm(qkv, false, false, N, hl * d, H, f.attn_in, params_->weight(wq_), T(0), f.pre_q.data());
    ctx.gemm(qkv, false, false, N, kvl * d, H, f.attn_in, params_->weight(wk_), T(0), f.pre_k.data());
    ctx.gemm(qkv, false, false, N, kvl * d, H, f.attn_in, params_->weight(wv_), T(0), s.v.data());
    f.full.free();
  } else if (named(op, "rope")) {
    OpScope timer(ops.take(op.name));
    ctx.ops<T>().rope_forward(f.pre_q.data(), s.q.data(), ctx.positions.data(), int(N), int(hl), int(d), ctx.rotary_dim, ctx.rope_theta);
    ctx.ops<T>().rope_forward(f.pre_k.data(), s.k.data(), ctx.positions.data(), int(N), int(kvl), int(d), ctx.rotary_dim, ctx.rope_theta);
    f.pre_q.free();
    f.pre_k.free();
  } else if (named_any(op, {"flash_attention", "cp_kv_exchange"})) {
    // The ring attention with its K/V exchange (either may come first in the list). A re-run
    // for selective recompute writes its output aside: the saved one is the projection's input.
    const OpHandle exchange = ops.take_collective("cp_kv_exchange"), attention = ops.take("flash_attention");
    T* out = nullptr;
    if (s.attn_out.empty()) {
      s.attn_out.reset(mem, A, N * hl * d);
      out = s.attn_out.data();
    } else {
      f.scratch.reset(mem, Bf, N * hl * d);
      out = f.scratch.data();
    }
    s.lse.reset(mem, f.core, long(ctx.micro_batch) * hl * ctx.seq_local);
    ring_attention_forward(ctx, attention, exchange, s.q.data(), s.k.data(), s.v.data(), out, s.lse.data());
  } else if (named(op, "out_proj")) {
    f.partial.reset(mem, Bf, N * H);
    ctx.gemm(ops.take(op.name), false, false, N, H, hl * d, s.attn_out.data(), params_->weight(wo_), T(0), f.partial.data());
    s.h.reset(mem, A, Nr * H);
    if (!f.attn_exit) ctx.exit_tp_forward(OpHandle{}, f.partial.data(), s.h.data());  // tp = 1
  } else if (named_any(op, {"attn_allreduce", "attn_reducescatter"})) {
    ctx.exit_tp_forward(ops.take(op.name), f.partial.data(), s.h.data());
  } else if (named(op, "attn_residual")) {
    OpScope timer(ops.take(op.name));
    ctx.ops<T>().add(s.h.data(), s.x.data(), Nr * H);
  } else if (named(op, "mlp_norm")) {
    s.norm2_out.reset(mem, A, Nr * H);
    s.norm2_mean.reset(mem, A, layernorm_ ? Nr : 0);
    s.norm2_rstd.reset(mem, A, Nr);
    norm_forward(ctx, ops.take(op.name), norm2_w_, norm2_b_, s.h.data(), s.norm2_out.data(), s.norm2_mean.data(),
                 s.norm2_rstd.data(), Nr);
    f.mlp_in = s.norm2_out.data();
  } else if (named(op, "mlp_allgather")) {
    f.mlp_in = ctx.sp_keeps_gathered ? gathered(ctx, ops.take(op.name), s.norm2_out, s.mlp_full, A)
                                     : gathered(ctx, ops.take(op.name), s.norm2_out, f.full);
  } else if (named(op, "mlp_up")) {
    const OpHandle up = ops.take(op.name);
    s.gate.reset(mem, A, N * Fl);
    s.act.reset(mem, A, N * Fl);
    ctx.gemm(up, false, false, N, Fl, H, f.mlp_in, params_->weight(w_gate_), T(0), s.gate.data());
    if (swiglu_) {
      s.up.reset(mem, A, N * Fl);
      ctx.gemm(up, false, false, N, Fl, H, f.mlp_in, params_->weight(w_up_), T(0), s.up.data());
    }
    f.full.free();
  } else if (named(op, "mlp_act")) {
    OpScope timer(ops.take(op.name));
    if (swiglu_) ctx.ops<T>().swiglu_forward(s.gate.data(), s.up.data(), s.act.data(), N * Fl);
    else if (squared_relu_) ctx.ops<T>().squared_relu_forward(s.gate.data(), s.act.data(), N * Fl);
    else ctx.ops<T>().gelu_forward(s.gate.data(), s.act.data(), N * Fl);
  } else if (named(op, "mlp_down")) {
    f.partial.reset(mem, Bf, N * H);
    ctx.gemm(ops.take(op.name), false, false, N, H, Fl, s.act.data(), params_->weight(w_down_), T(0), f.partial.data());
    if (!f.mlp_exit) ctx.exit_tp_forward(OpHandle{}, f.partial.data(), f.out);  // tp = 1
  } else if (named_any(op, {"mlp_allreduce", "mlp_reducescatter"})) {
    ctx.exit_tp_forward(ops.take(op.name), f.partial.data(), f.out);
  } else if (named(op, "mlp_residual")) {
    OpScope timer(ops.take(op.name));
    ctx.ops<T>().add(f.out, s.h.data(), Nr * H);
  } else if (moe_) {  // the MoE block's ops (an op it does not know is left to run() to report)
    if (!f.moe) f.moe.emplace(ctx, Nr, s.norm2_out.data(), moe_weights(), f.out, s.moe, A);
    f.moe->forward_op(ops, op);
  }
}

template <class T>
void TransformerLayer<T>::backward(const ExecContext& ctx, const T* dout, T* dx, LayerSaved<T>& s) {
  ctx.acquire_weights(params_.get());
  ctx.acquire_weights(experts_.get());
  MemoryTracker* mem = ctx.memory();
  const auto Bf = MemoryCategory::Buffers;
  const ProgramOpList& list = ctx.program->layer(moe_, false, kept_);
  // The list starts with the forward ops the recompute policy re-runs: into a discarded output
  // under full recompute (everything but the input was dropped), the core attention alone under
  // selective.
  TrackedBuffer<T> discard(mem, Bf, s.complete ? 0 : ctx.rows_residual * ctx.hidden);
  const Recompute policy = this->policy(ctx);
  Forward f(ctx, list, s, discard.data(), policy == Recompute::Full ? Bf : MemoryCategory::Activations, Bf);
  // The backward's TP collectives, where the list has them (tp > 1): the exits' (SP: the output
  // gradient's all-gather; none without SP) and the entries' (SP: reduce-scatter; all-reduce
  // without SP). Without them the handlers copy (output_grad, input_grad).
  Backward b{.s = s, .dout = dout, .dx = dx};
  OpCursor ops(*ctx.backend, list);
  run(ctx, ops, f, &b);
  s = LayerSaved<T>();
  Communicator* tp = ctx.sp ? &ctx.tp() : nullptr;
  ctx.release_grads(params_.get(), tp);
  ctx.release_grads(experts_.get(), tp);
  params_->release_weights();
  if (experts_) experts_->release_weights();
}

template <class T>
void TransformerLayer<T>::backward_op(const ExecContext& ctx, OpCursor& ops, const Op& op, Backward& b) {
  MemoryTracker* mem = ctx.memory();
  LayerSaved<T>& s = b.s;
  const auto Bf = MemoryCategory::Buffers;
  const long H = ctx.hidden, N = ctx.rows, Nr = ctx.rows_residual, d = ctx.head_dim;
  const long hl = ctx.heads_local, kvl = ctx.kv_heads_local, Fl = ctx.ffn_local;
  if (!b.grads_acquired) {  // after the re-run forward: gradients are held from the first backward op on
    params_->acquire_grads();
    if (experts_) experts_->acquire_grads();
    b.grads_acquired = true;
  }
  // The row-parallel GEMMs' output gradient: all-gathered under SP (the exit's backward op), the
  // residual's gradient itself otherwise.
  auto output_grad = [&](const OpHandle& exit, const T* grad) {
    b.dfull.reset(mem, Bf, N * H);
    ctx.exit_tp_backward(exit, grad, b.dfull.data());
  };
  // The column-parallel GEMMs' input gradient reduced over TP into dn (the entry's backward op;
  // a copy at tp = 1).
  auto input_grad = [&](const OpHandle& enter) {
    b.dn.reset(mem, Bf, Nr * H);
    ctx.enter_tp_backward(enter, b.dinput.data(), b.dn.data());
    b.dinput.free();
    b.full.free();
  };
  // The saved norm output for a weight gradient: under SP the gathered input the forward kept
  // (ExecContext::sp_keeps_gathered), or the shard re-gathered by the program's regather op before
  // the input-gradient GEMM (Megatron's SP linear), timed under that op.
  auto wgrad_input = [&](const TrackedBuffer<T>& shard, const TrackedBuffer<T>& kept) -> const T* {
    if (!ctx.sp) return shard.data();
    if (ctx.sp_keeps_gathered) return kept.data();
    if (b.full.empty()) throw Error("the step program holds no re-gather of the SP input before this weight gradient");
    return b.full.data();
  };
  const bool wg = op.weight_grad;
  if (named(op, "mlp_residual")) {
    b.mlp_residual = ops.take(op.name);
  } else if (named(op, "mlp_reducescatter")) {
    output_grad(ops.take(op.name), b.dout);
  } else if (named(op, "mlp_down")) {
    if (b.dfull.empty()) output_grad(OpHandle{}, b.dout);
    if (!wg) {
      b.dact.reset(mem, Bf, N * Fl);
      ctx.gemm(ops.take(op.name), false, true, N, Fl, H, b.dfull.data(), params_->weight(w_down_), T(0), b.dact.data());
    } else {
      ctx.gemm(ops.take(op.name, true), true, false, Fl, H, N, s.act.data(), b.dfull.data(), T(1), params_->grad(w_down_));
    }
  } else if (named(op, "mlp_regather")) {
    gathered(ctx, ops.take(op.name), s.norm2_out, b.full);
  } else if (named(op, "attn_regather")) {
    gathered(ctx, ops.take(op.name), s.n1, b.full);
  } else if (named(op, "mlp_act")) {
    OpScope timer(ops.take(op.name));
    b.dgate.reset(mem, Bf, N * Fl);
    b.dup.reset(mem, Bf, swiglu_ ? N * Fl : 0);
    if (swiglu_) ctx.ops<T>().swiglu_backward(b.dact.data(), s.gate.data(), s.up.data(), b.dgate.data(), b.dup.data(), N * Fl);
    else if (squared_relu_) ctx.ops<T>().squared_relu_backward(b.dact.data(), s.gate.data(), b.dgate.data(), N * Fl);
    else ctx.ops<T>().gelu_backward(b.dact.data(), s.gate.data(), b.dgate.data(), N * Fl);
    b.dact.free();
  } else if (named(op, "mlp_up")) {
    if (!wg) {
      const OpHandle up = ops.take(op.name);
      b.dinput.reset(mem, Bf, N * H);
      ctx.gemm(up, false, true, N, H, Fl, b.dgate.data(), params_->weight(w_gate_), T(0), b.dinput.data());
      if (swiglu_) ctx.gemm(up, false, true, N, H, Fl, b.dup.data(), params_->weight(w_up_), T(1), b.dinput.data());
    } else {
      const OpHandle up_w = ops.take(op.name, true);
      const T* mlp_in = wgrad_input(s.norm2_out, s.mlp_full);
      ctx.gemm(up_w, true, false, H, Fl, N, mlp_in, b.dgate.data(), T(1), params_->grad(w_gate_));
      if (swiglu_) ctx.gemm(up_w, true, false, H, Fl, N, mlp_in, b.dup.data(), T(1), params_->grad(w_up_));
      s.mlp_full.free();
    }
  } else if (named_any(op, {"mlp_allgather", "mlp_allreduce"})) {
    input_grad(ops.take(op.name));
  } else if (named(op, "mlp_norm")) {
    if (b.dn.empty()) input_grad(OpHandle{});  // tp = 1
    b.dfull.free();
    b.dgate.free();
    b.dup.free();
    b.dh.reset(mem, Bf, Nr * H);
    norm_backward(ctx, ops.take(op.name), norm2_w_, norm2_b_, b.dn.data(), s.h.data(), s.norm2_mean.data(),
                  s.norm2_rstd.data(), b.dh.data(), Nr);
    b.dn.free();
    OpScope timer(b.mlp_residual);
    ctx.ops<T>().add(b.dh.data(), b.dout, Nr * H);
  } else if (named(op, "attn_residual")) {
    b.attn_residual = ops.take(op.name);
  } else if (named(op, "attn_reducescatter")) {
    output_grad(ops.take(op.name), b.dh.data());
  } else if (named(op, "out_proj")) {
    if (b.dfull.empty()) output_grad(OpHandle{}, b.dh.data());
    if (!wg) {
      b.dattn.reset(mem, Bf, N * hl * d);
      ctx.gemm(ops.take(op.name), false, true, N, hl * d, H, b.dfull.data(), params_->weight(wo_), T(0), b.dattn.data());
    } else {
      ctx.gemm(ops.take(op.name, true), true, false, hl * d, H, N, s.attn_out.data(), b.dfull.data(), T(1), params_->grad(wo_));
    }
  } else if (named_any(op, {"flash_attention", "cp_kv_exchange"})) {
    const OpHandle attention = ops.take("flash_attention"), exchange = ops.take_collective("cp_kv_exchange");
    b.dfull.free();
    b.dq.reset(mem, Bf, N * hl * d);
    b.dk.reset(mem, Bf, N * kvl * d);
    b.dv.reset(mem, Bf, N * kvl * d);
    ring_attention_backward(ctx, attention, exchange, b.dattn.data(), s.q.data(), s.k.data(), s.v.data(), s.attn_out.data(),
                            s.lse.data(), b.dq.data(), b.dk.data(), b.dv.data());
    b.dattn.free();
  } else if (named(op, "rope")) {
    OpScope timer(ops.take(op.name));
    b.dpre_q.reset(mem, Bf, N * hl * d);
    b.dpre_k.reset(mem, Bf, N * kvl * d);
    ctx.ops<T>().rope_backward(b.dq.data(), b.dpre_q.data(), ctx.positions.data(), int(N), int(hl), int(d), ctx.rotary_dim, ctx.rope_theta);
    ctx.ops<T>().rope_backward(b.dk.data(), b.dpre_k.data(), ctx.positions.data(), int(N), int(kvl), int(d), ctx.rotary_dim, ctx.rope_theta);
    b.dq.free();
    b.dk.free();
  } else if (named(op, "qkv_proj")) {
    if (!wg) {
      const OpHandle qkv = ops.take(op.name);
      b.dinput.reset(mem, Bf, N * H);
      ctx.gemm(qkv, false, true, N, H, hl * d, b.dpre_q.data(), params_->weight(wq_), T(0), b.dinput.data());
      ctx.gemm(qkv, false, true, N, H, kvl * d, b.dpre_k.data(), params_->weight(wk_), T(1), b.dinput.data());
      ctx.gemm(qkv, false, true, N, H, kvl * d, b.dv.data(), params_->weight(wv_), T(1), b.dinput.data());
    } else {
      const OpHandle qkv_w = ops.take(op.name, true);
      const T* attn_in = wgrad_input(s.n1, s.attn_full);
      ctx.gemm(qkv_w, true, false, H, hl * d, N, attn_in, b.dpre_q.data(), T(1), params_->grad(wq_));
      ctx.gemm(qkv_w, true, false, H, kvl * d, N, attn_in, b.dpre_k.data(), T(1), params_->grad(wk_));
      ctx.gemm(qkv_w, true, false, H, kvl * d, N, attn_in, b.dv.data(), T(1), params_->grad(wv_));
      s.attn_full.free();
    }
  } else if (named_any(op, {"attn_allgather", "attn_allreduce"})) {
    input_grad(ops.take(op.name));
  } else if (named(op, "attn_norm")) {
    if (b.dn.empty()) input_grad(OpHandle{});  // tp = 1
    b.dpre_q.free();
    b.dpre_k.free();
    b.dv.free();
    norm_backward(ctx, ops.take(op.name), norm1_w_, norm1_b_, b.dn.data(), s.x.data(), s.norm1_mean.data(),
                  s.norm1_rstd.data(), b.dx, Nr);
    b.dn.free();
    OpScope timer(b.attn_residual);
    ctx.ops<T>().add(b.dx, b.dh.data(), Nr * H);
  } else if (moe_) {  // the MoE block's ops; its input gradient goes to dn, as the MLP's does
    if (!b.moe) {
      b.dn.reset(mem, Bf, Nr * H);
      b.moe.emplace(ctx, Nr, s.norm2_out.data(), b.dout, moe_weights(), moe_grads(), s.moe, b.dn.data());
    }
    b.moe->backward_op(ops, op);
  }
}

template class TransformerLayer<float>;
template class TransformerLayer<double>;

}  // namespace sixfold
