#pragma once
// The op class (models/step_program.hpp's OpClass names) of an op the runtime times, so that
// measured time can be set against the cost model's compute_by_op_class. Until the executor runs
// the step program itself (issue 14), its op names are its own: this is the one place that maps
// them. Returns "" for a scope that only wraps other timed ops (recompute_forward re-runs the
// forward's own timed ops), which a per-class sum must skip to count nothing twice.
#include <string>

namespace sixfold {

std::string measured_op_class(const std::string& executor_op);

}  // namespace sixfold
