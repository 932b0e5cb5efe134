#pragma once
// Pipeline schedules as the per-stage order of compute blocks: which (virtual chunk, micro-batch,
// phase) a stage runs next. The one copy of the schedules in the tree: the step simulator turns
// these orders into a dependency graph (the order fixes the schedule, the graph the timing), the
// executor runs its blocks in this order, and the memory model counts what the warm-up holds.
#include <vector>

#include "common/units.hpp"
#include "models/layout.hpp"

namespace sixfold {

// Forward, backward (input gradient, plus the weight gradient unless split off) and the deferred
// weight-gradient pass of zero-bubble schedules.
enum class Phase { Forward, Backward, WeightGrad };

struct ScheduledBlock {
  int chunk = 0;         // virtual chunk on this stage (0 .. vpp-1)
  Count micro_batch = 0;
  Phase phase = Phase::Forward;
};

// The order of blocks on stage `stage` of a pipeline of `stages` stages with `chunks` virtual
// chunks per stage and `micro_batches` micro-batches:
//  - GPipe: all forwards, then all backwards (Huang et al. 2019);
//  - 1F1B: p-s-1 warm-up forwards, then alternate, then the cool-down backwards (PipeDream-Flush,
//    Narayanan et al. 2021);
//  - interleaved 1F1B: Megatron-LM's order (schedules.py: warm-up (p-s-1)*2 + (v-1)*p chunks,
//    micro-batches in groups of p, chunks ascending for forward and descending for backward);
//  - ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"): 1F1B with the backward split into
//    B and W; stage s defers the W passes of its last s micro-batches into the cool-down bubble.
// Throws LayoutError for an interleaved pipeline whose micro-batches are not a multiple of p.
std::vector<ScheduledBlock> stage_order(Schedule schedule, int stages, int chunks, Count micro_batches, int stage);

// The warm-up of stage `stage`: the forward blocks it runs before the steady one-forward-one-
// backward phase (Megatron's num_warmup_microbatches; all of them under GPipe). And the blocks
// whose activations it holds at its peak: the warm-up and the steady phase's first forward, at
// most all its blocks (micro_batches x chunks).
Count warmup_forwards(Schedule schedule, int stages, int chunks, Count micro_batches, int stage);
Count peak_held_blocks(Schedule schedule, int stages, int chunks, Count micro_batches, int stage);

// Whether the schedule splits the backward into B and W blocks.
inline bool splits_weight_grad(Schedule s) { return s == Schedule::ZeroBubble; }

const char* to_string(Phase p);

}  // namespace sixfold
