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
  Seconds duration() const { return compute + tp_exposed + cp_exposed + ep + overhead; }
  void add(const OpListCost& other, double times);
};

// Which ops of a backward list to price: all, all but the weight-gradient GEMMs (ZB-H1's B
// block), or only those (its W block).
enum class OpSelection { All, WithoutWeightGrad, OnlyWeightGrad };

// Ops [0, recompute_ops) count as recompute.
OpListCost price_op_list(const std::vector<Op>& ops, size_t recompute_ops, const OpPricer& pricer, bool tp_overlap,
                         OpSelection selection = OpSelection::All);

}  // namespace sixfold
