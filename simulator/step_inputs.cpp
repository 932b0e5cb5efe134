// From a layout's step program to the simulator's per-block costs: each (stage, chunk, phase)
// block is priced op by op with OpPricer, with the exposure of its communication decided by the
// shared overlap rules (simulator/overlap_rules.hpp), and the data-parallel traffic priced as the
// closed-form model prices it, so that the two differ only in how the schedule plays out.
#include <algorithm>
#include <array>
#include <cmath>

#include "simulator/collective_cost.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/memory_model.hpp"
#include "simulator/op_cost.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/step_simulator.hpp"

namespace sixfold {

namespace {

struct LayerCosts {
  BlockCost forward, backward, weight_grad;
};

LayerCosts price_layer(const LayerProgram& layer, const OpPricer& pricer, bool tp_overlap, bool split,
                       double ep_unpaired) {
  LayerCosts c;
  c.forward = price_op_list(layer.forward, 0, pricer, tp_overlap, OpSelection::All);
  c.backward = price_op_list(layer.backward, layer.recompute_ops, pricer, tp_overlap,
                          split ? OpSelection::WithoutWeightGrad : OpSelection::All);
  if (split) c.weight_grad = price_op_list(layer.backward, 0, pricer, tp_overlap, OpSelection::OnlyWeightGrad);
  overlap_ep(c.forward, c.backward, pricer, ep_unpaired);
  return c;
}

}  // namespace

PipelineInputs pipeline_inputs(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& l, const StepProgram& prog) {
  const OpPricer pricer = OpPricer::of(hw, l, work);
  const bool split = splits_weight_grad(l.schedule);
  // Each layer program once, by kind (dense, MoE and, under partial recompute, their kept twins).
  std::array<LayerCosts, ProgramParts::kLayerKinds> priced;
  for (size_t k = 0; k < priced.size(); ++k)
    if (!prog.parts->layer(k).forward.empty()) priced[k] = price_layer(prog.parts->layer(k), pricer, l.tp_overlap, split,
                                                                          ep_overlap_unpaired_share(l, prog.micro_batches));
  // The optimizer and the memory come from the closed-form model: the simulator changes when
  // things happen, not what they cost.
  const std::vector<StageTime> closed = stage_times(model, hw, work, l, prog);
  const std::vector<MemoryBreakdown> memory = stage_memory(model, hw, work, l, prog);
  const int v = l.virtual_stages();
  const double reserved_per_byte = 1.0 + fragmentation_per_transient_byte(l);

  PipelineInputs in;
  in.schedule = l.schedule;
  in.micro_batches = prog.micro_batches;
  in.zero = l.zero;
  in.dp_overlap = l.dp_overlap;
  in.p2p_overlap = p2p_overlapped(work, l);
  in.overlap_slowdown = hw.overlap_slowdown;
  const GroupPlacement pp_place = pricer.placement(Group::PP);
  in.pp_link = pp_place.crosses_nodes ? Link::InterNode : Link::IntraNode;
  in.dp_link = place_gradient_group(l, hw.scale_up_gpus()).crosses_nodes ||
                       place_group(Group::DPReplica, l, hw.scale_up_gpus()).crosses_nodes ||
                       pricer.placement(Group::ExpertData).crosses_nodes
                   ? Link::InterNode
                   : Link::IntraNode;

  for (size_t si = 0; si < prog.stages.size(); ++si) {
    const StageProgram& st = prog.stages[si];
    const MemoryBreakdown& mem = memory[si];
    StageInputs s;
    s.send = l.pp > 1 ? pricer.time(st.pp_send) : 0;
    s.optimizer = closed[si].optimizer;

    // Memory held all step: everything but the per-micro-batch activations (and their share of
    // fragmentation), which the simulation adds and removes block by block.
    s.static_memory = mem.total() - reserved_per_byte * held_activations(l, prog, st).total();

    // Data-parallel traffic, the closed form's (dp_traffic), scheduled here.
    const DpTraffic dp = dp_traffic(model, hw, work, l, st);
    s.full_reduction = dp.full_reduction;
    s.synchronous_dp = dp.synchronous;
    s.reduce_every_micro_batch = dp.reduce_every_micro_batch;
    s.gather_once = dp.gather_once;
    // Megatron's overlapped parameter gather after the step hides behind the next step's first
    // forward: only what the closed form leaves exposed runs after the optimizer here.
    s.post_step_gather = closed[si].post_step_gather;  // its hiding cost included (overlap::with_hiding_cost)
    for (int c = 0; c < v; ++c) {
      ChunkInputs ch;
      ch.layers = std::max(1, st.layers / v);
      Bytes saved = 0;
      for (const LayerRun& run : layer_runs(prog, st)) {
        const double layers = double(run.layers) / v;  // a chunk holds 1/v of each
        const LayerCosts& c = priced[run.kind];
        ch.forward.add(c.forward, layers);
        ch.backward.add(c.backward, layers);
        ch.weight_grad.add(c.weight_grad, layers);
        saved += layers * run.program->saved;
      }
      // The embedding runs in the first chunk of the first stage, the head and loss in the last
      // chunk of the last stage.
      if (c == 0) {
        ch.forward.add(price_op_list(st.edges->pre_forward, 0, pricer, l.tp_overlap, OpSelection::All), 1);
        ch.backward.add(price_op_list(st.edges->pre_backward, 0, pricer, l.tp_overlap, split ? OpSelection::WithoutWeightGrad : OpSelection::All), 1);
        if (split) ch.weight_grad.add(price_op_list(st.edges->pre_backward, 0, pricer, l.tp_overlap, OpSelection::OnlyWeightGrad), 1);
        saved += st.edges->pre_saved;
      }
      if (c == v - 1) {
        ch.forward.add(price_op_list(st.edges->post_forward, 0, pricer, l.tp_overlap, OpSelection::All), 1);
        ch.backward.add(price_op_list(st.edges->post_backward, 0, pricer, l.tp_overlap, split ? OpSelection::WithoutWeightGrad : OpSelection::All), 1);
        if (split) ch.weight_grad.add(price_op_list(st.edges->post_backward, 0, pricer, l.tp_overlap, OpSelection::OnlyWeightGrad), 1);
        saved += st.edges->post_saved;
      }
      ch.activations = reserved_per_byte * saved;
      // Reductions spread over the chunks as evenly as whole reductions allow.
      ch.reductions = dp.reductions / v + (c < dp.reductions % v ? 1 : 0);
      ch.reduction = dp.reduction;
      ch.reduction_copy = dp.flatten_copy / v;
      ch.param_gather = l.zero == 3 ? dp.gather_pass / v : 0;
      ch.param_gather_backward = dp.backward_gather_passes * ch.param_gather;
      ch.gather_copy_out = l.zero == 3 ? dp.gather_copy_out / v : 0;
      ch.gather_copy_out_backward = dp.backward_gather_passes * ch.gather_copy_out;
      if (l.zero == 3 && !dp.gather_once) {  // DeepSpeed's per-module fetches, as the closed form
        ch.forward.overhead += dp.fetch_host / v;
        ch.backward.overhead += dp.backward_gather_passes * dp.fetch_host / v;
      }

      s.chunks.push_back(ch);
    }
    in.stages.push_back(std::move(s));
  }
  return in;
}

SimulationResult simulate_step(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& layout) {
  return simulate_step(model, hw, work, layout, expand_step_program(model, layout, work));
}

SimulationResult simulate_step(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& l, const StepProgram& prog, bool record_tasks) {
  PipelineInputs in = pipeline_inputs(model, hw, work, l, prog);
  in.record_tasks = record_tasks;
  SimulationResult r = simulate_pipeline(in);

  // predict's shape, with the simulated time and memory in place of the closed form's.
  Prediction& p = r.prediction;
  p = predict(model, hw, work, l, prog);
  p.step_time = r.step_time;
  p.time = r.breakdown;
  p.peak_memory = 0;
  for (const StageSimulation& s : r.stages)
    if (s.peak_memory > p.peak_memory) {
      p.peak_memory = s.peak_memory;
      p.peak_stage = s.stage;
    }
  p.memory = p.stage_memory[size_t(p.peak_stage)];
  set_throughput(p, model, hw, work, l);
  return r;
}

}  // namespace sixfold
