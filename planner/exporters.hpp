#pragma once
// Exports of a plan to what users paste into their framework: Megatron-LM command-line flags
// (megatron/training/arguments.py), a DeepSpeed JSON config (deepspeed/runtime/config.py,
// zero/config.py), torchtitan TOML (torchtitan/config/job_config.py). A layout a framework cannot
// express is refused with a UsageError that says why.
#include <string>

#include "simulator/cost_model.hpp"
#include "simulator/scenario.hpp"

namespace sixfold {

enum class ExportFormat { Yaml, Megatron, DeepSpeed, Torchtitan };
ExportFormat parse_export_format(const std::string& name);  // yaml | megatron | deepspeed | torchtitan
std::string to_string(ExportFormat f);

std::string export_megatron(const Scenario& s);
std::string export_deepspeed(const Scenario& s);
std::string export_torchtitan(const Scenario& s);
// Any format; yaml is the plan file (needs the prediction).
std::string export_plan(ExportFormat f, const Scenario& s, const Prediction& p);

}  // namespace sixfold
