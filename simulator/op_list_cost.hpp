#pragma once
// The critical-path cost of one pass over an op list (a layer's forward, its backward, the
// embedding or the head): compute, exposed communication by kind and host dispatch. Shared by
// the closed-form cost model and the step simulator, so that the two price ops identically and
// differ only in how the schedule plays out.
#include <vector>

#include "models/step_program.hpp"
#include "simulator/op_cost.hpp"

namespace sixfold {

struct OpListCost {
  Seconds compute = 0;      // GEMMs, attention, memory-bound ops (recompute included)
  Seconds recompute = 0;    // part of compute
  Seconds weight_grad = 0;  // part of compute: weight-gradient GEMMs (ZB-H1 defers them)
  Seconds tp_raw = 0, tp_exposed = 0;
  Seconds cp_raw = 0, cp_exposed = 0;
  Seconds ep = 0;           // EP all-to-all and expert-TP collectives, on the critical path
  Seconds overhead = 0;     // host dispatch beyond the GPU time (overlap::dispatch_bound)
  // One list's EP all-to-alls in order (a layer's dispatch and combine, or their gradients in
  // the backward) and its compute before, between and after them: what overlap_ep pairs. Not
  // summed by add().
  Seconds host = 0;  // the list's host dispatch time, for `overhead` once overlap_ep changes `ep`
  int ep_all_to_alls = 0;
  Seconds ep_all_to_all[2] = {0, 0};
  Seconds ep_segment[3] = {0, 0, 0};
  Seconds duration() const { return compute + tp_exposed + cp_exposed + ep + overhead; }
  void add(const OpListCost& other, double times);
};

// Which ops of a backward list to price: all, all but the weight-gradient GEMMs (ZB-H1's B
// block), or only those (its W block).
enum class OpSelection { All, WithoutWeightGrad, OnlyWeightGrad };

// Ops [0, recompute_ops) count as recompute. The EP all-to-alls are left on the critical path
// (`ep`); overlap_ep hides them where the workload overlaps them.
OpListCost price_op_list(const std::vector<Op>& ops, size_t recompute_ops, const OpPricer& pricer, bool tp_overlap,
                         OpSelection selection = OpSelection::All);

// Megatron's MoE all-to-all overlap (Workload::overlap_moe_expert_parallel_comm, its combined
// 1F1B; DeepSeek-V3's DualPipe, report 3.2.1 and Figure 4): the forward of one micro-batch runs
// beside the backward of another, each all-to-all of one under a compute part of the other: the
// backward's combine under the forward's attention, the forward's dispatch under the backward's
// expert MLP, the backward's dispatch under the forward's expert MLP, the forward's combine under
// the backward's attention. `forward` and `backward` are one layer's lists; each keeps what its
// own all-to-alls leave exposed, with the hiding cost. Lists that are not one dispatch and one
// combine (full recompute re-runs them) hide behind their own list's compute. No-op without the
// overlap. `unpaired` is the share of a rank's forwards (and as many backwards) that have no
// partner (ep_overlap_unpaired_share): those keep their all-to-alls exposed, so each list's EP
// time is that share of the unhidden time plus the rest of the hidden one.
void overlap_ep(OpListCost& forward, OpListCost& backward, const OpPricer& pricer, double unpaired = 0);

// The forwards a pipeline rank runs with no backward beside them, over all it runs: the warm-up
// (Megatron's num_warmup_microbatches, models/pipeline_schedule.hpp) of the first stage, which
// has the most, and at least the one forward that starts the step (with PP 1, Megatron's combined
// 1F1B runs forward i+1 beside backward i); the cool-down leaves as many backwards alone.
double ep_overlap_unpaired_share(const Layout& l, Count micro_batches);

}  // namespace sixfold
