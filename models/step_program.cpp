#include "models/step_program.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sixfold {

namespace {

// Everything the expansion of one layer needs, derived once from model + layout + workload.
struct Dims {
  Count b, s, h, tokens, sp_tokens;  // tokens = b*s/cp on this rank; sp_tokens = tokens/tp under SP
  int tp, cp, ep, etp;
  bool sp;
  Count act;                         // activation element width
  Count gemm_input;                  // width of a GEMM input kept for its backward (fp8: the fp8 copy)
  Count gemm_input_tokens;           // rows of a TP GEMM's input kept for its backward (see make_dims)
  Count colwise_input;               // width of a column-parallel GEMM's input kept (see make_dims)
  Count glu_input;                   // width of the SwiGLU input kept for its backward
  bool moe_probs_in_activation;      // experts weight by the routing probabilities in their SwiGLU
  bool cp_gathers_kv;                // CP attention all-gathers K and V (FrameworkTraits::cp_gathers_kv)
  bool eager_composites;             // norms, RoPE and SwiGLU as eager PyTorch ops (eager_composites)
  bool deepep_dispatch;              // Workload::deepep_dispatch
  bool tp_overlap_single_matmul;     // async TP fuses a reduce-scatter only with one matmul's output
  bool tp_gather_unfused;            // async TP fuses no all-gather with its matmul (torchao's rowwise fp8)
  Count tp_gather_width;             // bytes an element of the SP all-gathers into column- and row-parallel GEMMs
  bool sp_dim1_copies;               // SP collectives along dim 1 of [b, s, h] copy their tensor (tp_enter)
  bool tp_overlap;                   // Layout::tp_overlap: fused collectives make no such copy
  int tp_rs_chunks;                  // a fused reduce-scatter's chunks (FrameworkTraits::tp_overlap_rs_chunks)
  bool tp_rs_tail, tp_rs_local_sum;  // its last chunk after the GEMM; the partials' sum after it
  int heads_rank, kv_heads_rank;     // heads on this rank
  int qk_dim, v_dim;
};

Dims make_dims(const ModelSpec& m, const Layout& l, const Workload& w) {
  Dims d{};
  d.b = l.micro_batch;
  d.s = w.seq;
  d.h = m.hidden;
  d.tp = l.tp;
  d.cp = l.cp;
  d.ep = l.ep;
  d.etp = l.etp;
  d.sp = l.sp;
  d.tokens = d.b * d.s / l.cp;
  d.sp_tokens = l.sp ? d.tokens / l.tp : d.tokens;
  d.act = (w.dtype == Dtype::FP32 || w.dtype == Dtype::TF32) ? 4 : 2;  // fp8 runs keep bf16 activations
  // FP8 GEMMs (TransformerEngine) keep the fp8-cast input for the weight gradient, 1 byte wide.
  d.gemm_input = w.dtype == Dtype::FP8 ? 1 : d.act;
  d.colwise_input = d.gemm_input;
  d.glu_input = w.fp8_activation_input_store ? 1 : d.act;
  const FrameworkTraits fw = framework_traits(w.framework);
  d.moe_probs_in_activation = fw.moe_probs_in_activation;
  d.cp_gathers_kv = l.cp > 1 && fw.cp_gathers_kv;
  d.eager_composites = fw.eager_pointwise_composites && !w.compile;
  d.deepep_dispatch = w.deepep_dispatch;
  d.tp_overlap_single_matmul = fw.tp_overlap_single_matmul;
  d.tp_gather_width = d.act;
  // torchtitan shards the sequence as dim 1 of its [b, s, h] activations (Shard(1)); NCCL gathers
  // and scatters along dim 0, so PyTorch's functional collectives copy: all_gather_tensor runs
  // torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim) on the gathered tensor, and
  // reduce_scatter_tensor torch.cat(torch.chunk(input, group_size, dim=scatter_dim)) on its input
  // (torch/distributed/_functional_collectives.py, in the torch of every torchtitan row). Async TP's
  // fused all-gather-matmul and matmul-reduce-scatter take the dimension themselves (the inductor
  // pass matches the split+cat with the collective, torch/_inductor/fx_passes/micro_pipeline_tp.py);
  // a collective it leaves unfused keeps its copy (layout_copy). Megatron keeps [s, b, h] and
  // gathers dim 0.
  d.sp_dim1_copies = w.framework == Framework::Torchtitan && l.sp && l.tp > 1;
  d.tp_overlap = l.tp_overlap;
  d.tp_rs_chunks = fw.tp_overlap_rs_chunks > 0 ? fw.tp_overlap_rs_chunks : l.tp;
  d.tp_rs_tail = fw.tp_overlap_rs_tail;
  d.tp_rs_local_sum = fw.tp_overlap_rs_local_sum;
  if (w.dtype == Dtype::FP8 && w.framework == Framework::Torchtitan) {
    // torchao's Float8Linear saves its high-precision input and casts again in the backward
    // (matmul_with_hp_or_float8_args saves input_hp); under TP with the tensorwise recipe the
    // column-parallel inputs arrive already in fp8 (Float8ColwiseParallel casts before the
    // all-gather) and are saved so. The rowwise recipes run torchtitan's plain Colwise/
    // RowwiseParallel (parallelize_llama.py: enable_float8_tensorwise_tp only for tensorwise):
    // the input is gathered and kept in bf16. Async TP's micro-pipeline pass fuses the
    // matmul-reduce-scatters of rowwise-scaled matmuls (pytorch #149247) but not their
    // all-gather-matmuls (pytorch #149990, open through torchtitan's June 2025 benchmark).
    d.gemm_input = d.act;
    d.colwise_input = l.tp > 1 && !float8_rowwise(w) ? 1 : d.act;
    d.tp_gather_unfused = float8_rowwise(w);
    // Tensorwise: Float8ColwiseParallel casts the sequence shard before the forward all-gather and
    // Float8RowwiseParallel the output gradient before the backward's (torchao
    // float8/float8_tensor_parallel.py): those gathers move fp8; the reduce-scatters stay bf16.
    if (l.tp > 1 && !float8_rowwise(w)) d.tp_gather_width = 1;
  }
  // Under SP, Megatron keeps the sequence-sharded input of the column-parallel GEMMs and gathers
  // it again in the backward; DTensor's autograd (torchtitan) keeps the gathered input.
  d.gemm_input_tokens = fw.sp_keeps_gathered_input ? d.tokens : d.sp_tokens;
  d.heads_rank = m.heads / l.tp;
  // GQA with tp > kv_heads replicates KV heads (Megatron): at least one per rank.
  d.kv_heads_rank = m.mla.enabled ? d.heads_rank : std::max(1, m.kv_heads / l.tp);
  d.qk_dim = m.q_head_dim();
  d.v_dim = m.v_head_dim();
  return d;
}

Op gemm(const char* name, OpClass c, Count m, Count n, Count k, Count batch = 1) {
  Op op;
  op.name = name;
  op.kind = OpKind::Gemm;
  op.op_class = c;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2.0 * double(m) * double(n) * double(k) * double(batch);
  // Attention's batched GEMMs and the router are no linear layer an fp8 run converts.
  op.high_precision = c == OpClass::Attention || c == OpClass::Router;
  return op;
}

Op memory(const char* name, OpClass c, Bytes bytes) {
  Op op;
  op.name = name;
  op.kind = OpKind::Memory;
  op.op_class = c;
  op.bytes = bytes;
  return op;
}

// DeepSpeed's BF16_Optimizer after each micro-batch's backward (bf16_optimizer_runs): for every
// parameter tensor a cast of its bf16 gradient to fp32 (read 2 bytes, write 4) and an add into its
// fp32 gradient (read 4 + 4, write 4), 18 bytes a parameter and two kernels a tensor.
void add_fp32_grad_accumulation(std::vector<Op>& backward, Count params, int tensors) {
  Op op = memory("grad_accumulate_fp32", OpClass::Elementwise, Bytes(18 * double(params)));
  op.kernels = 2 * tensors;
  op.backward = true;
  backward.push_back(op);
}

Op collective(const char* name, Group g, Collective c, Bytes message, int size) {
  return collective_op(name, g, c, message, size);
}

Op with_saved(Op op, Bytes saved) {
  op.saved = saved;
  return op;
}

// The model's pointwise pieces as eager PyTorch runs them (FrameworkTraits::
// eager_pointwise_composites): one kernel and one pass over memory per ATen op, forward and
// autograd backward, counted per element from the module's code (torchtitan 9dec370) and the
// backward formulas of tools/autograd/derivatives.yaml. `a` is the activation width, 4 the fp32
// the norm and RoPE compute in. Without eager composites each is one fused kernel (the caller's).
struct EagerComposite {
  double forward_bytes, backward_bytes, saved_bytes;  // per element
  int forward_kernels, backward_kernels;
};
// RMSNorm: x.float() (a+4), pow(2) (8), mean (4), + eps and rsqrt (per row), x * r (8),
// type_as (4+a), * weight (2a). Backward: * weight (grad and the weight's row sum, 6a), type_as
// (a+4), x * r (grad 8, the row sum of grad * x 16), rsqrt and mean (the broadcast divide, 4),
// pow (x.pow(1), * 2, * grad: 28), the two gradients of x added (12), float (4+a). It keeps fp32
// x and the bf16 normalized output for the backward.
EagerComposite eager_rms_norm(Count a) {
  const double w = double(a);
  return {4 * w + 28, 8 * w + 76, 4 + w, 8, 15};
}
// Rotary embedding of Q or K: float (a+4), complex multiply by freqs_cis (8), type_as (4+a); the
// backward mirrors it. The multiply keeps only freqs_cis (a buffer).
EagerComposite eager_rope(Count a) { return {2 * double(a) + 16, 2 * double(a) + 16, 0, 3, 3}; }
// SwiGLU, silu(x1) * x3 per FFN element: silu (2a), mul (3a); backward: the mul's two gradients
// (6a), silu_backward (3a). It keeps x1, x3 and silu(x1).
EagerComposite eager_swiglu(Count a) { return {5 * double(a), 9 * double(a), 3 * double(a), 2, 3}; }

Op eager(Op op, const EagerComposite& c, double elements) {
  op.bytes = Bytes(c.forward_bytes * elements);
  op.backward_bytes = Bytes(c.backward_bytes * elements);
  op.kernels = c.forward_kernels;
  op.backward_kernels = c.backward_kernels;
  return op;
}

// A norm over `rows` x h: fused, it reads and writes once and keeps its input; an eager RMSNorm
// as above.
Op norm_op(const char* name, const ModelSpec& m, const Dims& d, Count rows, Count norms = 1) {
  const Count h = d.h, a = d.act;
  const double elements = double(rows) * double(h) * double(norms);
  if (d.eager_composites && m.norm == NormKind::RMSNorm) {
    const EagerComposite c = eager_rms_norm(a);
    Op op = eager(memory(name, OpClass::Norm, 0), c, elements);
    op.kernels *= int(norms), op.backward_kernels *= int(norms);
    return with_saved(op, Bytes(c.saved_bytes * elements));
  }
  return with_saved(memory(name, OpClass::Norm, Bytes(2 * a * elements)), Bytes(double(a) * elements));
}

// A layout copy beside an SP collective (Dims::sp_dim1_copies): `forward` bytes read and written
// in the forward, `backward` in the backward; 0 where that pass makes none (its collective fused).
void layout_copy(std::vector<Op>& ops, Bytes forward, Bytes backward) {
  if (forward <= 0 && backward <= 0) return;
  Op copy = memory("sp_dim1_copy", OpClass::Elementwise, forward);
  if (forward <= 0) copy.kernels = 0, copy.backward_kernels = 1;
  copy.backward_bytes = backward;
  copy.forward_only = backward <= 0;
  ops.push_back(copy);
}

// TP entry/exit of a block: all-gather in / reduce-scatter out under SP, else an all-reduce out.
// Where the column-parallel GEMM after the entry keeps only the sequence shard of its input
// (d.gemm_input_tokens, FrameworkTraits::sp_keeps_gathered_input), its backward gathers the shard
// again as `regather_name` (add_backward).
void tp_enter(std::vector<Op>& ops, const Dims& d, const char* name, const char* regather_name, Count kept_row_bytes) {
  if (d.tp > 1 && d.sp) {
    Op op = collective(name, Group::TP, Collective::AllGather, Bytes(d.tokens * d.h * d.tp_gather_width), d.tp);
    op.backward_message = Bytes(d.tokens * d.h * d.act);  // its backward reduce-scatters bf16 gradients
    // The gather itself (unless async TP cannot fuse it); its backward reduce-scatter either way.
    op.tp_overlappable = !d.tp_gather_unfused;
    op.backward_tp_overlap_only = d.tp_gather_unfused;
    op.backward_tp_overlappable = !d.tp_overlap_single_matmul;
    op.overlap_chunks = d.tp;
    ops.push_back(op);
    if (d.gemm_input_tokens < d.tokens) {
      // The backward's gather moves what the GEMM kept of its input, `kept_row_bytes` a token.
      Op again = collective(regather_name, Group::TP, Collective::AllGather, Bytes(d.tokens * kept_row_bytes), d.tp);
      ops.back().backward_regather = again.name;
      ops.back().regather_message = again.message;
    }
    // The copy of the gathered tensor (read and write), and in the backward that of the gradient
    // before its reduce-scatter (Dims::sp_dim1_copies), each unless async TP fuses its collective.
    if (d.sp_dim1_copies)
      layout_copy(ops, !d.tp_overlap || d.tp_gather_unfused ? Bytes(2 * d.tokens * d.h * d.tp_gather_width) : 0,
                  !d.tp_overlap || d.tp_overlap_single_matmul ? Bytes(2 * d.tokens * d.h * d.act) : 0);
  }
}
void tp_exit(std::vector<Op>& ops, const Dims& d, const char* ar_name, const char* rs_name) {
  if (d.tp <= 1) return;
  if (d.sp && d.sp_dim1_copies)
    // The copy of the partial sums before the reduce-scatter, and in the backward that of the
    // gathered gradient after its all-gather (Dims::sp_dim1_copies), each unless async TP fuses
    // its collective.
    layout_copy(ops, !d.tp_overlap ? Bytes(2 * d.tokens * d.h * d.act) : 0,
                !d.tp_overlap || d.tp_gather_unfused ? Bytes(2 * d.tokens * d.h * d.tp_gather_width) : 0);
  Op op = d.sp ? collective(rs_name, Group::TP, Collective::ReduceScatter, Bytes(d.tokens * d.h * d.act), d.tp)
               : collective(ar_name, Group::TP, Collective::AllReduce, Bytes(d.tokens * d.h * d.act), d.tp);
  op.tp_overlappable = true;
  if (d.sp) op.backward_message = Bytes(d.tokens * d.h * d.tp_gather_width);
  // Its backward all-gathers the output gradient into the input-gradient matmul.
  if (d.sp && d.tp_gather_unfused) op.backward_tp_overlappable = false;
  if (d.sp) {
    op.overlap_chunks = d.tp_rs_chunks;
    op.overlap_tail = d.tp_rs_tail;
    op.overlap_local_sum = d.tp_rs_local_sum;
  }
  // Without SP the output's all-reduce has the identity as its backward (Megatron's
  // reduce_from_tensor_model_parallel_region); its block's input gradient is all-reduced instead
  // (add_tp_input_grads).
  op.forward_only = !d.sp;
  ops.push_back(op);
}

// Without SP a TP block's input is replicated over TP, and each rank's backward yields a part of
// its gradient: the parts are all-reduced after the block's backward, before the backward of the
// norm that opens the block (Megatron's copy_to_tensor_model_parallel_region: identity forward,
// all-reduce backward). For each block of `forward` (a norm, the ops up to the block's output
// all-reduce), the same collective goes into `backward`, searched from `from`.
void add_tp_input_grads(const std::vector<Op>& forward, std::vector<Op>& backward, size_t from) {
  for (size_t i = 0; i < forward.size(); ++i) {
    const Op& exit = forward[i];
    if (!exit.forward_only || exit.group != Group::TP || exit.collective != Collective::AllReduce) continue;
    size_t norm = i;
    while (norm > 0 && forward[norm - 1].op_class != OpClass::Norm) --norm;
    if (norm == 0) continue;  // no norm opens it (the embedding's output): nothing flows back
    const std::string_view name = forward[norm - 1].name;
    for (size_t b = from; b < backward.size(); ++b)
      if (backward[b].op_class == OpClass::Norm && name == backward[b].name) {
        Op reduce = exit;
        reduce.forward_only = false;
        reduce.backward = true;
        backward.insert(backward.begin() + std::ptrdiff_t(b), reduce);
        break;
      }
  }
}

// Ops flagged here are "core attention": dropped from the saved set and recomputed under
// selective recompute (Korthikanti et al. 2022, section 5).
struct CoreRange {
  size_t begin = 0, end = 0;
  Bytes kept = 0;  // bytes saved by core ops that survive selective recompute (its checkpoint's inputs)
  Bytes backward_workspace = 0;  // transient bytes of the core attention's backward
};

// What PyTorch's ring attention (rotate method "allgather") holds at once inside its backward's
// loop over the cp steps (torch distributed/tensor/experimental/_attention.py,
// _templated_ring_attention_backward): the all-gathered K and V of every rank (cp x local, bf16) and
// the local concatenation it was gathered from; fp32 accumulators of dQ, dK and dV
// (convert_to_f32); one step's bf16 dQ, dK, dV; and the fp32 dK, dV being sent round the ring with
// the one received. torchtitan repeats the KV heads before SDPA (repeat_kv in its llama model), so
// K and V are as wide as Q here whatever the GQA grouping.
Bytes ring_allgather_backward_bytes(const Dims& d) {
  const double T = double(d.tokens), heads = double(d.heads_rank);
  const double q = T * heads * d.qk_dim, kv = T * heads * (d.qk_dim + d.v_dim);  // elements
  const double gathered = double(d.cp) * kv * 2 + kv * 2;
  const double fp32_accumulators = (q + kv) * 4;
  const double step_grads = (q + kv) * 2;
  const double ring_grads = 2 * kv * 4;
  return Bytes(gathered + fp32_accumulators + step_grads + ring_grads);
}

CoreRange add_attention(std::vector<Op>& ops, const ModelSpec& m, const Workload& w, const Dims& d) {
  const Count T = d.tokens, Ts = d.sp_tokens, h = d.h, a = d.act;
  ops.push_back(norm_op("attn_norm", m, d, Ts));
  tp_enter(ops, d, "attn_allgather", "attn_regather", d.h * d.colwise_input);
  const Count q_width = Count(d.heads_rank) * d.qk_dim;
  const Count k_width = Count(d.kv_heads_rank) * d.qk_dim;
  const Count v_width = Count(d.kv_heads_rank) * d.v_dim;
  if (m.mla.enabled) {
    const auto& mla = m.mla;
    const Count kv_down = mla.kv_lora_rank + mla.qk_rope_head_dim;
    if (mla.q_lora_rank > 0) {
      ops.push_back(with_saved(gemm("q_down_proj", OpClass::Gemm, T, mla.q_lora_rank, h), Bytes(d.gemm_input_tokens * h * d.colwise_input)));
      ops.push_back(with_saved(gemm("q_up_proj", OpClass::Gemm, T, q_width, mla.q_lora_rank), Bytes(T * mla.q_lora_rank * d.gemm_input)));
    } else {
      ops.push_back(with_saved(gemm("q_proj", OpClass::Gemm, T, q_width, h), Bytes(d.gemm_input_tokens * h * d.colwise_input)));
    }
    ops.push_back(gemm("kv_down_proj", OpClass::Gemm, T, kv_down, h));
    ops.push_back(with_saved(gemm("kv_up_proj", OpClass::Gemm, T, k_width - Count(d.kv_heads_rank) * mla.qk_rope_head_dim + v_width, mla.kv_lora_rank),
                             Bytes(T * mla.kv_lora_rank * d.gemm_input)));
  } else {
    ops.push_back(with_saved(gemm("qkv_proj", OpClass::Gemm, T, q_width + k_width + v_width, h), Bytes(d.gemm_input_tokens * h * d.colwise_input)));
  }
  if (m.rotary_fraction > 0) {
    Op rope = memory("rope", OpClass::Elementwise, Bytes(2 * T * (q_width + k_width) * a));
    if (d.eager_composites) {
      rope = eager(rope, eager_rope(a), double(T) * double(q_width + k_width));
      rope.kernels *= 2, rope.backward_kernels *= 2;  // Q and K each
    }
    ops.push_back(rope);
  }
  // The core attention that selective recompute re-runs; under CP it starts with the ring's K/V
  // exchange, which the recomputed attention runs again (Megatron checkpoints the CP attention
  // call, its P2P ring included).
  CoreRange core;
  core.begin = ops.size();
  if (d.cp_gathers_kv) core.backward_workspace = ring_allgather_backward_bytes(d);
  if (d.cp > 1) {
    // Ring attention: cp-1 exchanges of this rank's K and V, hidden behind the attention compute.
    ops.push_back(collective("cp_kv_exchange", Group::CP, Collective::RingExchange, Bytes(T * (k_width + v_width) * a), d.cp));
  }
  const Bytes qkv_saved = Bytes(T * (q_width + k_width + v_width) * a);
  // Causal attention of this rank's T query tokens against the s/2 keys each sees on average
  // (with CP's load-balanced chunks too). FLOPs: QK^T and AV, 2 FLOPs per multiply-add.
  const double visible = double(d.s) / 2.0;
  const Flops attn_flops = 2.0 * double(T) * visible * d.heads_rank * double(d.qk_dim + d.v_dim);
  if (w.flash_attention) {
    Op op;
    op.name = "flash_attention";
    op.kind = OpKind::Attention;
    op.op_class = OpClass::Attention;
    op.flops = attn_flops;
    op.m = T;
    op.n = d.s;
    op.k = d.qk_dim;
    op.batch = d.heads_rank;
    op.bytes = Bytes(T * (2 * q_width + k_width + v_width) * a);
    op.saved = qkv_saved + Bytes(T * d.heads_rank * 4);  // + fp32 log-sum-exp per row
    op.overlaps_previous = d.cp > 1;
    ops.push_back(op);
    core.end = ops.size();
    // Selective recompute checkpoints the core attention: Q, K and V are the checkpoint's inputs
    // and stay saved; only the log-sum-exp is dropped (Megatron's CheckpointWithoutOutput of
    // core_attention; the unfused path below keeps them outside the core likewise).
    core.kept = qkv_saved;
  } else {
    // Unfused: scores (b*heads x s/cp x s), softmax, dropout, values. Korthikanti et al. Table 2:
    // Q,K saved by the score GEMM, the softmax output (2 B), the dropout mask (1 B), and the
    // dropout output with V for the value GEMM.
    const Count scores = d.b * d.heads_rank * (d.s / d.cp) * d.s;
    Op qk = gemm("attn_scores", OpClass::Attention, d.s / d.cp, d.s, d.qk_dim, d.b * d.heads_rank);
    // Q, K and V stay saved whatever the recompute policy; only the s x s terms are core.
    qk.saved = Bytes(T * (q_width + k_width + v_width) * a);
    qk.overlaps_previous = d.cp > 1;
    ops.push_back(qk);
    core.begin = ops.size();
    ops.push_back(with_saved(memory("softmax", OpClass::Elementwise, Bytes(2 * scores * a)), Bytes(scores * a)));
    if (m.dropout) ops.push_back(with_saved(memory("attn_prob_dropout", OpClass::Elementwise, Bytes(2 * scores * a)), Bytes(scores)));
    Op av = gemm("attn_values", OpClass::Attention, d.s / d.cp, d.v_dim, d.s, d.b * d.heads_rank);
    av.saved = Bytes(m.dropout ? scores * a : 0);  // the softmax output doubles as AV's input without dropout
    ops.push_back(av);
    core.end = ops.size();
  }
  ops.push_back(with_saved(gemm("out_proj", OpClass::Gemm, T, h, Count(d.heads_rank) * d.v_dim), Bytes(T * d.heads_rank * d.v_dim * d.gemm_input)));
  tp_exit(ops, d, "attn_allreduce", "attn_reducescatter");
  if (m.dropout) ops.push_back(with_saved(memory("attn_dropout", OpClass::Elementwise, Bytes(2 * Ts * h * a)), Bytes(Ts * h)));
  ops.push_back(memory("attn_residual", OpClass::Elementwise, Bytes(3 * Ts * h * a)));
  return core;
}

// A dense MLP over `tokens` rows with FFN width `ffn_rank` on this rank; its up-projection keeps
// `input_saved_tokens` rows of its input, `input_width` bytes each element.
void add_mlp_body(std::vector<Op>& ops, const ModelSpec& m, const Dims& d, Count tokens, Count ffn_rank,
                  Count input_saved_tokens, Count input_width, Count batch = 1, const char* up = "mlp_up",
                  const char* act_name = "mlp_act", const char* down = "mlp_down", bool weighted = false) {
  const Count h = d.h, a = d.act;
  const bool glu = m.activation == Activation::SwiGLU;
  Op up_gemm = gemm(up, OpClass::Gemm, tokens / batch, (glu ? 2 : 1) * ffn_rank, h, batch);
  up_gemm.grouped = batch > 1;  // one GEMM per local expert, each with its own weights
  ops.push_back(with_saved(up_gemm, Bytes(input_saved_tokens * h * input_width)));
  // SwiGLU saves gate and up (4f bytes/token at 2 B, 2f in fp8 under the fp8 input store); GELU
  // saves its input. A weighted activation also keeps each row's fp32 routing probability, and
  // outside the fused SwiGLU (activation_func_with_probs) the activation's output for its gradient.
  const Bytes act_saved = (glu ? Bytes(tokens * ffn_rank * 2 * d.glu_input) : Bytes(tokens * ffn_rank * a)) +
                          (weighted ? Bytes(tokens * 4) + (glu ? 0 : Bytes(tokens * ffn_rank * a)) : 0);
  Op act = with_saved(memory(act_name, OpClass::Elementwise, Bytes(tokens * ffn_rank * a * (glu ? 3 : 2))), act_saved);
  if (glu && d.eager_composites) {
    const EagerComposite c = eager_swiglu(a);
    act = eager(act, c, double(tokens) * double(ffn_rank));
    act.saved = std::max(act.saved, Bytes(c.saved_bytes * double(tokens) * double(ffn_rank)));
  }
  ops.push_back(act);
  Op down_gemm = gemm(down, OpClass::Gemm, tokens / batch, h, ffn_rank, batch);
  down_gemm.grouped = batch > 1;
  ops.push_back(with_saved(down_gemm, Bytes(tokens * ffn_rank * d.gemm_input)));
}

void add_dense_mlp(std::vector<Op>& ops, const ModelSpec& m, const Dims& d) {
  const Count Ts = d.sp_tokens, h = d.h, a = d.act;
  ops.push_back(norm_op("mlp_norm", m, d, Ts));
  tp_enter(ops, d, "mlp_allgather", "mlp_regather", d.h * d.colwise_input);
  add_mlp_body(ops, m, d, d.tokens, m.ffn / d.tp, d.gemm_input_tokens, d.colwise_input);
  tp_exit(ops, d, "mlp_allreduce", "mlp_reducescatter");
  if (m.dropout) ops.push_back(with_saved(memory("mlp_dropout", OpClass::Elementwise, Bytes(2 * Ts * h * a)), Bytes(Ts * h)));
  ops.push_back(memory("mlp_residual", OpClass::Elementwise, Bytes(3 * Ts * h * a)));
}

void add_moe_mlp(std::vector<Op>& ops, const ModelSpec& m, const Dims& d) {
  const Count h = d.h, a = d.act;
  // MoE layers work on this rank's share of the tokens: Megatron-Core's dispatcher splits the
  // micro-batch's tokens over TP ranks (sequence parallel), so each routes tokens/tp.
  const Count Tm = d.tokens / d.tp;
  const int k = m.moe.top_k;
  ops.push_back(norm_op("mlp_norm", m, d, Tm));
  // The router GEMM saves its input for the weight gradient and the fp32 routing probabilities.
  ops.push_back(with_saved(gemm("router", OpClass::Router, Tm, m.moe.num_experts, h),
                           Bytes(Tm * h * a) + Bytes(Tm * m.moe.num_experts * 4)));
  ops.push_back(memory("moe_permute", OpClass::Permute, Bytes(2 * Tm * k * h * a)));
  // Under DeepEP the dispatch and combine carry the routing that sets their network share.
  auto ep_all_to_all = [&](const char* name) {
    Op op = collective(name, Group::EP, Collective::AllToAll, Bytes(Tm * k * h * a), d.ep);
    if (d.deepep_dispatch) {
      op.routed_top_k = k;
      op.routed_experts = m.moe.num_experts;
    }
    return op;
  };
  if (d.ep > 1) ops.push_back(ep_all_to_all("ep_dispatch"));
  // Tokens reaching this rank's experts: balanced routing, padded up to the capacity factor.
  const double capacity = m.moe.capacity_factor > 0 ? m.moe.capacity_factor : 1.0;
  Count expert_tokens = Count(double(Tm * k) * capacity) * d.etp;
  if (d.etp > 1) ops.push_back(collective("etp_allgather", Group::ExpertTensor, Collective::AllGather, Bytes(expert_tokens * h * a), d.etp));
  const Count local_experts = std::max<Count>(1, m.moe.num_experts / d.ep);
  add_mlp_body(ops, m, d, expert_tokens, m.moe.expert_ffn / d.etp, expert_tokens, d.gemm_input, local_experts, "expert_up",
               "expert_act", "expert_down", d.moe_probs_in_activation);
  if (d.etp > 1) ops.push_back(collective("etp_reducescatter", Group::ExpertTensor, Collective::ReduceScatter, Bytes(expert_tokens * h * a), d.etp));
  if (d.ep > 1) ops.push_back(ep_all_to_all("ep_combine"));
  // Where the combine weights each expert output by its routing probability, the gradient of the
  // probabilities needs those outputs, so they are saved with the probabilities (DeepSpeed's
  // combine einsum, torchtitan's score multiply); Megatron-Core weighted them in the SwiGLU above.
  ops.push_back(with_saved(memory("moe_unpermute", OpClass::Permute, Bytes(2 * Tm * k * h * a)),
                           d.moe_probs_in_activation ? 0 : Bytes(Tm * k * h * a) + Bytes(Tm * k * 4)));
  if (m.moe.shared_experts > 0) {
    const Count shared_ffn = (m.moe.shared_expert_ffn > 0 ? m.moe.shared_expert_ffn : m.moe.expert_ffn) * m.moe.shared_experts;
    // Shared experts are TP-sharded like a dense MLP: all tokens, ffn/tp on each rank.
    add_mlp_body(ops, m, d, d.tokens, shared_ffn / d.tp, Tm, d.colwise_input, 1, "shared_up", "shared_act", "shared_down");
  }
  ops.push_back(memory("mlp_residual", OpClass::Elementwise, Bytes(3 * Tm * h * a)));
}

// Backward of one forward op, appended in reverse order by the caller.
void add_backward(std::vector<Op>& out, const Op& f) {
  if (f.forward_only) return;
  size_t first = out.size();
  switch (f.kind) {
    case OpKind::Gemm: {
      // dgrad (m x n)(n x k) and wgrad (k x m)(m x n): each as many FLOPs as the forward.
      Op dgrad = gemm(f.name, f.op_class, f.m, f.k, f.n, f.batch);
      dgrad.name = f.name;  // class and name kept; the phase tells them apart
      dgrad.grouped = f.grouped;
      dgrad.high_precision = f.high_precision;
      Op wgrad = gemm(f.name, f.op_class, f.k, f.n, f.m, f.batch);
      wgrad.weight_grad = f.op_class != OpClass::Attention;
      wgrad.grouped = f.grouped;
      wgrad.high_precision = f.high_precision;
      // The backward's fp8 casts feed both backward GEMMs: priced once, with dgrad.
      dgrad.cast_bytes = f.backward_cast_bytes;
      // Batched attention GEMMs (scores, values) have two activation grads, no weight grad.
      out.push_back(dgrad);
      out.push_back(wgrad);
      break;
    }
    case OpKind::Attention: {
      // Flash attention backward: 5 matmuls against the forward's 2 (Dao 2023), i.e. 2.5x.
      Op b = f;
      b.flops = 2.5 * f.flops;
      b.bytes = 2 * f.bytes;
      b.saved = 0;
      out.push_back(b);
      break;
    }
    case OpKind::Memory: {
      Op b = f;
      b.bytes = f.backward_bytes > 0 ? f.backward_bytes : 1.5 * f.bytes;  // reads the gradient and the saved input, writes one gradient
      b.backward_bytes = 0;
      if (f.backward_kernels > 0) b.kernels = f.backward_kernels;
      b.backward_kernels = 0;
      b.saved = 0;
      out.push_back(b);
      break;
    }
    case OpKind::Collective:
    case OpKind::PointToPoint: {
      Op b = f;
      b.saved = 0;
      b.tp_overlappable = (f.tp_overlappable || f.backward_tp_overlap_only) && f.backward_tp_overlappable;
      b.backward_tp_overlap_only = false;
      if (f.backward_message > 0) b.message = f.backward_message;
      b.backward_message = 0;
      // The backward of a block's all-gather reduce-scatters the input gradient beside the weight
      // gradient's GEMM, unchunked (TransformerEngine's "bulk" overlap); that of its
      // reduce-scatter all-gathers the output gradient into the input-gradient GEMM in tp chunks.
      b.overlap_chunks = 0;
      b.overlap_tail = b.overlap_local_sum = false;
      if (f.collective == Collective::AllGather) b.collective = Collective::ReduceScatter;
      else if (f.collective == Collective::ReduceScatter) {
        b.collective = Collective::AllGather;
        b.overlap_chunks = f.group_size;
      }
      else if (f.collective == Collective::RingExchange) b.message = 2 * f.message;  // K,V in and dK,dV back
      b.backward_regather = nullptr;
      b.regather_message = 0;
      out.push_back(b);
      if (f.backward_regather) {
        // Megatron's SP linear (LinearWithGradAccumulationAndAsyncCommunication.backward;
        // TransformerEngine's Linear and LayerNormLinear likewise) gathers the saved shard again
        // right before the input-gradient GEMM and hides it behind that GEMM (TransformerEngine's
        // tp-comm-overlap: the "bulk" all-gather of qkv_dgrad and fc1_dgrad). The GEMM's backward
        // came just before this op in the reversed list: the gather goes before its dgrad.
        Op again = collective(f.backward_regather, Group::TP, Collective::AllGather, f.regather_message, f.group_size);
        again.tp_overlappable = true;
        again.backward = true;
        size_t at = first;
        while (at > 0 && !(out[at - 1].kind == OpKind::Gemm && !out[at - 1].weight_grad)) --at;
        out.insert(out.begin() + std::ptrdiff_t(at > 0 ? at - 1 : first), again);
        ++first;  // the ops of this call start one later
      }
      break;
    }
  }
  for (size_t i = first; i < out.size(); ++i) out[i].backward = true;
}

// torchtitan's op-level selective activation checkpointing (torchtitan
// distributed/activation_checkpoint.py, "op" mode; parallelize_llama.py at 9dec370, 2024-12):
// inside each layer's checkpoint the outputs of attention and of every other matmul (1st, 3rd,
// ...) are saved; everything else (norms, RoPE, activations, the other matmuls) is recomputed in
// the backward. Fused GEMMs of the step program count as the matmuls they fuse (q, k, v; gate and
// up). The policy's _save_list also names the SP reduce-scatters; their outputs are not counted
// (no measured eager TP run to check them against, and compiled they are not kept).
// Eager, torch.utils.checkpoint's caching dispatch mode stores the output of every op the policy
// saves, whether or not a backward reads it. Compiled (Workload::compile), the policy tags the
// joint graph and AOTAutograd's partitioner saves only tensors the backward graph reads: the
// outputs that only enter the residual (the attention output projection's, the MLP's down
// projection's) are not kept.
bool read_by_no_backward(const Op& f) {
  const std::string_view n = f.name;
  return n == "out_proj" || n == "mlp_down" || n == "shared_down";
}

void select_op_checkpoint(LayerProgram& lp, const ModelSpec& m, const Dims& d, Bytes layer_input, bool compiled) {
  const bool glu = m.activation == Activation::SwiGLU;
  int mm = 0;
  Bytes saved = layer_input, rematerialised = 0;
  for (const Op& f : lp.forward) {
    if (f.kind == OpKind::Attention || (f.kind == OpKind::Gemm && f.op_class == OpClass::Attention)) {
      saved += Bytes(f.m * d.heads_rank * d.v_dim * d.act) + Bytes(f.m * d.heads_rank * 4);  // output + lse
      continue;
    }
    if (f.kind == OpKind::Gemm) {
      // Widths of the matmuls this GEMM fuses.
      std::vector<Count> widths;
      const std::string name = f.name;
      if (name == "qkv_proj") {
        const Count kv = Count(d.kv_heads_rank) * d.qk_dim;
        widths = {f.n - 2 * kv, kv, kv};
      } else if (glu && (name == "mlp_up" || name == "expert_up" || name == "shared_up")) {
        widths = {f.n / 2, f.n / 2};
      } else {
        widths = {f.n};
      }
      Count recomputed_width = 0;
      for (Count width : widths) {
        const Bytes out = Bytes(f.m * width * f.batch * d.act);
        if (mm++ % 2 == 0) saved += compiled && read_by_no_backward(f) ? 0 : out;
        else {
          recomputed_width += width;
          rematerialised += out;
        }
      }
      if (recomputed_width > 0) {
        Op r = gemm(f.name, f.op_class, f.m, recomputed_width, f.k, f.batch);
        lp.backward.push_back(r);
      }
      continue;
    }
    if (f.kind == OpKind::Memory) {
      Op r = f;
      r.saved = 0;
      lp.backward.push_back(r);
      rematerialised += f.saved;
    }
  }
  lp.saved = saved;
  lp.recompute_workspace = rematerialised;
}

// Megatron-Core's selective recompute (--recompute-modules): each module's ops are re-run in the
// backward and what only they needed is not saved; a module's checkpoint input stays saved.
// core_attn (the default): the attention core, Q/K/V kept. layernorm: the norms' outputs, which
// the next GEMMs would keep, are recomputed from the norm inputs. mla_up_proj: MLA's Q/K/V come
// again from the saved latents. mlp / moe: the whole MLP or MoE block from its input. moe_act:
// the experts' activation output. shared_experts: the shared experts from their input.
void select_modules(LayerProgram& lp, const ModelSpec& m, const Dims& d, unsigned modules, const CoreRange& core, bool moe) {
  namespace rm = recompute_module;
  if (modules == 0) modules = rm::kCoreAttn;
  const Count h = d.h, a = d.act;
  const Count Tm = d.tokens / d.tp;
  const size_t n = lp.forward.size();
  std::vector<Bytes> saved(n);
  std::vector<bool> rerun(n, false);
  Bytes original = 0, kept = 0;
  for (size_t i = 0; i < n; ++i) original += saved[i] = lp.forward[i].saved;
  auto named = [&](size_t i, std::initializer_list<const char*> names) {
    for (const char* name : names)
      if (std::string_view(lp.forward[i].name) == name) return true;
    return false;
  };
  auto index_of = [&](const char* name) {
    for (size_t i = 0; i < n; ++i)
      if (named(i, {name})) return i;
    return n;
  };
  auto recompute = [&](size_t i) {
    rerun[i] = true;
    saved[i] = 0;
  };
  const bool layernorm = modules & rm::kLayernorm;
  if (modules & rm::kCoreAttn) {
    for (size_t i = core.begin; i < core.end; ++i) recompute(i);
    if (!(modules & rm::kMlaUpProj)) kept += core.kept;
  }
  if (modules & rm::kMlaUpProj) {
    for (size_t i = 0; i < n; ++i)
      if (named(i, {"q_up_proj", "kv_up_proj", "rope"})) rerun[i] = true;
    // Flash attention keeps only its log-sum-exp: Q, K and V are recomputed from the latents.
    for (size_t i = 0; i < n; ++i)
      if (lp.forward[i].kind == OpKind::Attention && !rerun[i]) saved[i] = Bytes(d.tokens * d.heads_rank * 4);
  }
  if (layernorm) {
    for (size_t i = 0; i < n; ++i) {
      if (lp.forward[i].op_class == OpClass::Norm) rerun[i] = true;  // their inputs stay saved
      if (named(i, {"qkv_proj", "q_proj", "q_down_proj", "mlp_up", "shared_up"})) saved[i] = 0;
      if (named(i, {"router"})) saved[i] = std::max<Bytes>(0, saved[i] - Bytes(Tm * h * a));
    }
  }
  const size_t mlp_norm = index_of("mlp_norm"), residual = index_of("mlp_residual");
  const bool block = moe ? (modules & rm::kMoe) : (modules & rm::kMlp);
  if (block && mlp_norm < n) {
    // The whole block after its norm, its collectives included; the block's input is the norm
    // output (unless layernorm recompute re-derives it from the norm's input).
    for (size_t i = mlp_norm + 1; i < std::min(residual, n); ++i)
      if (!named(i, {"mlp_dropout"})) recompute(i);
    if (!layernorm) kept += Bytes((moe ? Tm : d.sp_tokens) * h * a);
  }
  if (moe && (modules & rm::kMoeAct)) {
    for (size_t i = 0; i < n; ++i) {
      if (named(i, {"expert_act"})) rerun[i] = true;
      if (named(i, {"expert_down"})) saved[i] = 0;
    }
  }
  if (moe && (modules & rm::kSharedExperts))
    for (size_t i = 0; i < n; ++i)
      if (named(i, {"shared_up", "shared_act", "shared_down"})) recompute(i);

  lp.saved = kept;
  for (size_t i = 0; i < n; ++i) lp.saved += saved[i];
  for (size_t i = 0; i < n; ++i)
    if (rerun[i]) {
      Op r = lp.forward[i];
      r.saved = 0;
      lp.backward.push_back(r);
    }
  // What the backward rematerialises of one layer at a time.
  lp.recompute_workspace = std::max<Bytes>(0, original - lp.saved);
}

LayerProgram make_layer(const ModelSpec& m, const Layout& l, const Workload& w, const Dims& d, bool moe) {
  LayerProgram lp;
  lp.moe = moe;
  lp.forward.reserve(64);  // a search builds tens of thousands: no regrowth
  CoreRange core = add_attention(lp.forward, m, w, d);
  lp.attention_workspace = core.backward_workspace;
  if (moe) add_moe_mlp(lp.forward, m, d);
  else add_dense_mlp(lp.forward, m, d);

  // FP8 training casts every linear layer's input to fp8 before its GEMM, and the output
  // gradient before the backward GEMMs; the measured fp8 GEMM tables time the GEMM alone.
  // Attention's batched GEMMs and the router stay in bf16.
  // - TransformerEngine (Megatron): each cast is one fused cast + transpose (read 2 bytes, write the
  //   fp8 copy and its transpose: 4 bytes an element; fp8_cast_transpose_fused in
  //   pytorch/module/linear.py), of the input forward and of the output gradient backward.
  // - torchao's Float8Linear (torchtitan; torchao/float8/float8_linear.py,
  //   matmul_with_hp_or_float8_args, tensorwise dynamic scaling): every cast is an amax pass (read
  //   2) and a scaled cast (read 2, write 1). Forward: the input and the weight. Backward: the output
  //   gradient, once for both layouts (one amax, one compiled pass writing both copies: 6 bytes an
  //   element), the weight again and the saved high-precision input again. Under TP,
  //   Float8ColwiseParallel casts a column-parallel input on its sequence shard before the
  //   all-gather and saves the fp8 copy, so its backward recasts no input. The dense GEMMs only:
  //   torchao's MoE path is another one.
  //   With the FSDP float8 all-gather (fsdp_float8_gathers) the weight arrives in fp8: the forward
  //   casts no weight, and the backward's grad_output x weight copies the row-major fp8 weight
  //   into the column-major operand _scaled_mm takes (torchao/float8/float8_ops.py,
  //   preprocess_addmm: b_data.t().contiguous().t(); read 1, write 1). The cast of the fp32 shard
  //   before the all-gather runs in FSDP2's copy-in on the all-gather stream, unpriced like the
  //   bf16 copy-in it replaces (5 bytes a shard element against 6).
  //   The rowwise recipes (Float8Recipe; torchao float8/config.py from_recipe_name) scale each
  //   operand along its GEMM's reduction dimension, so a tensor both backward GEMMs read is cast
  //   twice, along each axis (get_maybe_axiswise_dim): rowwise casts the input and the weight
  //   forward; the output gradient twice, the weight and the input again backward. Its backward
  //   GEMMs run without fast accumulation, which the rowwise CUTLASS kernel is too slow for:
  //   torchao runs cuBLAS's tensorwise kernel with unit scales and multiplies the bf16 output
  //   by the two scales afterwards (float8_ops.py, addmm_float8_unwrapped: read 2, write 2 of the
  //   input and weight gradients). rowwise_with_gw_hp casts the output gradient once and the
  //   weight tensorwise for the input gradient, and runs the weight gradient in bf16 on the
  //   saved high-precision input (no casts for it).
  for (const Op& op : lp.forward)
    if (op.kind == OpKind::Gemm && op.op_class == OpClass::Gemm && !op.grouped)
      lp.linear_weight_params += op.k * op.n;
  const bool weight_grad_bf16 = float8_rowwise(w) && w.float8_recipe == Float8Recipe::RowwiseWithGwHp;
  if (w.dtype == Dtype::FP8) {
    const bool torchao = w.framework == Framework::Torchtitan;
    const bool fp8_weight = fsdp_float8_gathers(w, l);
    for (Op& op : lp.forward) {
      if (op.kind != OpKind::Gemm || op.op_class != OpClass::Gemm) continue;
      const double mk = double(op.m) * double(op.k) * double(op.batch), mn = double(op.m) * double(op.n) * double(op.batch);
      if (!torchao || op.grouped) {
        op.cast_bytes = 4.0 * mk;
        op.backward_cast_bytes = 4.0 * mn;
        continue;
      }
      const double kn = double(op.k) * double(op.n);
      if (weight_grad_bf16) {
        op.cast_bytes = 5.0 * mk + 5.0 * kn;
        op.backward_cast_bytes = 5.0 * mn + 5.0 * kn + 4.0 * mk;
      } else if (float8_rowwise(w)) {
        op.cast_bytes = 5.0 * mk + 5.0 * kn;
        op.backward_cast_bytes = 10.0 * mn + 5.0 * kn + 5.0 * mk + 4.0 * (mk + kn);
      } else {
        const bool colwise_tp = d.tp > 1 && op.k == d.h;  // a row-parallel input is a tp-shard of its width
        op.cast_bytes = 5.0 * (colwise_tp ? mk / d.tp : mk) + (fp8_weight ? 0.0 : 5.0 * kn);
        op.backward_cast_bytes = 6.0 * mn + (fp8_weight ? 2.0 : 5.0) * kn + (colwise_tp ? 0.0 : 5.0 * mk);
      }
    }
  }

  lp.backward.reserve(3 * lp.forward.size());  // a re-run forward, then up to two ops per forward op
  Bytes all_saved = 0;
  for (size_t i = 0; i < lp.forward.size(); ++i) {
    all_saved += lp.forward[i].saved;
  }
  // Full recompute keeps the layer input only (sharded under SP) and re-runs the whole forward.
  const Bytes layer_input = Bytes((moe ? d.tokens / d.tp : d.sp_tokens) * d.h * d.act);
  switch (l.recompute) {
    case Recompute::None:
      lp.saved = all_saved;
      break;
    case Recompute::Selective:
      select_modules(lp, m, d, l.recompute_modules, core, moe);
      break;
    case Recompute::SelectiveOp:
      select_op_checkpoint(lp, m, d, layer_input, w.compile);
      break;
    case Recompute::Full:
      lp.saved = layer_input;
      lp.recompute_workspace = all_saved;
      for (Op r : lp.forward) {
        r.saved = 0;
        lp.backward.push_back(r);
      }
      break;
  }
  lp.recompute_ops = lp.backward.size();
  for (auto it = lp.forward.rbegin(); it != lp.forward.rend(); ++it) add_backward(lp.backward, *it);
  if (weight_grad_bf16)
    for (size_t i = lp.recompute_ops; i < lp.backward.size(); ++i)
      if (lp.backward[i].weight_grad && !lp.backward[i].grouped) lp.backward[i].high_precision = true;
  add_tp_input_grads(lp.forward, lp.backward, lp.recompute_ops);

  // Parameters on this rank. TP shards the matrices; norms and the MLA down-projections are
  // replicated; KV heads are replicated when tp exceeds them.
  const Count h = m.hidden;
  const Count norm = m.norm == NormKind::LayerNorm ? 2 * h : h;
  Count attn = norm;
  if (m.mla.enabled) {
    const auto& a = m.mla;
    const Count qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) attn += h * a.q_lora_rank + a.q_lora_rank + Count(a.q_lora_rank) * d.heads_rank * qk;
    else attn += h * d.heads_rank * qk;
    attn += h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    attn += Count(a.kv_lora_rank) * d.heads_rank * (a.qk_nope_head_dim + a.v_head_dim);
    attn += Count(d.heads_rank) * a.v_head_dim * h;
  } else {
    const Count q = Count(d.heads_rank) * m.head_dim, kv = Count(d.kv_heads_rank) * m.head_dim;
    attn += h * (q + 2 * kv) + q * h;
    if (m.qkv_bias || m.linear_bias) attn += q + 2 * kv;
    if (m.linear_bias) attn += h;
    if (m.qk_norm) attn += 2 * Count(m.head_dim);
  }
  const bool glu = m.activation == Activation::SwiGLU;
  auto mlp = [&](Count ffn_rank) {
    Count p = (glu ? 3 : 2) * h * ffn_rank;
    if (m.linear_bias) p += (glu ? 2 : 1) * ffn_rank + h;
    return p;
  };
  lp.dense_params = attn + norm;
  if (moe) {
    const Count shared_ffn = (m.moe.shared_expert_ffn > 0 ? m.moe.shared_expert_ffn : m.moe.expert_ffn);
    lp.dense_params += h * m.moe.num_experts + (m.moe.router_bias ? m.moe.num_experts : 0);
    lp.dense_params += Count(m.moe.shared_experts) * mlp(shared_ffn / l.tp);
    lp.expert_params = Count(m.moe.num_experts / l.ep) * mlp(m.moe.expert_ffn / l.etp);
  } else {
    lp.dense_params += mlp(m.ffn / l.tp);
  }
  if (bf16_optimizer_runs(w, l)) {
    // Norm weights (and LayerNorm's biases), and the linear layers' biases, besides the matrices.
    const int norms = 2 * (m.norm == NormKind::LayerNorm ? 2 : 1) + (m.qk_norm ? 2 : 0);
    const int biases = m.linear_bias ? 4 : (m.qkv_bias ? 1 : 0);
    add_fp32_grad_accumulation(lp.backward, lp.dense_params + lp.expert_params,
                               weight_matrices_per_layer(m, l, moe) + norms + biases);
  }
  return lp;
}


// The names of one output head's ops: the model's own, or a multi-token-prediction depth's.
struct HeadNames {
  const char *norm, *allgather, *regather, *gemm, *loss, *loss_allreduce, *grad_allreduce;
};
constexpr HeadNames kMainHead{"final_norm", "head_allgather", "head_regather", "lm_head", "cross_entropy", "loss_allreduce",
                              "head_grad_allreduce"};
constexpr HeadNames kMtpHead{"mtp_final_norm", "mtp_head_allgather", "mtp_head_regather", "mtp_lm_head", "mtp_cross_entropy",
                             "mtp_loss_allreduce", "mtp_head_grad_allreduce"};

// The output head's GEMM is column-parallel: without SP its input gradient is all-reduced over TP
// after its backward (Megatron's copy_to_tensor_model_parallel_region: identity forward, all-reduce
// backward); under SP the head_allgather's backward reduce-scatters it instead. Inserted into a
// built backward list after the head GEMM's two backward ops.
void add_head_input_grad(std::vector<Op>& backward, const Dims& d, const HeadNames& n) {
  if (d.tp <= 1 || d.sp) return;
  for (size_t i = backward.size(); i-- > 0;)
    if (std::string_view(backward[i].name) == n.gemm) {
      Op op = collective(n.grad_allreduce, Group::TP, Collective::AllReduce, Bytes(d.tokens * d.h * d.act), d.tp);
      op.tp_overlappable = true;
      op.backward = true;
      backward.insert(backward.begin() + std::ptrdiff_t(i + 1), op);
      return;
    }
}

// The final norm, the output GEMM and the loss as the workload's cross-entropy runs it
// (CrossEntropy, models/layout.hpp), bytes per logit:
// - Megatron's vocab-parallel cross-entropy in fp32: max, sum-exp and target logit all-reduced over
//   TP; the fp32 softmax kept for the backward (Korthikanti et al.: 4sbv/t). Each step is its own
//   kernel over the fp32 logits (_VocabParallelCrossEntropy): the cast (read a, write 4), max (4),
//   subtract and exp in place (8 + 8), sum (4), divide in place (8); its backward works on the
//   saved softmax in place, subtract the one-hot and scale (8 + 8), then casts the gradient back
//   (4 + a).
// - F.cross_entropy on upcast logits, one rank: the cast (read a, write 4), then ATen's log-softmax,
//   one kernel of three passes over each fp32 row, max, sum of exponentials, then the written result
//   (aten/src/ATen/native/cuda/SoftMax.cu, cunn_SoftMaxForward: 12 + 4; its one-read shared-memory
//   variant, PyTorch PR #122970 of 2024-04, takes rows up to 48 KB, and a vocabulary row is larger),
//   and the gather; it keeps the fp32 log-softmax. Its backward zero-fills the fp32 gradient and
//   scatters the targets' (nll_loss_backward, 4), runs cunn_SoftMaxBackward (a pass summing the
//   gradient, then one reading it and the output and writing: 4 + 12), and casts back (4 + a).
//   Under TP it is DTensor's loss_parallel, separate ops like Megatron's, and priced as Megatron's.
// - flash-attn's fused cross-entropy, and torch.compile'd F.cross_entropy: one pass over the
//   low-precision logits (online softmax) that keeps them and the log-sum-exp; its backward reads
//   them and writes the gradient (a + a).
// Bytes per logit of the fp32 losses (above): Megatron's multi-kernel one (and DTensor's under TP),
// and ATen's F.cross_entropy on one rank.
double fp32_loss_forward_bytes(Count a) { return double(a + 36); }
double fp32_loss_backward_bytes(Count a) { return double(20 + a); }
double aten_cross_entropy_forward_bytes(Count a) { return double(a + 20); }
double aten_cross_entropy_backward_bytes(Count a) { return double(a + 24); }

void add_output_head(std::vector<Op>& ops, const ModelSpec& m_of_head, const Layout& l, const Dims& d, Count vocab_rank, const HeadNames& n,
                     CrossEntropy ce) {
  const Count T = d.tokens, Ts = d.sp_tokens, h = d.h, a = d.act;
  ops.push_back(norm_op(n.norm, m_of_head, d, Ts));
  tp_enter(ops, d, n.allgather, n.regather, d.h * d.act);
  Op head_gemm = gemm(n.gemm, OpClass::Gemm, T, vocab_rank, h);
  head_gemm.high_precision = true;  // not converted to fp8 by either framework (Op::high_precision)
  ops.push_back(with_saved(head_gemm, Bytes(d.gemm_input_tokens * h * a)));
  const double logits = double(T) * double(vocab_rank);
  // Bytes per logit of the unfused fp32 losses: ATen's on one rank, Megatron's (and DTensor's) else.
  const bool aten = ce == CrossEntropy::TorchFp32 && l.tp <= 1;
  const double forward = aten ? aten_cross_entropy_forward_bytes(a) : fp32_loss_forward_bytes(a);
  const double backward = aten ? aten_cross_entropy_backward_bytes(a) : fp32_loss_backward_bytes(a);
  Op loss = fused_cross_entropy(ce)
                ? with_saved(memory(n.loss, OpClass::Loss, Bytes(logits * a)), Bytes(logits * a) + Bytes(T * 4))
                : with_saved(memory(n.loss, OpClass::Loss, Bytes(logits * forward)), Bytes(logits * 4));
  loss.backward_bytes = fused_cross_entropy(ce) ? Bytes(logits * 2 * a) : Bytes(logits * backward);
  ops.push_back(loss);
  if (l.tp > 1) {
    // Max, sum-exp and target logit, reduced over the vocabulary shards; the loss's backward is
    // local to each shard (softmax minus one-hot), so there is no backward collective.
    Op reduce = collective(n.loss_allreduce, Group::TP, Collective::AllReduce, Bytes(3 * T * 4), l.tp);
    reduce.forward_only = true;
    ops.push_back(reduce);
  }
}

// Megatron-Core's multi-token prediction block on the last stage, once per depth: the embedding
// of the tokens one further ahead (the last stage keeps a copy of the word embedding unless it
// also holds the first), enorm and hnorm, the 2h -> h projection, a transformer layer like the
// model's last, the final norm, the shared output head and its cross-entropy. The layer keeps what
// the recompute policy keeps of any layer and re-runs what it re-runs.
void add_mtp(StageEdges& st, bool first, const ModelSpec& m, const Layout& l, const Workload& w, const Dims& d,
             const ProgramParts& parts) {
  if (w.mtp_layers <= 0) return;
  const Count T = d.tokens, Ts = d.sp_tokens, h = d.h, a = d.act;
  const Count vocab_rank = (m.vocab + l.tp - 1) / l.tp;
  const Count norm_params = m.norm == NormKind::LayerNorm ? 2 * h : h;
  const LayerProgram& layer = m.moe.enabled() && m.is_moe_layer(m.layers - 1) ? parts.moe : parts.dense;
  if (!first) st.dense_params += vocab_rank * h;  // the embedding copy
  for (int depth = 0; depth < w.mtp_layers; ++depth) {
    std::vector<Op> head;  // what runs before and after the layer, priced and saved like the main head
    head.push_back(memory("mtp_embedding", OpClass::Embedding, Bytes(2 * T * h * a)));
    tp_exit(head, d, "mtp_embed_allreduce", "mtp_embed_reducescatter");
    head.push_back(norm_op("mtp_norms", m, d, Ts, 2));
    tp_enter(head, d, "mtp_proj_allgather", "mtp_proj_regather", 2 * d.h * d.gemm_input);
    head.push_back(with_saved(gemm("mtp_proj", OpClass::Gemm, T, h / d.tp, 2 * h), Bytes(d.gemm_input_tokens * 2 * h * d.gemm_input)));
    tp_exit(head, d, "mtp_proj_allreduce", "mtp_proj_reducescatter");
    std::vector<Op> tail;
    add_output_head(tail, m, l, d, vocab_rank, kMtpHead, cross_entropy_of(w));
    for (const Op& op : head) st.post_forward.push_back(op), st.post_saved += op.saved;
    for (Op op : layer.forward) {
      op.saved = 0;  // the policy's total is added below
      st.post_forward.push_back(op);
    }
    st.post_saved += layer.saved;
    for (const Op& op : tail) st.post_forward.push_back(op), st.post_saved += op.saved;
    // Backward: the tail, the layer (its re-run forward included), the head.
    std::vector<Op> backward;
    for (auto it = tail.rbegin(); it != tail.rend(); ++it) add_backward(backward, *it);
    add_head_input_grad(backward, d, kMtpHead);
    backward.insert(backward.end(), layer.backward.begin(), layer.backward.end());
    const size_t head_from = backward.size();
    for (auto it = head.rbegin(); it != head.rend(); ++it) add_backward(backward, *it);
    add_tp_input_grads(head, backward, head_from);
    st.post_backward.insert(st.post_backward.begin(), backward.begin(), backward.end());
    st.dense_params += layer.dense_params + h * 2 * h / l.tp + 3 * norm_params;
    st.expert_params += layer.expert_params;
  }
}

// The embedding on the first stage; the final norm, output head, loss, training metrics and MTP
// on the last.
StageEdges make_edges(const ModelSpec& m, const Layout& l, const Workload& w, const Dims& d, const ProgramParts& parts,
                      bool first, bool last) {
  StageEdges st;
  const Count T = d.tokens, Ts = d.sp_tokens, h = d.h, a = d.act;
  const Count vocab_rank = (m.vocab + l.tp - 1) / l.tp;
  if (first) {
    st.pre_forward.push_back(memory("embedding", OpClass::Embedding, Bytes(2 * T * h * a)));
    tp_exit(st.pre_forward, d, "embed_allreduce", "embed_reducescatter");
    if (m.dropout) st.pre_forward.push_back(with_saved(memory("embed_dropout", OpClass::Elementwise, Bytes(2 * Ts * h * a)), Bytes(Ts * h)));
    st.dense_params += vocab_rank * h + (m.learned_positions ? Count(m.max_seq) * h : 0);
  }
  if (last) {
    add_output_head(st.post_forward, m, l, d, vocab_rank, kMainHead, cross_entropy_of(w));
    // Transient logits at the loss's peak: Megatron's fused loss holds the low-precision logits
    // besides its fp32 copy; unfused F.cross_entropy's backward holds the fp32 gradient arriving
    // at the log-softmax and the one it produces next to the saved log-softmax (2 x 4 bytes);
    // flash-attn's fused loss and the compiled torch loss write one low-precision gradient next
    // to the saved logits.
    // Under TP the torch loss is DTensor's loss_parallel (torchtitan's default whenever tp > 1,
    // ParallelDims.loss_parallel_enabled): its fused backward (torch/distributed/tensor/parallel/
    // loss.py, _nll_loss_and_log_softmax_backward) computes (zeros_like(x) + exp(x)) * grad next
    // to the saved log-softmax x, so three fp32 transients of the shard are live (3 x 4 bytes).
    const CrossEntropy ce = cross_entropy_of(w);
    const Count torch_transients = l.tp > 1 ? 3 : 2;
    st.logits_bytes = ce == CrossEntropy::TorchFp32 ? Bytes(T * vocab_rank * 4 * torch_transients) : Bytes(T * vocab_rank * a);
    const bool head_is_embedding_copy = m.tied_embeddings && first;  // one stage holds both
    if (!head_is_embedding_copy) st.dense_params += vocab_rank * h;
    st.dense_params += m.norm == NormKind::LayerNorm ? 2 * h : h;
  }
  for (const Op& op : st.pre_forward) st.pre_saved += op.saved;
  for (const Op& op : st.post_forward) st.post_saved += op.saved;
  for (auto it = st.pre_forward.rbegin(); it != st.pre_forward.rend(); ++it) add_backward(st.pre_backward, *it);
  for (auto it = st.post_forward.rbegin(); it != st.post_forward.rend(); ++it) add_backward(st.post_backward, *it);
  if (last) add_head_input_grad(st.post_backward, d, kMainHead);
  if (last && w.train_metric_passes > 0) {
    // The training metrics' cross-entropy forwards on the logits after the backward, each
    // torch.nn.CrossEntropyLoss under autocast: ATen's F.cross_entropy on upcast logits
    // (add_output_head); no gradient.
    Op metrics = memory("train_metrics", OpClass::Loss,
                        Bytes(double(T) * double(vocab_rank) * aten_cross_entropy_forward_bytes(a) * w.train_metric_passes));
    metrics.backward = true;
    st.post_backward.push_back(metrics);
  }
  if (last) add_mtp(st, first, m, l, w, d, parts);
  if (bf16_optimizer_runs(w, l)) {  // the embedding (and learned positions); the head and final norm
    if (first) add_fp32_grad_accumulation(st.pre_backward, st.dense_params, m.learned_positions ? 2 : 1);
    if (last) add_fp32_grad_accumulation(st.post_backward, st.dense_params, m.norm == NormKind::LayerNorm ? 3 : 2);
  }
  return st;
}

}  // namespace

int weight_matrices_per_layer(const ModelSpec& m, const Layout& l, bool moe) {
  const int attention = m.mla.enabled ? 5 : 2;
  if (!moe) return attention + 2;
  return attention + 1 + 2 * (m.moe.num_experts / std::max(1, l.ep) + m.moe.shared_experts);
}

std::shared_ptr<const ProgramParts> program_parts(const ModelSpec& m, const Layout& l, const Workload& w) {
  const Dims d = make_dims(m, l, w);
  auto out = std::make_shared<ProgramParts>();
  out->dense = make_layer(m, l, w, d, false);
  if (m.moe.enabled()) out->moe = make_layer(m, l, w, d, true);
  if (l.partial_recompute()) {
    Layout kept = l;
    kept.recompute = Recompute::None;
    kept.recompute_num_layers = kept.recompute_every = 0;
    out->dense_kept = make_layer(m, kept, w, d, false);
    if (m.moe.enabled()) out->moe_kept = make_layer(m, kept, w, d, true);
  }
  // The stages this pipeline has: one that is both first and last, or a first, a last and middles.
  for (bool last : {false, true})
    for (bool first : {false, true})
      if ((first && last) == (l.pp == 1)) out->edges[ProgramParts::edge_index(first, last)] = make_edges(m, l, w, d, *out, first, last);
  return out;
}

bool same_stage_work(const StageProgram& a, const StageProgram& b) {
  return a.first == b.first && a.last == b.last && a.layers == b.layers && a.dense_layers == b.dense_layers &&
         a.moe_layers == b.moe_layers && a.kept_dense_layers == b.kept_dense_layers &&
         a.kept_moe_layers == b.kept_moe_layers && a.dense_params == b.dense_params && a.expert_params == b.expert_params;
}

LayerRuns layer_runs(const StepProgram& prog, const StageProgram& st) {
  LayerRuns r;
  const ProgramParts& p = *prog.parts;
  const int layers[ProgramParts::kLayerKinds] = {st.dense_layers - st.kept_dense_layers, st.moe_layers - st.kept_moe_layers,
                                                 st.kept_dense_layers, st.kept_moe_layers};
  const char* parts[ProgramParts::kLayerKinds] = {"dense", "moe", "dense_kept", "moe_kept"};
  for (size_t k = 0; k < ProgramParts::kLayerKinds; ++k)
    if (layers[k] > 0) r.runs[size_t(r.n++)] = {&p.layer(k), layers[k], k, parts[k]};
  return r;
}

size_t first_same_stage(const StepProgram& prog, size_t s) {
  size_t i = 0;
  while (i < s && !same_stage_work(prog.stages[i], prog.stages[s])) ++i;
  return i;
}

bool same_program_parts(const Layout& a, const Layout& b, const Workload& work) {
  // DeepSpeed's BF16_Optimizer adds an op to each backward at some ZeRO stages (bf16_optimizer_runs).
  return a.tp == b.tp && a.cp == b.cp && a.ep == b.ep && a.etp == b.etp && a.sp == b.sp &&
         a.micro_batch == b.micro_batch && a.recompute == b.recompute && a.recompute_modules == b.recompute_modules &&
         a.partial_recompute() == b.partial_recompute() && (a.pp == 1) == (b.pp == 1) &&
         bf16_optimizer_runs(work, a) == bf16_optimizer_runs(work, b) &&
         fsdp_float8_gathers(work, a) == fsdp_float8_gathers(work, b) &&
         // torchtitan's SP collectives copy their tensor only without async TP (sp_dim1_copies).
         (work.framework != Framework::Torchtitan || a.tp_overlap == b.tp_overlap);
}

StepProgram expand_step_program(const ModelSpec& m, const Layout& l, const Workload& w) {
  return expand_step_program(m, l, w, program_parts(m, l, w));
}

StepProgram expand_step_program(const ModelSpec& m, const Layout& l, const Workload& w,
                                std::shared_ptr<const ProgramParts> parts) {
  StepProgram prog;
  const Dims d = make_dims(m, l, w);
  prog.micro_batches = micro_batches_per_step(l, w);
  prog.tokens_per_micro_batch = d.tokens;
  prog.activation_bytes = d.act;
  prog.parts = std::move(parts);
  const ProgramParts& pp = *prog.parts;

  const std::vector<int> counts = stage_layer_counts(m, l);
  // Partial recompute: the layers keeps_activations marks (model order: virtual stage c of rank s
  // is chunk c * pp + s) keep their activations.
  std::vector<int> kept_dense(size_t(l.pp), 0), kept_moe(size_t(l.pp), 0);
  if (l.partial_recompute()) {
    const std::vector<int> chunks = virtual_stage_layer_counts(m, l);
    int start = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      for (int i = 0; i < chunks[c]; ++i)
        if (keeps_activations(chunks, l, int(c), i)) {
          const bool moe = m.moe.enabled() && m.is_moe_layer(start + i);
          (moe ? kept_moe : kept_dense)[c % size_t(l.pp)] += 1;
        }
      start += chunks[c];
    }
  }
  prog.stages.reserve(size_t(l.pp));
  int layer = 0;
  for (int s = 0; s < l.pp; ++s) {
    StageProgram st;
    st.stage = s;
    st.first = s == 0;
    st.last = s == l.pp - 1;
    st.layers = counts[s];
    st.moe_layers = m.moe_layers_in(layer, layer + counts[s]);
    st.dense_layers = counts[s] - st.moe_layers;
    // (Clamped: the stage's MoE count above takes its layers as one run, the chunks interleave.)
    st.kept_moe_layers = std::min(st.moe_layers, kept_moe[size_t(s)]);
    st.kept_dense_layers = std::min(st.dense_layers, kept_dense[size_t(s)] + kept_moe[size_t(s)] - st.kept_moe_layers);
    layer += counts[s];
    // Aliasing the parts: the stage keeps them alive without a copy.
    const std::optional<StageEdges>& edges = pp.edges[ProgramParts::edge_index(st.first, st.last)];
    if (!edges) throw std::logic_error("expand_step_program: parts built for another pipeline depth (same_program_parts)");
    st.edges = std::shared_ptr<const StageEdges>(prog.parts, &*edges);
    st.dense_params = Count(st.dense_layers) * pp.dense.dense_params + Count(st.moe_layers) * pp.moe.dense_params +
                      st.edges->dense_params;
    st.expert_params = Count(st.moe_layers) * pp.moe.expert_params + st.edges->expert_params;
    st.linear_weight_params = Count(st.dense_layers) * pp.dense.linear_weight_params +
                              Count(st.moe_layers) * pp.moe.linear_weight_params;
    // Megatron sends the SP-sharded activation between stages (scatter-gather optimisation).
    st.pp_send = collective("pp_send", Group::PP, Collective::SendRecv, Bytes((l.sp ? d.sp_tokens : d.tokens) * d.h * d.act), 2);
    prog.stages.push_back(std::move(st));
  }
  return prog;
}

Op collective_op(const char* name, Group g, Collective c, Bytes message, int size) {
  Op op;
  op.name = name;
  op.kind = c == Collective::SendRecv ? OpKind::PointToPoint : OpKind::Collective;
  op.op_class = OpClass::Communication;
  op.group = g;
  op.collective = c;
  op.message = message;
  op.group_size = size;
  return op;
}

std::string op_id(int stage, const char* part, const char* pass, size_t index, const char* name) {
  char at[16];
  std::snprintf(at, sizeof at, "%02zu", index);
  // Appended, not "s" + ...: GCC 12 misreads that (a -Wrestrict false positive, its PR 105329).
  std::string id = "s";
  id += std::to_string(stage);
  for (const char* piece : {part, pass, static_cast<const char*>(at), name}) (id += '.') += piece;
  return id;
}

std::string to_string(OpClass c) {
  switch (c) {
    case OpClass::Gemm: return "gemm";
    case OpClass::Attention: return "attention";
    case OpClass::Norm: return "norm";
    case OpClass::Elementwise: return "elementwise";
    case OpClass::Router: return "router";
    case OpClass::Permute: return "permute";
    case OpClass::Embedding: return "embedding";
    case OpClass::Loss: return "loss";
    case OpClass::Communication: return "communication";
    case OpClass::Optimizer: return "optimizer";
  }
  return "?";
}

std::string to_string(Group g) {
  switch (g) {
    case Group::None: return "none";
    case Group::TP: return "tp";
    case Group::CP: return "cp";
    case Group::DP: return "dp";
    case Group::PP: return "pp";
    case Group::EP: return "ep";
    case Group::ExpertTensor: return "etp";
    case Group::ExpertData: return "edp";
    case Group::DPReplica: return "dp-replica";
  }
  return "?";
}

}  // namespace sixfold
