#include "simulator/memory_model.hpp"

#include <algorithm>
#include <cmath>

#include "models/pipeline_schedule.hpp"

namespace sixfold {

std::string to_string(PeakMoment m) {
  switch (m) {
    case PeakMoment::LayerBackward: return "layer_backward";
    case PeakMoment::LossBackward: return "loss_backward";
    case PeakMoment::OptimizerStep: return "optimizer_step";
  }
  return "?";
}

Bytes MemoryBreakdown::backward_working_set() const {
  return activations + moe_activations + logits + gathered_parameters + communication_buffers + workspace;
}

Bytes MemoryBreakdown::allocated() const { return model_states() + std::max(backward_working_set(), optimizer_step); }

std::vector<std::pair<std::string, Bytes>> MemoryBreakdown::components() const {
  return {{"weights", weights},
          {"gradients", gradients},
          {"master_weights", master_weights},
          {"optimizer_states", optimizer_states},
          {"optimizer_step", optimizer_step},
          {"activations", activations},
          {"moe_activations", moe_activations},
          {"logits", logits},
          {"gathered_parameters", gathered_parameters},
          {"communication_buffers", communication_buffers},
          {"workspace", workspace},
          {"outside_allocator", outside_allocator},
          {"fragmentation", fragmentation}};
}

Bytes allocator_block_bytes(Bytes bytes) { return std::ceil(bytes / 512.0) * 512.0; }

Bytes allocator_segment_bytes(Bytes bytes) {
  const Bytes block = allocator_block_bytes(bytes);
  if (block <= 1 * kMiB) return 2 * kMiB;
  if (block < 10 * kMiB) return 20 * kMiB;
  return std::ceil(block / (2.0 * kMiB)) * 2.0 * kMiB;
}

double fragmentation_per_transient_byte(const Layout& l) {
  const bool irregular = l.recompute == Recompute::Full || l.recompute == Recompute::SelectiveOp || l.zero == 3;
  const double f = irregular ? kFragmentationIrregular : kFragmentationRegular;
  return f / (1.0 - f);
}

Bytes reported_peak_memory(const std::vector<MemoryBreakdown>& stages, Framework framework) {
  Bytes peak = 0;
  for (const MemoryBreakdown& s : stages) peak = std::max(peak, framework == Framework::Torchtitan ? s.reserved() : s.total());
  return peak;
}

StateBytes state_bytes(Dtype d) {
  if (d == Dtype::FP32 || d == Dtype::TF32) return {4, 4, 0, 8};
  return {2, 2, 4, 8};
}

StateBytes state_bytes(const Workload& w) {
  StateBytes b = state_bytes(w.dtype);
  const bool low = w.dtype == Dtype::BF16 || w.dtype == Dtype::FP8 ||
                   (w.dtype == Dtype::FP16 && w.framework == Framework::Torchtitan);
  // Megatron's --grad-reduce-in-bf16 keeps its gradient buffer in bf16; FSDP's bf16 reduce dtype
  // (torchtitan) reduces in bf16 but keeps fp32 gradient shards (reduce_bytes_per_gradient).
  if (low && framework_traits(w.framework).fp32_gradients &&
      !(w.grad_reduce_in_bf16 && w.framework == Framework::Megatron))
    b.gradient = 4;
  if (w.bf16_adam_moments) b.optimizer = 4;
  return b;
}

Bytes reduce_bytes_per_gradient(const Workload& w) {
  return w.grad_reduce_in_bf16 ? std::min<Bytes>(2, state_bytes(w).gradient) : state_bytes(w).gradient;
}

Bytes gradient_bucket_bytes(const Layout& l, const Workload& w) {
  if (l.bucket_bytes > 0) return l.bucket_bytes;
  const Bytes element = state_bytes(w).gradient;
  switch (w.framework) {
    case Framework::Megatron: return element * std::max(40e6, 1e6 * double(l.dp) * double(l.cp));
    case Framework::DeepSpeed:
    case Framework::DeepSpeedLegacy: return element * kDeepSpeedReduceBucket;
    case Framework::Torchtitan: return 25 * kMiB;
  }
  return 25 * kMiB;
}

double in_flight_micro_batches(const Layout& l, Count m, int stage) {
  // The schedule's warm-up and the forward it runs before each backward (models/pipeline_schedule),
  // in whole-stage units: a virtual chunk holds 1/vpp of the stage's layers.
  const int v = l.schedule == Schedule::Interleaved ? l.vpp : 1;
  return double(peak_held_blocks(l.schedule, l.pp, v, m, stage)) / v;
}

double chunk_in_flight(const Layout& l, Count m, int stage, int chunk) {
  if (l.schedule != Schedule::Interleaved) return in_flight_micro_batches(l, m, stage);
  // Megatron-LM (and torch.distributed.pipelining's Interleaved1F1B) run forwards in groups of pp
  // micro-batches per chunk: chunk 0 for micro-batches 0..p-1, chunk 1 for the same, ..., then
  // chunk 0 again for p..2p-1. The first `warm-up + 1` of them are held at the peak.
  const Count p = l.pp, v = l.vpp;
  const Count held = peak_held_blocks(l.schedule, l.pp, l.vpp, m, stage);
  const Count rounds = held / (p * v), rest = held % (p * v);
  return double(rounds * p + std::clamp<Count>(rest - chunk * p, 0, p));
}

HeldActivations held_activations(const Layout& l, const StepProgram& prog, const StageProgram& st) {
  const Count m = prog.micro_batches;
  const double in_flight = in_flight_micro_batches(l, m, st.stage);
  HeldActivations h;
  for (const LayerRun& run : layer_runs(prog, st))
    (run.program->moe ? h.moe : h.layers) += in_flight * (run.layers * run.program->saved);
  h.pre = chunk_in_flight(l, m, st.stage, 0) * st.edges->pre_saved;
  h.post = chunk_in_flight(l, m, st.stage, l.virtual_stages() - 1) * st.edges->post_saved;
  return h;
}

MemoryBreakdown stage_memory_of(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                const Layout& l, const StepProgram& prog, int stage) {
  const double fragmentation = fragmentation_per_transient_byte(l);
  const StageProgram& st = prog.stages.at(size_t(stage));
  MemoryBreakdown mb;
  mb.stage = st.stage;
  const FrameworkStageMemory fw = framework_stage_memory(model, work, l, prog, st);
  mb.weights = fw.weights;
  mb.gradients = fw.gradients;
  mb.master_weights = fw.master_weights;
  mb.optimizer_states = fw.optimizer_states;
  mb.optimizer_step = fw.optimizer_step;

  const HeldActivations acts = held_activations(l, prog, st);
  mb.activations = acts.layers + acts.pre;
  mb.moe_activations = acts.moe;
  // The last stage keeps the fp32 softmax of each in-flight micro-batch, and where its pipeline
  // keeps them, every micro-batch's output.
  mb.logits = acts.post + fw.stage_outputs;
  mb.gathered_parameters = fw.gathered_parameters;
  // Communication buffers: the framework's (DDP buckets, DeepSpeed's ipg bucket) and the SP
  // all-gather output.
  mb.communication_buffers = fw.communication_buffers;
  if (l.sp) mb.communication_buffers += Bytes(prog.tokens_per_micro_batch * model.hidden * prog.activation_bytes);

  // The backward's peak is either the loss's backward on the last stage (the transient logits and
  // softmax gradients) or one layer's backward (what it rematerialises, full and op-level
  // recompute, the attention backward's own buffers, and its unsharded gradient before the
  // reduce): they do not overlap in time.
  const auto layer_set = [](const LayerProgram& lp) { return lp.recompute_workspace + lp.attention_workspace; };
  const Bytes recompute_set = std::max(layer_set(prog.dense_layer()), layer_set(prog.moe_layer()));
  const Bytes layer_peak = recompute_set + fw.layer_gradient;
  if (st.edges->logits_bytes > layer_peak) {
    mb.logits += st.edges->logits_bytes;
    mb.peak_moment = PeakMoment::LossBackward;
  } else {
    mb.workspace = recompute_set;
    mb.gathered_parameters += fw.layer_gradient;
  }
  const Bytes transient = std::max(mb.backward_working_set(), mb.optimizer_step);
  if (mb.optimizer_step > mb.backward_working_set()) mb.peak_moment = PeakMoment::OptimizerStep;
  mb.fragmentation = fragmentation * transient;
  mb.outside_allocator = hw.context_memory + fw.userbuffers;
  return mb;
}

std::vector<MemoryBreakdown> stage_memory(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                          const Layout& l, const StepProgram& prog) {
  std::vector<MemoryBreakdown> out;
  out.reserve(prog.stages.size());
  for (size_t s = 0; s < prog.stages.size(); ++s) out.push_back(stage_memory_of(model, hw, work, l, prog, int(s)));
  return out;
}

}  // namespace sixfold
