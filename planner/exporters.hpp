#pragma once
// Exports of a plan to what users paste into their framework: Megatron-LM command-line flags
// (megatron/training/arguments.py), a DeepSpeed JSON config (deepspeed/runtime/config.py,
// zero/config.py), torchtitan TOML (torchtitan/config/job_config.py). Every name written is one
// the framework defines at the version configs/framework_keys/*.txt states (a test checks). A layout a framework cannot
// express is refused with a UsageError that says why.
#include <string>
#include <vector>

#include "simulator/cost_model.hpp"
#include "simulator/io/scenario.hpp"

namespace sixfold {

enum class ExportFormat { Yaml, Megatron, DeepSpeed, Torchtitan };
ExportFormat parse_export_format(const std::string& name);  // yaml | megatron | deepspeed | torchtitan
std::string to_string(ExportFormat f);

std::string export_megatron(const Scenario& s);
std::string export_deepspeed(const Scenario& s);
std::string export_torchtitan(const Scenario& s);
// Any format; yaml is the plan file (needs the prediction).
std::string export_plan(ExportFormat f, const Scenario& s, const Prediction& p);

// What the user must do besides pasting the export for the run to be the one priced: settings the
// framework has no flag or key for, and model code a config cannot switch on. Printed by `plan`
// (and in its --json as "export_notes"); the Megatron flags also carry them as comment lines.
std::vector<std::string> export_notes(ExportFormat f, const Scenario& s);

}  // namespace sixfold
