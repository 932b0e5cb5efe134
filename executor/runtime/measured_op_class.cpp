#include "executor/runtime/measured_op_class.hpp"

#include "executor/runtime/run.hpp"

namespace sixfold {

std::string measured_op_class(const std::string& op) {
  if (op.rfind("pp_", 0) == 0 || op.rfind("tied_embedding", 0) == 0) return "communication";
  return "other";
}

std::map<std::string, Seconds> last_step_by_class(const RunReport& report) {
  std::map<std::string, Seconds> out;
  for (const StepEvent& e : report.last_step_ops) {
    const auto it = report.op_class_of.find(e.name);
    out[it == report.op_class_of.end() ? measured_op_class(e.name) : it->second] += e.self;
  }
  return out;
}

}  // namespace sixfold
