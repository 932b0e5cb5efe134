#pragma once
// A scenario: model, hardware, GPU count, workload and layout; what `predict` prices and what a
// plan file carries (docs/plan-schema.md). Scenario files (configs/scenarios/*.yaml) and plan
// files share this shape; plan files add the predictions and a schema version.
#include <optional>
#include <string>

#include "common/yaml_util.hpp"
#include "models/layout.hpp"
#include "models/model_spec.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

inline constexpr int kPlanSchemaVersion = 1;

struct Scenario {
  std::string name;
  std::string description;
  std::string model_name;      // zoo name, or the path it was loaded from
  ModelSpec model;
  std::string hardware_name;
  HardwareProfile hardware;
  int gpus = 1;
  Workload work;
  Layout layout;
};

// Reads a scenario or plan document. `model:` is a zoo name, a path, or a mapping with `name` and
// an inline `architecture`; `hardware:` a built-in name or a path. A plan file with a
// schema_version other than kPlanSchemaVersion is refused. Errors name file, line and field.
Scenario parse_scenario(const YamlDoc& doc);
// By built-in name (configs/scenarios/NAME.yaml) or path.
Scenario load_scenario(const std::string& name_or_path);
std::vector<std::string> builtin_scenario_names();

// YAML emitters (the model with its full architecture; the layout; the workload).
void emit_model(YAML::Emitter& out, const ModelSpec& model);
void emit_layout(YAML::Emitter& out, const Layout& layout);
void emit_workload(YAML::Emitter& out, const Workload& work);

Layout parse_layout(const YamlDoc& doc, const YAML::Node& node);
Workload parse_workload(const YamlDoc& doc, const YAML::Node& node);

}  // namespace sixfold
