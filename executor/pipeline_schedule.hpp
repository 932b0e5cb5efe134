#pragma once
// The order in which one pipeline rank runs the forward and backward passes of its micro-batches.
//   GPipe: all forwards, then all backwards (Huang et al. 2019).
//   1F1B:  pp - stage - 1 warm-up forwards, then one forward / one backward, then the remaining
//          backwards (PipeDream-Flush, Narayanan et al. 2021).
//   Interleaved 1F1B: each rank holds vpp model chunks; virtual micro-batch k runs on chunk
//          (k mod (pp*vpp)) / pp (backwards count chunks downwards), micro-batch
//          (k / (pp*vpp)) * pp + k mod pp; warm-up (pp - stage - 1) * 2 + (vpp - 1) * pp
//          (Megatron-LM's forward_backward_pipelining_with_interleaving).
// Sends never block (they complete at the end of the step), receives do (with the communicator's
// deadline). The MPI tests run 1F1B and interleaved (pp 2, vpp 2) against the single-rank run.
#include <vector>

#include "models/layout.hpp"

namespace sixfold {

struct PipelineAction {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank (0 unless interleaved)
};

std::vector<PipelineAction> pipeline_actions(Schedule schedule, int pp, int vpp, int stage, int micro_batches);

}  // namespace sixfold
