#include "simulator/dp_traffic.hpp"

#include <algorithm>
#include <cmath>

#include "simulator/collective_cost.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

DpOps dp_ops(const ModelSpec& model, const Workload& work, const Layout& l, const StageProgram& st,
             Count micro_batches) {
  const FrameworkTraits fw = framework_traits(work.framework);
  const StateBytes sb = state_bytes(work);
  // Dense weights reduce over dp x cp (stride tp), expert weights over the expert-data group (the
  // group sizes; where they sit on nodes matters only to the price, dp_op_time).
  const int dense_group_size = place_gradient_group(l, 1).size;
  const int expert_group_size = place_group(Group::ExpertData, l, 1).size;
  // Hybrid sharding: each shard's gradient, reduce-scattered within its shard group, is then
  // all-reduced across the shard's replicas (FSDP's HYBRID_SHARD, Megatron's distributed-optimizer
  // instances, DeepSpeed's MiCS).
  const int replicas = l.shard_replicas();
  // DeepSpeed's BF16_Optimizer all-reduces its fp32 gradients, ZeRO-1 partition or not
  // (bf16_optimizer_runs; pipe/engine.py _bf16_reduce_grads).
  const bool bf16_optimizer = bf16_optimizer_runs(work, l);
  const Bytes gradient = bf16_optimizer ? 4 : reduce_bytes_per_gradient(work);
  const Bytes dense_grads = double(st.dense_params) * gradient;
  const Bytes expert_grads = double(st.expert_params) * gradient;
  const Bytes dense_weights = double(st.dense_params) * sb.weight;
  // What a parameter gather moves of the dense weights: the linear layers' in fp8 under the FSDP
  // float8 all-gather or Megatron's fp8 primary weights, the rest (norms, embedding, output head) in
  // the weights' dtype.
  const Bytes dense_gathered =
      fsdp_float8_gathers(work, l) || megatron_fp8_primary_weights(work, l)
          ? double(st.dense_params - st.linear_weight_params) * sb.weight + double(st.linear_weight_params) * 1.0
          : dense_weights;
  const Bytes expert_weights = double(st.expert_params) * sb.weight;
  const Collective grad_op = l.zero == 0 || bf16_optimizer ? Collective::AllReduce : Collective::ReduceScatter;
  const int layers = std::max(1, st.layers);
  const Count m = micro_batches;

  DpOps d;
  d.ops.reserve(8);  // two of each collective kind, the replicas' reduction and the optimizer: one allocation
  if (l.zero == 3) {
    // FSDP reduce-scatters per layer, DeepSpeed per reduce bucket; gathers are per layer (FSDP
    // flat parameters) or per parameter tensor (DeepSpeed).
    d.reductions = fw.zero3_reduces_in_buckets
                       ? std::max(1, int(std::ceil((dense_grads + expert_grads) / gradient_bucket_bytes(l, work))))
                       : layers;
    d.gathers = layers;
    if (fw.zero3_gather_per_tensor)
      // Per weight matrix (weight_matrices_per_layer); biases and norms stay resident under
      // DeepSpeed's stage3_param_persistence_threshold (1e5 elements).
      d.gathers = std::max(layers, st.dense_layers * weight_matrices_per_layer(model, l, false) +
                                       st.moe_layers * weight_matrices_per_layer(model, l, true));
    if (fw.zero3_regathers_for_recompute && l.recompute == Recompute::Full) d.backward_gather_passes = 2;
    // Legacy DeepSpeed reduce-scatters each weight's gradient on its own, like its gathers.
    d.synchronous = fw.zero3_synchronous;
    if (d.synchronous) d.reductions = d.gathers;
    d.reduce_every_micro_batch = true;
    if (l.pp > 1 && fw.zero3_keeps_params_under_pp) {
      d.gather_once = true;
      d.reduce_every_micro_batch = false;
    }
  } else {
    d.reduce_every_micro_batch = l.zero == 2;
    // Per layer by hand, or FSDP's ZeRO-2 from each layer's post-backward hook; else in buckets.
    if (l.dp_overlap == DpOverlap::PerLayer || (l.zero == 2 && fw.zero2_reduces_per_layer)) d.reductions = layers;
    else if (l.dp_overlap == DpOverlap::Bucketed)
      d.reductions = std::max(1, int(std::ceil((dense_grads + expert_grads) / gradient_bucket_bytes(l, work))));
    // Without overlap the gradients go in one collective after the backward.
    if (l.dp_overlap == DpOverlap::None) d.reductions = 1;
  }
  // A collective of each group, `n` of them splitting the bytes evenly (each pays its own latency
  // and small-message penalty), left out over a group of one rank.
  auto add = [&](const char* dense_name, const char* expert_name, DpRole role, Collective c, Bytes dense, Bytes expert,
                 int n, Count per_step) {
    const bool list = l.zero == 3 && fw.zero3_list_collectives;
    if (dense > 0 && dense_group_size > 1) {
      DpOp o{collective_op(dense_name, Group::DP, c, dense / n, dense_group_size), role, false, per_step, list};
      o.op.backward = true;
      d.ops.push_back(o);
    }
    if (expert > 0 && expert_group_size > 1) {
      DpOp o{collective_op(expert_name, Group::ExpertData, c, expert / n, expert_group_size), role, true, per_step, list};
      o.op.backward = true;
      d.ops.push_back(o);
    }
  };
  const Count passes = d.reduce_every_micro_batch ? m : 1;
  add("grad_reduce", "expert_grad_reduce", DpRole::Reduction, grad_op, dense_grads, expert_grads, d.reductions,
      passes * d.reductions);
  if (replicas > 1 && dense_grads > 0) {
    DpOp o{collective_op("grad_replica_reduce", Group::DPReplica, Collective::AllReduce,
                         dense_grads / double(dense_group_size) / d.reductions, replicas),
           DpRole::Reduction, false, passes * d.reductions};
    o.op.backward = true;
    d.ops.push_back(o);
  }
  if (l.zero == 1 || l.zero == 2)
    add("param_gather", "expert_param_gather", DpRole::ParamGather, Collective::AllGather, dense_gathered, expert_weights, 1, 1);
  if (l.zero == 3) {
    const Count gathers_per_step = d.gather_once ? Count(d.gathers) : m * d.gathers * (1 + d.backward_gather_passes);
    add("zero3_gather", "expert_zero3_gather", DpRole::Zero3Gather, Collective::AllGather, dense_gathered, expert_weights,
        d.gathers, gathers_per_step);
    // FSDP2 copies every gathered parameter out of the all-gather buffer: read and write the
    // gathered bytes, after each gather (FrameworkTraits::zero3_copies_out_gathers).
    if (fw.zero3_copies_out_gathers && !work.fsdp1) {
      auto copy_out = [&](const char* name, Bytes gathered, bool expert, int group_size) {
        if (gathered <= 0 || group_size <= 1) return;
        Op c;
        c.name = name;
        c.kind = OpKind::Memory;
        c.op_class = OpClass::Elementwise;
        c.bytes = 2.0 * gathered / d.gathers;
        d.ops.push_back({c, DpRole::Zero3CopyOut, expert, gathers_per_step});
      };
      copy_out("zero3_gather_copy_out", dense_gathered, false, dense_group_size);
      copy_out("expert_zero3_gather_copy_out", expert_weights, true, expert_group_size);
    }
  }
  // AdamW over this rank's shard: reads the master weights (the weights in fp32 training), the
  // gradient and both moments, writes the master, the moments and the low-precision copy
  // (28-30 bytes per parameter with fp32 moments).
  // BF16_Optimizer partitions at stage 0 too; a hybrid shard spans dp_shard x cp.
  const Count shard = l.zero >= 1 || bf16_optimizer ? Count(l.shard_dp()) * l.cp : 1;
  const double params = double(st.dense_params + st.expert_params) / double(shard);
  const Bytes master = sb.master > 0 ? sb.master : sb.weight;
  Op step;
  step.name = "optimizer_step";
  step.kind = OpKind::Memory;
  step.op_class = OpClass::Optimizer;
  const Bytes held_gradient = bf16_optimizer ? 4 : sb.gradient;  // what the step reads: the kept gradient
  step.bytes = params * (2 * master + held_gradient + 2 * sb.optimizer + (sb.master > 0 ? sb.weight : 0));
  // The FSDP float8 all-gather's scales, after the step: the amax of every linear weight's fp32
  // shard (torch._foreach_norm, inf-norm, in precompute_float8_dynamic_scale_for_fsdp), then one
  // all-reduce of a float per weight, whose latency is left out with the step's other small ops.
  if (fsdp_float8_gathers(work, l)) step.bytes += 4.0 * double(st.linear_weight_params) / double(shard);
  d.ops.push_back({step, DpRole::Optimizer, false, 1});
  return d;
}

Seconds list_collective_extra(const DpOp& o, const HardwareProfile& hw) {
  if (!o.list_collective) return 0;
  const double passes = o.op.collective == Collective::AllGather ? 3 : 2;
  return double(o.op.group_size) * kListCollectiveHostPerRank +
         passes * o.op.message / (hw.memory_bandwidth * hw.memory_efficiency);
}

namespace {
// Where the dense gradient (or shard) group, a shard's replicas and the expert-data group sit.
struct DpPlacements {
  GroupPlacement dense, replicas, expert;
  DpPlacements(const Layout& l, int scale_up_gpus)
      : dense(place_gradient_group(l, scale_up_gpus)),
        replicas(place_group(Group::DPReplica, l, scale_up_gpus)),
        expert(place_group(Group::ExpertData, l, scale_up_gpus)) {}
  const GroupPlacement& of(const DpOp& o) const {
    return o.expert ? expert : o.op.group == Group::DPReplica ? replicas : dense;
  }
};

Seconds op_time(const DpOp& o, const DpPlacements& where, const HardwareProfile& hw) {
  if (o.role == DpRole::Optimizer)
    return o.op.bytes / (hw.memory_bandwidth * hw.memory_efficiency) + 10 * hw.kernel_overhead + hw.step_overhead;
  if (o.role == DpRole::Zero3CopyOut) return o.op.bytes / (hw.memory_bandwidth * hw.memory_efficiency);
  return collective_time(o.op.collective, o.op.message, where.of(o), hw) + list_collective_extra(o, hw);
}
}  // namespace

Seconds dp_op_time(const DpOp& o, const Layout& l, const HardwareProfile& hw) {
  return op_time(o, DpPlacements(l, hw.scale_up_gpus()), hw);
}

DpTraffic dp_traffic(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l,
                     const StageProgram& st) {
  const FrameworkTraits fw = framework_traits(work.framework);
  const DpOps d = dp_ops(model, work, l, st, 1);
  DpTraffic t;
  static_cast<DpSchedule&>(t) = d;
  const DpPlacements where(l, hw.scale_up_gpus());
  Seconds gather_one = 0;    // one gather of each group
  Seconds copy_out_one = 0;  // and its copy-out
  for (const DpOp& o : d.ops) {
    const Seconds one = op_time(o, where, hw);
    switch (o.role) {
      case DpRole::Reduction: {
        t.reduction += one;
        // The same gradients in one collective: what dp_overlap none issues (and the simulator
        // schedules for every ZeRO stage without overlap).
        DpOp whole = o;
        whole.op.message *= d.reductions;
        t.full_reduction += op_time(whole, where, hw);
        break;
      }
      case DpRole::ParamGather: t.param_gather += one; break;
      case DpRole::Zero3Gather: gather_one += one; break;
      case DpRole::Zero3CopyOut: copy_out_one += one; break;
      case DpRole::Optimizer: t.optimizer = one; break;
    }
  }
  t.gather_pass = d.gathers * gather_one;
  t.gather_copy_out = d.gathers * copy_out_one;
  if (l.zero == 3 && fw.zero3_gather_per_tensor) t.fetch_host = double(t.gathers) * kZero3FetchHostOps * hw.kernel_overhead;
  if (l.zero != 3 && l.dp_overlap == DpOverlap::PerLayer) {
    const StateBytes sb = state_bytes(work);
    t.flatten_copy = 4.0 * (double(st.dense_params) + double(st.expert_params)) * sb.gradient /
                     (hw.memory_bandwidth * hw.memory_efficiency);
  }
  return t;
}

std::vector<DpTraffic> dp_traffic_by_stage(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                           const Layout& l, const StepProgram& prog) {
  std::vector<DpTraffic> out;
  out.reserve(prog.stages.size());
  for (size_t s = 0; s < prog.stages.size(); ++s) {
    const size_t same = first_same_stage(prog, s);
    out.push_back(same < s ? out[same] : dp_traffic(model, hw, work, l, prog.stages[s]));
  }
  return out;
}

bool same_dp_traffic(const Layout& a, const Layout& b) {
  return a.dp == b.dp && a.shard_dp() == b.shard_dp() && a.tp == b.tp && a.cp == b.cp && a.pp == b.pp &&
         a.ep == b.ep && a.etp == b.etp &&
         a.zero == b.zero && a.dp_overlap == b.dp_overlap && a.bucket_bytes == b.bucket_bytes &&
         (a.recompute == Recompute::Full) == (b.recompute == Recompute::Full);
}

}  // namespace sixfold
