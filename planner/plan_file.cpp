#include "planner/plan_file.hpp"

#include <fstream>

#include "common/error.hpp"

namespace sixfold {

std::string plan_yaml(const Scenario& s, const Prediction& p) {
  YAML::Emitter o;
  o.SetDoublePrecision(17);  // exact round trip of every number
  o << YAML::BeginMap;
  o << YAML::Key << "schema_version" << YAML::Value << kPlanSchemaVersion;
  o << YAML::Key << "name" << YAML::Value << (s.name.empty() ? s.model.name + "-plan" : s.name);
  if (!s.description.empty()) o << YAML::Key << "description" << YAML::Value << s.description;
  o << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  o << YAML::Key << "name" << YAML::Value << (s.model_name.empty() ? s.model.name : s.model_name);
  o << YAML::Key << "architecture" << YAML::Value;
  emit_model(o, s.model);
  o << YAML::EndMap;
  o << YAML::Key << "hardware" << YAML::Value << (s.hardware_name.empty() ? s.hardware.name : s.hardware_name);
  o << YAML::Key << "gpus" << YAML::Value << s.gpus;
  o << YAML::Key << "gpus_per_node" << YAML::Value << s.hardware.gpus_per_node;
  o << YAML::Key << "workload" << YAML::Value;
  emit_workload(o, s.work);
  o << YAML::Key << "layout" << YAML::Value;
  emit_layout(o, s.layout);
  // Informational copies for readers; parse_scenario takes them from layout and workload.
  o << YAML::Key << "schedule" << YAML::Value << YAML::BeginMap;
  o << YAML::Key << "name" << YAML::Value << to_string(s.layout.schedule);
  o << YAML::Key << "virtual_stages" << YAML::Value << s.layout.virtual_stages();
  o << YAML::Key << "stage_layers" << YAML::Value << YAML::Flow << stage_layer_counts(s.model, s.layout);
  o << YAML::EndMap;
  o << YAML::Key << "batch" << YAML::Value << YAML::BeginMap;
  o << YAML::Key << "global_batch" << YAML::Value << s.work.global_batch;
  o << YAML::Key << "micro_batch" << YAML::Value << s.layout.micro_batch;
  o << YAML::Key << "micro_batches_per_step" << YAML::Value << p.micro_batches;
  o << YAML::Key << "tokens_per_step" << YAML::Value << s.work.global_batch * s.work.seq;
  o << YAML::EndMap;
  o << YAML::Key << "prediction" << YAML::Value << YAML::BeginMap;
  o << YAML::Key << "step_time_s" << YAML::Value << p.step_time;
  o << YAML::Key << "tokens_per_s_per_gpu" << YAML::Value << p.tokens_per_s_per_gpu;
  o << YAML::Key << "tflops_model_per_gpu" << YAML::Value << p.tflops_model_per_gpu;
  o << YAML::Key << "tflops_hw_per_gpu" << YAML::Value << p.tflops_hw_per_gpu;
  o << YAML::Key << "mfu" << YAML::Value << p.mfu;
  o << YAML::Key << "peak_memory_bytes" << YAML::Value << p.peak_memory;
  o << YAML::Key << "peak_stage" << YAML::Value << p.peak_stage;
  o << YAML::Key << "memory_bytes" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : p.memory.components()) o << YAML::Key << k << YAML::Value << v;
  o << YAML::EndMap;
  o << YAML::Key << "time_s" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : p.time.components()) o << YAML::Key << k << YAML::Value << v;
  o << YAML::Key << "step" << YAML::Value << p.time.step;
  o << YAML::EndMap;
  o << YAML::EndMap;
  o << YAML::EndMap;
  return std::string(o.c_str()) + "\n";
}

void write_plan_file(const std::string& path, const Scenario& s, const Prediction& p) {
  std::ofstream f(path);
  if (!f) throw Error("cannot write plan file '" + path + "'");
  f << plan_yaml(s, p);
  if (!f) throw Error("writing plan file '" + path + "' failed");
}

}  // namespace sixfold
