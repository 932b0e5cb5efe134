#pragma once
// The documented JSON shape of a prediction (README, "predict --json"):
// {"prediction": {step_time_s, tokens_per_s_per_gpu, tflops_model_per_gpu, tflops_hw_per_gpu, mfu,
//  peak_memory_bytes, peak_stage, peak_allocated_bytes, peak_reserved_bytes},
//  "memory": {component: bytes, total} (the peak stage), "time": {component: seconds, step},
//  "compute_by_op_class": {class: seconds},
//  "stages": [{stage, allocated_bytes, reserved_bytes, memory_bytes, peak_moment,
//              components: {component: bytes}, forward_s, backward_s}] (every pipeline stage)}
#include <nlohmann/json.hpp>

#include "simulator/cost_model.hpp"

namespace sixfold {

nlohmann::ordered_json prediction_summary_json(const Prediction& p);
nlohmann::ordered_json prediction_json(const Prediction& p);
nlohmann::ordered_json layout_json(const Layout& l);
// The workload as the plan file names its fields (docs/plan-schema.md).
nlohmann::ordered_json workload_json(const Workload& w);

}  // namespace sixfold
