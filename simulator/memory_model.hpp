#pragma once
// Memory per GPU by component, from the ops of the step program: what each op saves, times the
// micro-batches a stage holds in flight under its schedule; weights, gradients and optimizer
// state by the ZeRO stage; and the buffers frameworks really hold, as named terms.
#include <string>
#include <utility>
#include <vector>

#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct MemoryBreakdown {
  int stage = 0;
  Bytes weights = 0;
  Bytes gradients = 0;
  Bytes master_weights = 0;
  Bytes optimizer_states = 0;
  Bytes activations = 0;          // dense layers and the embedding
  Bytes moe_activations = 0;      // MoE layers (their attention included)
  Bytes logits = 0;               // LM head logits and the fp32 softmax of the loss
  Bytes communication_buffers = 0;
  Bytes workspace = 0;            // CUDA context, library workspaces, recompute working set
  Bytes fragmentation = 0;

  Bytes total() const;
  // (name, bytes) in a fixed order, for tables and JSON.
  std::vector<std::pair<std::string, Bytes>> components() const;
};

// Bytes per parameter of each model-state part. Mixed precision (bf16/fp16/fp8): 2-byte weights
// and gradients, fp32 master weights and Adam moments (ZeRO paper's K = 12). fp32 training: 4-byte
// weights and gradients, no master copy, K = 8.
struct StateBytes {
  Bytes weight, gradient, master, optimizer;
};
StateBytes state_bytes(Dtype dtype);
// The same as the framework keeps them: fp32 gradients under bf16/fp8 where its traits say so
// (Megatron-LM does not for fp16; torchtitan's FSDP2 reduces in fp32 for every low precision).
StateBytes state_bytes(const Workload& work);

// The DP gradient bucket a layout reduces in: its own bucket_bytes, else the framework's default.
// Megatron-Core: max(40M, 1M x DP size) gradient elements (DistributedDataParallel, which grows
// buckets with the DP group so each reduction's latency stays small); DeepSpeed: reduce_bucket_size,
// 5e8 elements; torchtitan (PyTorch DDP when replicating): bucket_cap_mb = 25 MiB.
Bytes gradient_bucket_bytes(const Layout& layout, const Workload& work);

// Micro-batches (in whole-stage units) that stage `stage` holds at its peak under the schedule:
// GPipe m; 1F1B and ZB-H1 min(p - stage, m); interleaved Megatron's warm-up count in chunks / v.
double in_flight_micro_batches(const Layout& layout, Count micro_batches, int stage);

// Micro-batches model chunk `chunk` (0..vpp-1) of stage `stage` holds at that stage's peak. The
// embedding lives in chunk 0 of stage 0, the head and loss in the last chunk of the last stage, so
// their saved bytes scale with these counts, not with the stage's average: under the interleaved
// schedule the last stage's last chunk holds one micro-batch however many the stage holds.
double chunk_in_flight(const Layout& layout, Count micro_batches, int stage, int chunk);

// The activation bytes a stage holds at its peak: its layers' share of the in-flight micro-batches
// plus the embedding's and the head's, each counted by its own chunk.
struct HeldActivations {
  Bytes layers = 0, moe = 0, pre = 0, post = 0;
  Bytes total() const { return layers + moe + pre + post; }
};
HeldActivations held_activations(const Layout& layout, const StepProgram& program, const StageProgram& stage);

// The fraction of activation memory the caching allocator loses to fragmentation (prior; PyTorch
// reports 5-10% for transformer training, e.g. Rajbhandari et al. 2020, section 6).
inline constexpr double kFragmentation = 0.05;

std::vector<MemoryBreakdown> stage_memory(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                          const Layout& layout, const StepProgram& program);

}  // namespace sixfold
