#include "simulator/dp_traffic.hpp"

#include <algorithm>
#include <cmath>

#include "simulator/collective_cost.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

namespace {
// Weights of one layer, the unit DeepSpeed's ZeRO-3 gathers one at a time: the attention
// projections (Megatron fuses QKV; MLA has five) and the MLP's two (gate and up fused); MoE layers
// have each local expert's two and the router. Biases and norms stay resident (under DeepSpeed's
// stage3_param_persistence_threshold of 1e5 elements).
int weights_per_layer(const ModelSpec& m, const Layout& l, bool moe) {
  const int attention = m.mla.enabled ? 5 : 2;
  if (!moe) return attention + 2;
  return attention + 1 + 2 * (m.moe.num_experts / std::max(1, l.ep) + m.moe.shared_experts);
}
}  // namespace

DpTraffic dp_traffic(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l,
                     const StageProgram& st) {
  const FrameworkTraits fw = framework_traits(work.framework);
  const StateBytes sb = state_bytes(work);
  // Dense weights reduce over dp x cp (stride tp), expert weights over the expert-data group.
  const GroupPlacement dense_group = place_gradient_group(l, hw.gpus_per_node);
  const GroupPlacement expert_group = place_group(Group::ExpertData, l, hw.gpus_per_node);
  const Bytes dense_grads = double(st.dense_params) * sb.gradient;
  const Bytes expert_grads = double(st.expert_params) * sb.gradient;
  const Bytes dense_weights = double(st.dense_params) * sb.weight;
  const Bytes expert_weights = double(st.expert_params) * sb.weight;
  const Collective grad_op = l.zero == 0 ? Collective::AllReduce : Collective::ReduceScatter;
  // n collectives splitting both groups' bytes evenly: each pays its own latency and
  // small-message penalty.
  auto one_of = [&](Collective c, Bytes dense, Bytes expert, int n) {
    return collective_time(c, dense / n, dense_group, hw) + collective_time(c, expert / n, expert_group, hw);
  };
  const int layers = std::max(1, st.layers);

  DpTraffic t;
  t.full_reduction = one_of(grad_op, dense_grads, expert_grads, 1);
  t.param_gather = l.zero == 1 || l.zero == 2 ? one_of(Collective::AllGather, dense_weights, expert_weights, 1) : 0;
  t.reduce_every_micro_batch = l.zero >= 2;
  if (l.zero == 3) {
    // FSDP reduce-scatters per layer, DeepSpeed per reduce bucket; gathers are per layer (FSDP
    // flat parameters) or per parameter tensor (DeepSpeed).
    t.reductions = fw.zero3_reduces_in_buckets
                       ? std::max(1, int(std::ceil((dense_grads + expert_grads) / gradient_bucket_bytes(l, work))))
                       : layers;
    t.gathers = layers;
    if (fw.zero3_gather_per_tensor)
      t.gathers = std::max(layers, st.dense_layers * weights_per_layer(model, l, false) +
                                       st.moe_layers * weights_per_layer(model, l, true));
    t.gather_pass = t.gathers * one_of(Collective::AllGather, dense_weights, expert_weights, t.gathers);
    if (fw.zero3_gather_per_tensor) t.fetch_host = double(t.gathers) * kZero3FetchHostOps * hw.kernel_overhead;
    if (fw.zero3_regathers_for_recompute && l.recompute == Recompute::Full) t.backward_gather_passes = 2;
    // Legacy DeepSpeed reduce-scatters each weight's gradient on its own, like its gathers.
    t.synchronous = fw.zero3_synchronous;
    if (t.synchronous) t.reductions = t.gathers;
    if (l.pp > 1 && fw.zero3_keeps_params_under_pp) {
      t.gather_once = true;
      t.reduce_every_micro_batch = false;
    }
  } else if (l.dp_overlap == DpOverlap::PerLayer) {
    t.reductions = layers;
    t.flatten_copy = 4.0 * (dense_grads + expert_grads) / (hw.memory_bandwidth * hw.memory_efficiency);
  } else if (l.dp_overlap == DpOverlap::Bucketed) {
    t.reductions = std::max(1, int(std::ceil((dense_grads + expert_grads) / gradient_bucket_bytes(l, work))));
  }
  t.reduction = one_of(grad_op, dense_grads, expert_grads, t.reductions);
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
  return a.dp == b.dp && a.tp == b.tp && a.cp == b.cp && a.pp == b.pp && a.ep == b.ep && a.etp == b.etp &&
         a.zero == b.zero && a.dp_overlap == b.dp_overlap && a.bucket_bytes == b.bucket_bytes &&
         (a.recompute == Recompute::Full) == (b.recompute == Recompute::Full);
}

}  // namespace sixfold
