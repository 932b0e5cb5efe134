#pragma once
// The plan file (docs/plan-schema.md): a scenario (model with its full architecture, hardware,
// GPUs, workload, layout) plus the schedule, the batch and the predictions, with a schema
// version. `sixfold predict --plan FILE` reads it back with parse_scenario and reproduces the
// predictions.
#include <string>

#include "simulator/cost_model.hpp"
#include "simulator/io/scenario.hpp"

namespace sixfold {

std::string plan_yaml(const Scenario& scenario, const Prediction& prediction);
void write_plan_file(const std::string& path, const Scenario& scenario, const Prediction& prediction);

}  // namespace sixfold
