#pragma once
// The op class of work the runtime times outside the step program's ops (program_ops.hpp: the
// pipeline receives, the tied embedding's gradient sum), so that measured time can be set against
// the cost model's classes; the program's own ops carry their class.
#include <map>
#include <string>

#include "common/units.hpp"

namespace sixfold {

struct RunReport;

// "communication" for pp_recv and tied_embedding_grad_allreduce, "other" otherwise.
std::string measured_op_class(const std::string& outside_op);

// Measured seconds per op class of the report's last step, each timed scope counted once (its own time).
std::map<std::string, Seconds> last_step_by_class(const RunReport& report);

}  // namespace sixfold
