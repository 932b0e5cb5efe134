#include "simulator/memory_model.hpp"

#include <algorithm>
#include <cmath>

namespace sixfold {

Bytes MemoryBreakdown::total() const {
  return weights + gradients + master_weights + optimizer_states + activations + moe_activations + logits +
         communication_buffers + workspace + fragmentation;
}

std::vector<std::pair<std::string, Bytes>> MemoryBreakdown::components() const {
  return {{"weights", weights},
          {"gradients", gradients},
          {"master_weights", master_weights},
          {"optimizer_states", optimizer_states},
          {"activations", activations},
          {"moe_activations", moe_activations},
          {"logits", logits},
          {"communication_buffers", communication_buffers},
          {"workspace", workspace},
          {"fragmentation", fragmentation}};
}

StateBytes state_bytes(Dtype d) {
  if (d == Dtype::FP32 || d == Dtype::TF32) return {4, 4, 0, 8};
  return {2, 2, 4, 8};
}

StateBytes state_bytes(const Workload& w) {
  StateBytes b = state_bytes(w.dtype);
  const bool low = w.dtype == Dtype::BF16 || w.dtype == Dtype::FP8 ||
                   (w.dtype == Dtype::FP16 && w.framework == Framework::Torchtitan);
  if (low && framework_traits(w.framework).fp32_gradients) b.gradient = 4;
  if (w.bf16_adam_moments) b.optimizer = 4;
  return b;
}

Bytes gradient_bucket_bytes(const Layout& l, const Workload& w) {
  if (l.bucket_bytes > 0) return l.bucket_bytes;
  const Bytes element = state_bytes(w).gradient;
  switch (w.framework) {
    case Framework::Megatron: return element * std::max(40e6, 1e6 * double(l.dp) * double(l.cp));
    case Framework::DeepSpeed:
    case Framework::DeepSpeedLegacy: return element * 5e8;
    case Framework::Torchtitan: return 25 * kMiB;
  }
  return 25 * kMiB;
}

double in_flight_micro_batches(const Layout& l, Count m, int stage) {
  const int p = l.pp;
  switch (l.schedule) {
    case Schedule::GPipe: return double(m);
    case Schedule::OneFOneB:
    case Schedule::ZeroBubble: return double(std::min<Count>(p - stage, m));
    case Schedule::Interleaved: {
      // Megatron-LM's interleaved schedule warms up (p - rank - 1) * 2 + (v - 1) * p chunks, then
      // holds one more while it runs 1F1B (schedules.py, get_num_warmup_microbatches).
      const int v = l.vpp;
      const Count chunks = std::min<Count>(m * v, Count(p - stage - 1) * 2 + Count(v - 1) * p + 1);
      return double(chunks) / v;
    }
  }
  return 1;
}

double chunk_in_flight(const Layout& l, Count m, int stage, int chunk) {
  if (l.schedule != Schedule::Interleaved) return in_flight_micro_batches(l, m, stage);
  // Megatron-LM (and torch.distributed.pipelining's Interleaved1F1B) run forwards in groups of pp
  // micro-batches per chunk: chunk 0 for micro-batches 0..p-1, chunk 1 for the same, ..., then
  // chunk 0 again for p..2p-1. The first `warm-up + 1` of them are held at the peak.
  const Count p = l.pp, v = l.vpp;
  const Count held = std::min<Count>(m * v, Count(p - stage - 1) * 2 + (v - 1) * p + 1);
  const Count rounds = held / (p * v), rest = held % (p * v);
  return double(rounds * p + std::clamp<Count>(rest - chunk * p, 0, p));
}

HeldActivations held_activations(const Layout& l, const StepProgram& prog, const StageProgram& st) {
  const Count m = prog.micro_batches;
  const double in_flight = in_flight_micro_batches(l, m, st.stage);
  HeldActivations h;
  h.layers = in_flight * (st.dense_layers * prog.dense_layer.saved);
  h.moe = st.moe_layers > 0 ? in_flight * (st.moe_layers * prog.moe_layer.saved) : 0;
  h.pre = chunk_in_flight(l, m, st.stage, 0) * st.pre_saved;
  h.post = chunk_in_flight(l, m, st.stage, l.virtual_stages() - 1) * st.post_saved;
  return h;
}

namespace {
Count ceil_div(Count a, Count b) { return (a + b - 1) / b; }
}  // namespace

std::vector<MemoryBreakdown> stage_memory(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                          const Layout& l, const StepProgram& prog) {
  const StateBytes sb = state_bytes(work);
  const Count dense_shard = Count(l.dp) * l.cp;  // Megatron's distributed optimizer shards over dp x cp
  const Count expert_shard = std::max(1, l.tp * l.cp * l.dp / (l.ep * l.etp));
  std::vector<MemoryBreakdown> out;
  out.reserve(prog.stages.size());
  for (const StageProgram& st : prog.stages) {
    MemoryBreakdown mb;
    mb.stage = st.stage;
    // ZeRO shards are padded to equal size, so a rank holds ceil(params / shard).
    auto held = [&](Count params, Count shard, bool sharded) { return sharded ? ceil_div(params, shard) : params; };
    auto state = [&](Bytes per_param, int min_stage) {
      return per_param * double(held(st.dense_params, dense_shard, l.zero >= min_stage)) +
             per_param * double(held(st.expert_params, expert_shard, l.zero >= min_stage));
    };
    const bool keeps_params = l.zero == 3 && l.pp > 1 && framework_traits(work.framework).zero3_keeps_params_under_pp;
    mb.weights = state(sb.weight, keeps_params ? 4 : 3);
    // FSDP2 accumulates unsharded gradients across micro-batches in its reduce dtype, fp32.
    mb.gradients = keeps_params ? state(4, 4) : state(sb.gradient, 2);
    mb.master_weights = state(sb.master, 1);
    mb.optimizer_states = state(sb.optimizer, 1);

    const HeldActivations acts = held_activations(l, prog, st);
    mb.activations = acts.layers + acts.pre;
    mb.moe_activations = acts.moe;
    // The last stage keeps the fp32 softmax of each in-flight micro-batch and one set of logits.
    mb.logits = acts.post + st.logits_bytes;

    // Communication buffers: DDP buckets (two in flight), the SP all-gather output, and ZeRO-3's
    // gathered parameters of the current and the prefetched layer.
    const Count act = prog.activation_bytes;
    // Megatron's and DeepSpeed's buckets are views into their contiguous gradient buffer; PyTorch
    // DDP (torchtitan replicating) copies into two bucket buffers in flight.
    if (l.dp * l.cp > 1 && l.zero < 3 && l.dp_overlap == DpOverlap::Bucketed && work.framework == Framework::Torchtitan)
      mb.communication_buffers += 2 * gradient_bucket_bytes(l, work);
    if (l.sp) mb.communication_buffers += Bytes(prog.tokens_per_micro_batch * model.hidden * act);
    if (l.zero == 3 && st.layers > 0 && !keeps_params) {
      const Count layer_params = std::max(prog.dense_layer.dense_params, prog.moe_layer.dense_params + prog.moe_layer.expert_params);
      mb.communication_buffers += 2.0 * sb.weight * double(layer_params);
    }
    // What the backward rematerialises of one layer at a time (full and op-level recompute).
    const Bytes recompute_set = std::max(prog.dense_layer.recompute_workspace, prog.moe_layer.recompute_workspace);
    mb.workspace = hw.context_memory + recompute_set;
    mb.fragmentation = kFragmentation * (mb.activations + mb.moe_activations + mb.logits + recompute_set);
    out.push_back(mb);
  }
  return out;
}

}  // namespace sixfold
