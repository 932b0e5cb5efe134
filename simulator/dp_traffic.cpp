#include "simulator/dp_traffic.hpp"

#include <algorithm>
#include <cmath>

#include "simulator/collective_cost.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

namespace {
// Parameter tensors of one layer, the unit DeepSpeed's ZeRO-3 gathers one at a time: the
// attention and MLP projections (Megatron fuses QKV and the GLU's gate and up), their biases,
// the norms; MoE layers add each local expert's two projections and the router.
int parameter_tensors_per_layer(const ModelSpec& m, const Layout& l, bool moe) {
  const int per_linear = m.linear_bias ? 2 : 1;
  const int norm = m.norm == NormKind::LayerNorm ? 2 : 1;
  int t = (m.mla.enabled ? 5 : 2) * per_linear + (m.mla.enabled ? 2 : 0) * norm + 2 * norm;
  if (moe) t += 1 + 2 * per_linear * (m.moe.num_experts / std::max(1, l.ep) + m.moe.shared_experts);
  else t += 2 * per_linear;
  return t;
}
}  // namespace

DpTraffic dp_traffic(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l,
                     const StageProgram& st) {
  const FrameworkTraits fw = framework_traits(work.framework);
  const StateBytes sb = state_bytes(work.dtype);
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
    t.reductions = fw.zero3_reduce_bucket > 0
                       ? std::max(1, int(std::ceil((dense_grads + expert_grads) / fw.zero3_reduce_bucket)))
                       : layers;
    t.gathers = layers;
    if (fw.zero3_gather_per_tensor)
      t.gathers = std::max(layers, st.dense_layers * parameter_tensors_per_layer(model, l, false) +
                                       st.moe_layers * parameter_tensors_per_layer(model, l, true));
    t.gather_pass = t.gathers * one_of(Collective::AllGather, dense_weights, expert_weights, t.gathers);
    if (l.pp > 1 && fw.zero3_keeps_params_under_pp) {
      t.gather_once = true;
      t.reduce_every_micro_batch = false;
    }
  } else if (l.dp_overlap == DpOverlap::PerLayer) {
    t.reductions = layers;
  } else if (l.dp_overlap == DpOverlap::Bucketed) {
    t.reductions = std::max(1, int(std::ceil((dense_grads + expert_grads) / l.bucket_bytes)));
  }
  t.reduction = one_of(grad_op, dense_grads, expert_grads, t.reductions);
  return t;
}

}  // namespace sixfold
