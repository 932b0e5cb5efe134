#pragma once
// `sixfold run --trace FILE` on the CPU backend: this rank's last step as measured, written in the
// simulator's Chrome-trace format (simulator/io/trace_writer.hpp) so that `sixfold simulate --trace`
// of the same plan opens beside it: the rank's pipeline stage is the process, each timed op an event
// named by its op id on the thread of the stream its group uses (compute; TP, CP, EP, PP or DP
// communication), time from the step's first op.
#include <string>

#include "executor/runtime/program_ops.hpp"
#include "executor/runtime/run.hpp"

namespace sixfold {

void write_measured_trace(const RunReport& report, const RankProgram& program, const std::string& title,
                          const std::string& path);

}  // namespace sixfold
