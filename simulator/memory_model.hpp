#pragma once
// Memory per GPU by component, from the ops of the step program: what each op saves, times the
// micro-batches a stage holds in flight under its schedule; weights, gradients and optimizer
// state by the ZeRO stage; and the buffers frameworks really hold, as named terms.
#include <string>
#include <utility>
#include <vector>

#include "models/step_program.hpp"
#include "simulator/framework_memory.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

// The moment of a stage's step at which its memory peaks.
enum class PeakMoment { LayerBackward, LossBackward, OptimizerStep };
std::string to_string(PeakMoment m);

// One stage's memory at its peak, by component. Three totals, as PyTorch and the GPU count them:
//   allocated: bytes in live tensors (torch.cuda.max_memory_allocated): the model states plus what
//     is live at the peak moment, the larger of the backward's working set and the optimizer step's;
//   reserved: what PyTorch's caching allocator holds from the GPU for them
//     (torch.cuda.max_memory_reserved): allocated plus fragmentation;
//   total: reserved plus what lives outside the allocator (CUDA context, NCCL's and cuBLAS's
//     buffers, TransformerEngine's userbuffers): what must fit in the GPU's memory.
struct MemoryBreakdown {
  int stage = 0;
  Bytes weights = 0;
  Bytes gradients = 0;
  Bytes master_weights = 0;
  Bytes optimizer_states = 0;
  Bytes optimizer_step = 0;       // live only in the optimizer step (DeepSpeed's fp32 gradient copy)
  Bytes activations = 0;          // dense layers and the embedding
  Bytes moe_activations = 0;      // MoE layers (their attention included)
  Bytes logits = 0;               // LM head logits and the fp32 softmax of the loss
  Bytes gathered_parameters = 0;  // ZeRO-3/FSDP: unsharded parameters (and gradients) in flight
  Bytes communication_buffers = 0;
  Bytes workspace = 0;            // one layer's backward working set: recompute, attention buffers
  Bytes outside_allocator = 0;    // CUDA context, library workspaces, NCCL, TE userbuffers
  Bytes fragmentation = 0;        // reserved - allocated
  PeakMoment peak_moment = PeakMoment::LayerBackward;

  Bytes model_states() const { return weights + gradients + master_weights + optimizer_states; }
  // What the backward holds besides the model states. The optimizer step runs after the backward
  // has freed it, so `allocated` takes the larger of the two (every component stays listed).
  Bytes backward_working_set() const;
  Bytes allocated() const;
  Bytes reserved() const { return allocated() + fragmentation; }
  Bytes total() const { return reserved() + outside_allocator; }
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
// Bytes per gradient element a data-parallel reduction moves: the gradient's own, or 2 where the
// run reduces in bf16 (Megatron's --grad-reduce-in-bf16 buffer; FSDP's reduce_dtype bf16, whose
// reduce-scatter runs in bf16 before the fp32 shard is updated).
Bytes reduce_bytes_per_gradient(const Workload& work);

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

// PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp): every block is rounded up to
// 512 bytes (kMinBlockSize); requests up to 1 MiB come from 2 MiB segments (kSmallBuffer), up to
// 10 MiB from 20 MiB segments (kLargeBuffer), larger ones from segments rounded up to 2 MiB
// (kRoundLarge). The bytes one tensor of `bytes` takes from the GPU when it needs a new segment.
Bytes allocator_block_bytes(Bytes bytes);
Bytes allocator_segment_bytes(Bytes bytes);

// Fragmentation: the share of the caching allocator's reserved memory that no live tensor uses,
// for the memory allocated and freed within a step (activations, logits, gathers, buckets; model
// states are allocated once and do not fragment). GMLake (Guo et al., ASPLOS 2024, arXiv
// 2401.08156) measured it on eight LLMs on A100-80GB: the memory-reduction techniques that free and
// re-allocate tensors of irregular sizes within a step (recomputation, ZeRO-3 gathers, offload)
// leave PyTorch's allocator 15% fragmented on average (GMLake's stitching removes 15 points, up to
// 33); without them the allocation pattern repeats every micro-batch and the blocks are reused,
// for which sixfold keeps its 5% prior.
inline constexpr double kFragmentationIrregular = 0.15;
inline constexpr double kFragmentationRegular = 0.05;
// Reserved bytes per allocated byte of a step's transient memory, minus one: f / (1 - f).
double fragmentation_per_transient_byte(const Layout& layout);

// What a framework's own memory log reports as its peak, the figure published runs quote:
// torchtitan logs torch.cuda.max_memory_reserved (components/metrics.py, "memory: ...GiB"), the
// allocator's reserved bytes; the others are read as the device's used memory (nvidia-smi), the total.
Bytes reported_peak_memory(const std::vector<MemoryBreakdown>& stages, Framework framework);

std::vector<MemoryBreakdown> stage_memory(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                          const Layout& layout, const StepProgram& program);
// One stage's (program.stages[stage]); stage_memory is this for every stage.
MemoryBreakdown stage_memory_of(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                const Layout& layout, const StepProgram& program, int stage);

}  // namespace sixfold
