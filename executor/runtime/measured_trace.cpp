#include "executor/runtime/measured_trace.hpp"

#include <algorithm>
#include <map>

#include "simulator/io/trace_writer.hpp"

namespace sixfold {

namespace {
Stream stream_of(Group g) {
  switch (g) {
    case Group::TP: return Stream::TP;
    case Group::CP: return Stream::CP;
    case Group::EP:
    case Group::ExpertTensor: return Stream::EP;
    case Group::PP: return Stream::PP;
    case Group::DP:
    case Group::DPReplica:
    case Group::ExpertData: return Stream::DP;
    case Group::None: break;
  }
  return Stream::Compute;
}

// Work outside the program's ops, by the name it is timed under (measured_op_class.hpp).
Stream stream_of(const std::string& outside) {
  if (outside.rfind("pp_", 0) == 0) return Stream::PP;
  if (outside.rfind("dp_", 0) == 0) return Stream::DP;
  return Stream::Compute;
}
}  // namespace

void write_measured_trace(const RunReport& report, const RankProgram& program, const std::string& title,
                          const std::string& path) {
  std::map<std::string, const ProgramOp*> by_id;
  for (const ProgramOpList* list : program.lists())
    for (const ProgramOp& op : list->ops) by_id[op.id] = &op;
  Seconds origin = 0;
  if (!report.last_step_ops.empty())
    origin = std::min_element(report.last_step_ops.begin(), report.last_step_ops.end(),
                              [](const StepEvent& a, const StepEvent& b) { return a.start < b.start; })->start;
  const Seconds step = report.step_times.empty() ? 0 : report.step_times.back();
  TraceFile out(path, {{"title", title}, {"step_time_s", step}, {"measured", true}, {"rank", report.rank}});
  const TraceSink events = out.sink();
  trace_process(events, program.stage, "stage " + std::to_string(program.stage) + " (rank " +
                                           std::to_string(report.rank) + ", measured)");
  for (const StepEvent& e : report.last_step_ops) {
    const auto it = by_id.find(e.name);
    const auto cls = report.op_class_of.find(e.name);
    nlohmann::json args = {{"self_us", e.self * 1e6}};
    if (cls != report.op_class_of.end()) args["op_class"] = cls->second;
    if (it != by_id.end()) {
      args["id"] = e.name;
      trace_complete(events, it->second->op->name, "op", program.stage, stream_of(it->second->op->group), e.start - origin,
                     e.end - e.start, args);
    } else {
      trace_complete(events, e.name, "outside_program", program.stage, stream_of(e.name), e.start - origin,
                     e.end - e.start, args);
    }
  }
  out.commit();
}

}  // namespace sixfold
