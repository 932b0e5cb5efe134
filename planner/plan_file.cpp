#include "planner/plan_file.hpp"

#include <cstdio>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/parse.hpp"

namespace sixfold {

namespace {
// A bandwidth that reads back to the same double: GB/s where that is exact, else B/s.
std::string rate_text(BytesPerSec r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17gGB/s", r / 1e9);
  if (parse_rate(buf, "rate") == r) {
    std::snprintf(buf, sizeof buf, "%.15gGB/s", r / 1e9);
    if (parse_rate(buf, "rate") != r) std::snprintf(buf, sizeof buf, "%.17gGB/s", r / 1e9);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17gB/s", r);
  return buf;
}
std::string seconds_text(Seconds t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17gs", t);
  return buf;
}
}  // namespace

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
  if (s.hardware.nvlink_domain > 0) o << YAML::Key << "nvlink_domain" << YAML::Value << s.hardware.nvlink_domain;
  // The cluster the plan was priced for (a --cluster file or --network-bandwidth changes them).
  o << YAML::Key << "network_bandwidth" << YAML::Value << rate_text(s.hardware.network_bandwidth);
  o << YAML::Key << "intra_node_bandwidth" << YAML::Value << rate_text(s.hardware.intra_node_bandwidth);
  o << YAML::Key << "network_latency" << YAML::Value << seconds_text(s.hardware.network_latency);
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
  write_text_file(path, plan_yaml(s, p));
}

}  // namespace sixfold
