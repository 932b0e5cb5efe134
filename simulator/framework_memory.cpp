#include "simulator/framework_memory.hpp"

#include <algorithm>

#include "simulator/memory_model.hpp"

namespace sixfold {

namespace {

Count ceil_div(Count a, Count b) { return (a + b - 1) / b; }

// Parameters of the embedding, the final norm and the output head on this stage (the root FSDP
// group in torchtitan; the largest modules DeepSpeed gathers).
Count edge_params(const ModelSpec& m, const Layout& l, const StageProgram& st) {
  const Count vocab_rank = ceil_div(m.vocab, l.tp);
  Count p = 0;
  if (st.first) p += vocab_rank * m.hidden + (m.learned_positions ? Count(m.max_seq) * m.hidden : 0);
  if (st.last) {
    if (!(m.tied_embeddings && l.pp == 1)) p += vocab_rank * m.hidden;
    p += m.norm == NormKind::LayerNorm ? 2 * m.hidden : m.hidden;
  }
  return p;
}

// Parameters under DeepSpeed's stage3_param_persistence_threshold (1e5 elements) in each layer:
// the norms (and their biases), which ZeRO-3 keeps whole on every rank.
Count persistent_params_per_layer(const ModelSpec& m) {
  const Count norm = m.norm == NormKind::LayerNorm ? 2 * m.hidden : m.hidden;
  return m.hidden < Count(kDeepSpeedPersistenceThreshold) ? 2 * norm : 0;
}

// torch.distributed.pipelining's receive buffers on this rank, one per micro-batch and stage it
// runs (framework_traits: pp_receive_buffer_per_micro_batch): the input buffers of the
// micro-batches not in flight at the peak (those in flight are their activation already) and
// every output-gradient buffer. A rank runs one stage per virtual chunk; the pipeline's first stage
// receives no input and its last no gradient.
Bytes pipeline_receive_buffers(const Layout& l, const StepProgram& prog, const StageProgram& st) {
  const Count m = prog.micro_batches;
  const int v = l.virtual_stages();
  const double message = st.pp_send.message;  // one micro-batch's activation at the stage boundary
  double buffers = 0;
  for (int chunk = 0; chunk < v; ++chunk) {
    const int stage = chunk * l.pp + st.stage;
    if (stage > 0) buffers += std::max(0.0, double(m) - chunk_in_flight(l, m, st.stage, chunk));
    if (stage < l.pp * v - 1) buffers += double(m);
  }
  return buffers * message;
}

}  // namespace

Count largest_module_params(const ModelSpec& m, const Layout& l, const StageProgram& st) {
  const Count vocab_rank = ceil_div(m.vocab, l.tp);
  Count largest = 0;
  if (st.first || (st.last && !(m.tied_embeddings && l.pp == 1))) largest = vocab_rank * m.hidden;
  if (st.layers > 0) {
    // The MLP's up projection (gate and up fused, as Megatron builds it) or the attention's QKV.
    const bool glu = m.activation == Activation::SwiGLU;
    const Count ffn = m.moe.enabled() ? std::max<Count>(m.ffn, m.moe.expert_ffn) : m.ffn;
    largest = std::max(largest, (glu ? 2 : 1) * ffn / l.tp * m.hidden);
    const Count qkv = (Count(m.heads) * m.q_head_dim() + 2 * Count(m.kv_heads) * m.head_dim) / l.tp * m.hidden;
    largest = std::max(largest, qkv);
  }
  return largest;
}

FrameworkStageMemory framework_stage_memory(const ModelSpec& model, const Workload& work, const Layout& l,
                                            const StepProgram& prog, const StageProgram& st) {
  const StateBytes sb = state_bytes(work);
  const FrameworkTraits traits = framework_traits(work.framework);
  // ZeRO and the distributed optimizer shard over dp x cp (a hybrid shard group: dp_shard x cp).
  const Count dense_shard = Count(l.shard_dp()) * l.cp;
  const Count expert_shard = std::max(1, l.tp * l.cp * l.dp / (l.ep * l.etp));
  auto held = [&](Count params, Count shard, bool sharded) { return sharded ? ceil_div(params, shard) : params; };
  // Bytes of a per-parameter state, sharded from ZeRO stage `min_stage` on (shards padded to equal size).
  auto state = [&](Bytes per_param, int min_stage) {
    return per_param * double(held(st.dense_params, dense_shard, l.zero >= min_stage)) +
           per_param * double(held(st.expert_params, expert_shard, l.zero >= min_stage));
  };
  const Count stage_params = st.dense_params + st.expert_params;
  const Count sharded_params = ceil_div(st.dense_params, dense_shard) + ceil_div(st.expert_params, expert_shard);
  // The transformer layer with the most parameters on this rank, dense or MoE: what FSDP-style
  // gathers and per-layer gradients hold one or two of at a time.
  const LayerProgram& largest_layer =
      prog.dense_layer().dense_params + prog.dense_layer().expert_params >=
              prog.moe_layer().dense_params + prog.moe_layer().expert_params
          ? prog.dense_layer()
          : prog.moe_layer();
  const Count layer_params = largest_layer.dense_params + largest_layer.expert_params;

  FrameworkStageMemory f;
  // The generic layout (Megatron-LM, and any framework below where it does the same): bf16 weights
  // and fp32 master weights and Adam moments, gradients in the framework's dtype (Megatron: fp32
  // main_grad buffer under bf16, arguments.py), each sharded from its ZeRO stage on.
  f.weights = state(sb.weight, 3);
  f.gradients = state(sb.gradient, 2);
  f.master_weights = state(sb.master, 1);
  f.optimizer_states = state(sb.optimizer, 1);

  switch (work.framework) {
    case Framework::Megatron: {
      // The DDP buckets are views into the contiguous grad buffer (param_and_grad_buffer.py), so no
      // copy. Megatron-FSDP-style ZeRO-3: the current and the prefetched layer gathered.
      if (l.zero == 3 && st.layers > 0) f.gathered_parameters = 2.0 * sb.weight * double(layer_params);
      // fp8: TransformerEngine's Linear quantizes its weight into a workspace it keeps on the module
      // when Megatron passes is_first_microbatch (its TE wrappers do unless
      // disable_parameter_transpose_cache): an fp8 copy and, for the backward's dgrad, its transpose,
      // 2 bytes a linear weight element besides the bf16 weight (module/linear.py,
      // get_weight_workspace(cache_name="weight")). With the distributed optimizer or Megatron-FSDP
      // the export runs fp8 primary weights instead (--fp8-param-gather): the parameter is that fp8
      // copy and transpose, no bf16 weight, the same 2 bytes the weights above count. Without them
      // Megatron refuses --fp8-param-gather (arguments.py), so plain DDP pays the cache.
      if (work.dtype == Dtype::FP8 && !megatron_fp8_primary_weights(work, l))
        f.weights += 2.0 * double(st.linear_weight_params);
      // --tp-comm-overlap: TransformerEngine's userbuffers, one (seq x micro-batch, hidden) buffer per
      // overlapped GEMM method; the all-gather ones in fp8 under fp8 (initialize_ub).
      if (l.tp_overlap && l.tp > 1 && st.layers > 0) {
        const double shape = double(prog.tokens_per_micro_batch) * double(model.hidden);
        const double ag_width = work.dtype == Dtype::FP8 ? 1 : double(prog.activation_bytes);
        f.userbuffers = shape * (kUserbufferAllGatherMethods * ag_width +
                                 kUserbufferReduceScatterMethods * double(prog.activation_bytes));
      }
      break;
    }
    case Framework::DeepSpeed:
    case Framework::DeepSpeedLegacy: {
      if (bf16_optimizer_runs(work, l)) {
        // bf16_optimizer.py (BF16_Optimizer, which DeepSpeed runs for bf16 at ZeRO stage 0;
        // bf16_optimizer_runs): bf16 weights and their gradients whole, an fp32 gradient for every
        // parameter of the stage (fp32_groups_gradients_flat), the fp32 weights and Adam moments
        // partitioned over the data-parallel ranks; no ZeRO ipg bucket. After the backward the engine
        // all-reduces the fp32 gradients through flattened buffers of MEMORY_OPT_ALLREDUCE_SIZE (5e8)
        // elements (pipe/engine.py _bf16_reduce_grads, buffered_allreduce_fallback).
        f.gradients = (double(sb.gradient) + 4.0) * double(stage_params);
        f.master_weights = double(sb.master) * double(sharded_params);
        f.optimizer_states = double(sb.optimizer) * double(sharded_params);
        f.optimizer_step = 4.0 * std::min<double>(kDeepSpeedReduceBucket, double(stage_params));
        break;
      }
      // The ipg bucket holds reduce_bucket_size elements: DeepSpeed's default or --bucket-size, the
      // size the DP reductions are priced at and the DeepSpeed export writes.
      const double bucket = gradient_bucket_bytes(l, work) / state_bytes(work).gradient;
      if (l.zero == 1 || l.zero == 2) {
        // stage_1_and_2.py: the 16-bit weights whole; ZeRO-2 keeps only this rank's gradient
        // partition (ZeRO-1 the whole gradients); one ipg bucket of reduce_bucket_size elements in
        // the optimizer dtype (setup_buckets: a second one only with overlap_comm, which stage 1/2
        // leave off, config.py overlap_comm_valid); step() copies the gradient partition to fp32
        // before the update ("single_grad_partition ... .to(fp32)").
        f.communication_buffers = double(sb.weight) * std::min<double>(bucket, double(stage_params));
        f.optimizer_step = 4.0 * double(sharded_params);
      }
      if (l.zero == 3) {
        // stage3.py: 16-bit parameter and gradient partitions, fp32 partitions and Adam moments;
        // norms under stage3_param_persistence_threshold stay whole; one ipg bucket per dtype
        // (reduce_bucket_size elements, allocated after the optimizer states); the fp32 gradient
        // of one sub-group at a time in the step (_prepare_fp32_grad_for_sub_group, sub_group_size).
        const Count persistent = Count(st.layers) * persistent_params_per_layer(model);
        f.weights += sb.weight * double(persistent - ceil_div(persistent, dense_shard));
        f.communication_buffers = double(sb.gradient) * std::min<double>(bucket, double(stage_params));
        f.optimizer_step = 4.0 * std::min<double>(kDeepSpeedSubGroup, double(sharded_params));
        // Gathered in flight: the module being run whole, and the prefetch bucket
        // (stage3_prefetch_bucket_size) behind it, within stage3_max_live_parameters; in the
        // largest module's backward its full 16-bit gradient too, before the reduce.
        const double largest = double(largest_module_params(model, l, st));
        const double live = std::min(largest + kDeepSpeedPrefetchBucket, std::max(largest, kDeepSpeedMaxLiveParameters));
        f.gathered_parameters = double(sb.weight) * live;
        f.layer_gradient = double(sb.gradient) * largest;
      }
      break;
    }
    case Framework::Torchtitan: {
      const bool keeps_params = l.zero == 3 && l.pp > 1 && traits.zero3_keeps_params_under_pp;
      const double reduce = double(reduce_bytes_per_gradient(work));  // FSDP2's reduce dtype: fp32, or bf16
      // Under the FSDP float8 all-gather a gathered linear weight is the fp8 all-gather output
      // (fsdp_post_all_gather wraps it in a Float8Tensor): 1 byte an element, not sb.weight.
      const double fp8_saving = fsdp_float8_gathers(work, l) ? double(sb.weight) - 1.0 : 0.0;
      if (l.zero == 3 && keeps_params) {
        // Under PP torchtitan does not reshard after forward (parallelize_llama.py): each block's
        // all-gather output (bf16) stays, and with gradient sync off for all but the last
        // micro-batch FSDP2 accumulates the unsharded gradient in its fp32 reduce dtype
        // (FSDPParam.to_accumulated_grad_if_needed); the sharded fp32 parameters stay besides.
        f.weights = state(sb.weight, 4) - fp8_saving * double(st.linear_weight_params);
        // In a bf16 reduce dtype the unsharded gradient accumulates as it is, bf16.
        f.gradients = state(reduce, 4);
        f.master_weights = state(4, 1);
        // A block's bf16 gradient before it is added into the fp32 accumulator; in the last
        // micro-batch FSDP2 copies the accumulated gradient into its reduce-scatter input
        // (foreach_reduce, in the reduce dtype), `reduce` bytes more per parameter of that block.
        if (st.layers > 0) f.layer_gradient = (double(sb.weight) + reduce) * double(layer_params);
      } else if (l.zero == 3) {
        // FSDP2 keeps the fp32 originals as the shards and casts to bf16 in the all-gather's
        // copy-in (MixedPrecisionPolicy param_dtype): no 16-bit shard is held. The sharded
        // gradients are fp32 (the parameters' dtype).
        f.weights = 0;
        f.master_weights = state(4, 1);
        f.gradients = state(4, 1);
        // Gathered: the root group (embedding, final norm, output head), which FSDP2 does not
        // reshard after forward (FSDPState._lazy_init drops the root's post-forward reshard), and
        // the current and the prefetched transformer block.
        f.gathered_parameters = double(sb.weight) * double(edge_params(model, l, st));
        if (st.layers > 0) {
          f.gathered_parameters += 2.0 * (sb.weight * double(layer_params) - fp8_saving * double(largest_layer.linear_weight_params));
          // In a block's backward: its unsharded bf16 gradient and the reduce-scatter input FSDP2
          // copies it into (foreach_reduce, in reduce_dtype: fp32 by default, bf16 if set so).
          f.layer_gradient = (double(sb.weight) + reduce) * double(layer_params);
        }
      } else if (l.dp * l.cp > 1 && l.dp_overlap == DpOverlap::Bucketed) {
        // PyTorch DDP (torchtitan replicating) copies gradients into two bucket buffers in flight.
        f.communication_buffers = 2 * gradient_bucket_bytes(l, work);
      }
      break;
    }
  }
  // torch.distributed.pipelining's buffers, whatever the data parallelism around it.
  if (l.pp > 1 && traits.pp_receive_buffer_per_micro_batch) {
    const Bytes receive = pipeline_receive_buffers(l, prog, st);
    f.communication_buffers += receive;
    if (work.pp_keeps_stage_outputs && st.last) {
      // Each micro-batch's logits as the output head leaves them: the activation dtype,
      // vocabulary-sharded under TP (torchtitan's loss_parallel), all micro-batches by the end.
      f.stage_outputs = double(prog.micro_batches) * double(prog.tokens_per_micro_batch) *
                        double(ceil_div(model.vocab, l.tp)) * double(prog.activation_bytes);
      f.optimizer_step = std::max(f.optimizer_step, 2 * f.stage_outputs + receive);
    }
  }
  return f;
}

}  // namespace sixfold
