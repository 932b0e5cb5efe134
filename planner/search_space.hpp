#pragma once
// The space of parallel layouts for N GPUs: every (dp, tp, pp, cp, ep, etp) mesh that satisfies
// the layout constraints of models/layout.hpp, and per mesh the micro-batch, ZeRO stage,
// recompute policy, sequence parallelism, DP overlap mode and pipeline schedule.
//
// The space is walked in two levels so that the planner can share work: a Mesh fixes the
// degrees (and so dp and the GPU placement of every group); a ProgramKey adds what changes the
// step program (sp, micro-batch, recompute); a Variant adds what only changes the pricing
// (ZeRO stage, DP overlap, schedule and vpp). Constraints that cut a whole mesh are counted
// once per mesh; those that cut a variant are counted once per variant.
#include <map>
#include <string>
#include <vector>

#include "models/layout.hpp"
#include "models/model_spec.hpp"

namespace sixfold {

struct SearchOptions {
  int max_tp = 0;                 // 0: the GPUs per node (TP stays inside NVLink)
  Count max_micro_batch = 64;     // micro-batch candidates are the powers of two up to this
  std::vector<int> zero_stages = {0, 1, 2, 3};
  std::vector<Recompute> recompute = {Recompute::None, Recompute::Selective, Recompute::SelectiveOp, Recompute::Full};
  std::vector<DpOverlap> dp_overlap = {DpOverlap::None, DpOverlap::PerLayer, DpOverlap::Bucketed};
  std::vector<Schedule> schedules = {Schedule::OneFOneB, Schedule::Interleaved, Schedule::GPipe,
                                     Schedule::ZeroBubble};
  bool uneven_stages = true;      // also try first/last stages one layer lighter (Llama 3's 405B layout)
  bool sp_off = true;             // also enumerate tp > 1 without sequence parallelism
  // Under full recompute, also Megatron's block recompute of the first 1, 2, 3, 4, 6, ... layers of each
  // virtual stage (Layout::recompute_num_layers); restrict_to_framework turns it off elsewhere.
  bool block_recompute = true;
  // Under full recompute, also torchtitan's checkpointing of every 8th, 6th, 4th, 3rd or 2nd layer
  // (Layout::recompute_every); restrict_to_framework turns it on for torchtitan only.
  bool every_recompute = false;
  // Megatron's interleaved schedule for a mesh whose stages no vpp divides, with or without the
  // embedding and loss in the split, through a custom pipeline layout
  // (--pipeline-model-parallel-layout; Variant::pipeline_layout).
  bool custom_pipeline_layouts = true;
  // TP communication overlapped with the GEMMs on every tp > 1 layout with sequence parallelism,
  // where the framework runs it: Megatron's --tp-comm-overlap (TransformerEngine userbuffers; it
  // needs --sequence-parallel), torchtitan's Async TP (only on compiled blocks: with --compile).
  // Overlap never adds time (overlap::with_hiding_cost) and NVIDIA's recipes turn it on for every
  // TP run (Megatron-Bridge scripts/performance/utils/overrides.py), so it is not searched both
  // ways; `plan --no-tp-overlap` prices TP communication exposed instead.
  bool tp_overlap = true;
  // Ring context parallelism (Megatron's --context-parallel-size, torchtitan's
  // context_parallel_degree). DeepSpeed has none: its sequence parallelism is Ulysses, an all-to-all
  // of heads that sixfold does not price; restrict_to_framework turns it off there.
  bool context_parallel = true;
  // Also hybrid sharding within a node (Layout::dp_shard) for meshes whose data-parallel group spans
  // nodes, where the framework shards that ZeRO stage so (hybrid_sharding_allows): it keeps the
  // parameter gathers on NVLink and sends only gradients across nodes, at the price of sharded states
  // split dp_shard ways instead of dp ways.
  bool hybrid_sharding = true;
};
// Custom layouts are tried up to this many virtual stages per rank: Megatron's recipes that need
// one run 2 to 4 (DeepSeek-V3: pp 8 x vpp 2 and 4, pp 4 x vpp 4; Megatron-LM examples/moe_recipes,
// Megatron-Bridge), and each more multiplies the layouts priced.
inline constexpr int kMaxCustomLayoutVpp = 4;

// Keeps only what `framework` can run: FSDP2 (torchtitan) has ZeRO 0 and 3 only, and op-level
// selective checkpointing instead of Megatron's core-attention recompute; Megatron and DeepSpeed
// have no op-level checkpointing.
void restrict_to_framework(SearchOptions& options, Framework framework);

// Constraint name -> how many meshes or variants it removed. std::map keeps the order stable.
using PruneCounts = std::map<std::string, Count>;
void add_counts(PruneCounts& into, const PruneCounts& from);

// Degrees that fix the step program's shape and the placement of every group.
// Whether the search prices TP communication overlapped for this framework (SearchOptions::tp_overlap):
// on tp > 1 layouts with sequence parallelism.
bool framework_overlaps_tp(const Workload& work, const SearchOptions& o);

struct Mesh {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, etp = 1;
  int first_stage_layers = 0, last_stage_layers = 0;
  bool tp_overlap = false;  // its sequence-parallel layouts overlap TP communication (SearchOptions::tp_overlap)
  std::vector<Count> micro_batches;  // candidate micro-batch sizes for this dp
  // Hybrid sharding within a node where sharding over all of dp would cross nodes: the most
  // data-parallel ranks whose tp*cp*dp_shard block fits in one node (at least 2, below dp); 0: none.
  int node_shard = 0;
};

// What else changes the step program of a mesh.
struct ProgramKey {
  bool sp = false;
  Count micro_batch = 1;
  Recompute recompute = Recompute::None;
  unsigned recompute_modules = 0;  // selective recompute's Megatron-Core modules (0: core attention)
  int recompute_num_layers = 0;    // block recompute's layers per virtual stage (0: every layer)
  int recompute_every = 0;         // torchtitan's every k-th layer (0: every layer)
  int policy = 0;                  // index of the policy in recompute_policies, lightest first
};

// The recompute policies the planner tries, lightest first: the requested ones, with selective
// recompute also adding Megatron-Core's modules the model has (layernorm; moe_act for MoE;
// mla_up_proj for MLA) to core attention, and full recompute preceded by block recompute of
// 1, 2, 3, 4, 6, 8, 12, ... layers per virtual stage (fewer recomputed layers: more memory, less time)
// under Megatron, and by checkpointing every 8th, 6th, 4th, 3rd, 2nd layer under torchtitan.
struct RecomputePolicy {
  Recompute recompute = Recompute::None;
  unsigned modules = 0;
  int num_layers = 0;  // Layout::recompute_num_layers
  int every = 0;       // Layout::recompute_every
};
std::vector<RecomputePolicy> recompute_policies(const ModelSpec& model, const SearchOptions& options);
// Whether `lighter` (earlier in recompute_policies) recomputes a subset of what `heavier` does, so
// that where it fits, `heavier` would only be slower: no recompute before any; the selective ladder
// and the partial full recompute (block, every k-th layer) each in their order; any of them before
// recomputing every layer. Selective and partial full recompute are not ordered (op-level selective
// re-runs every layer's cheap ops and their launches, a partial full recompute every op of a few
// layers): where one fits, the other is still priced.
bool recomputes_subset(const RecomputePolicy& lighter, const RecomputePolicy& heavier);

// What only changes the pricing.
struct Variant {
  int zero = 0;
  DpOverlap dp_overlap = DpOverlap::Bucketed;
  Schedule schedule = Schedule::OneFOneB;
  int vpp = 1;
  // Megatron's embedding- and loss-accounting split in place of the mesh's first/last stage
  // layers (same stage totals, but virtual stages of equal size but for the first and last).
  bool accounts_pipeline_split = false;
  // Megatron's custom pipeline layout (Layout::pipeline_layout) where vpp divides neither the
  // mesh's stages nor them with the embedding and loss: each rank's layers over its virtual
  // stages as evenly as they go, the earlier ones the heavier (the same stage totals).
  std::string pipeline_layout;
  int dp_shard = 0;  // hybrid sharding (Layout::dp_shard), 0: over all of dp
  bool operator==(const Variant&) const = default;
};

Layout make_layout(const Mesh& mesh, const ProgramKey& key, const Variant& v);

// Every valid mesh for `gpus` GPUs; counts meshes removed by each constraint.
std::vector<Mesh> enumerate_meshes(const ModelSpec& model, const Workload& work, int gpus, int scale_up_gpus,
                                   const SearchOptions& options, PruneCounts& pruned);

// Program keys of a mesh in the order the planner walks them: sp on before off, micro-batch
// ascending, recompute from none to full (so a lighter policy that fits dominates heavier ones).
// Keys whose sp would need a sequence that tp does not divide are counted and left out.
std::vector<ProgramKey> program_keys(const ModelSpec& model, const Workload& work, const Mesh& mesh,
                                     const SearchOptions& options, PruneCounts& pruned);

// Pricing variants of a mesh at a micro-batch; GPipe is counted as dominated by 1F1B (the same
// time in the closed form, more activations in flight) and not returned. Counts what it removes.
std::vector<Variant> variants(const ModelSpec& model, const Workload& work, const Mesh& mesh, Count micro_batch,
                              const SearchOptions& options, PruneCounts& pruned);

// The whole space flattened (tests and small problems; the planner walks it level by level).
std::vector<Layout> enumerate_layouts(const ModelSpec& model, const Workload& work, int gpus, int scale_up_gpus,
                                      const SearchOptions& options, PruneCounts& pruned);

// How many parallelism features a layout turns on: the tie-break that prefers simpler layouts.
int complexity(const Layout& l);
// A total order on layouts (the last tie-break, so that the ranking is deterministic).
bool layout_less(const Layout& a, const Layout& b);

}  // namespace sixfold
