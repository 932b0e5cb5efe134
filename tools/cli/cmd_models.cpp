// sixfold models / sixfold hardware: list what is built in.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "models/model_zoo.hpp"
#include "simulator/hardware_profile.hpp"
#include "tools/cli/command.hpp"

namespace sixfold::cli {
namespace {

int list_models(bool json) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  if (!json)
    std::printf("%-18s %7s %7s %6s %6s %8s %8s %10s %10s\n", "model", "layers", "hidden", "heads", "kv", "vocab", "experts",
                "params", "active");
  for (const auto& name : builtin_model_names()) {
    const ModelSpec m = load_model(name);
    const ParameterCounts pc = count_parameters(m);
    if (json) {
      nlohmann::ordered_json j;
      j["name"] = name;
      j["params_total"] = pc.total;
      j["params_active"] = pc.active;
      j["layers"] = m.layers;
      j["hidden"] = m.hidden;
      j["ffn"] = m.ffn;
      j["heads"] = m.heads;
      j["kv_heads"] = m.kv_heads;
      j["vocab"] = m.vocab;
      j["experts"] = m.moe.num_experts;
      j["top_k"] = m.moe.top_k;
      j["mla"] = m.mla.enabled;
      j["source"] = builtin_model_source(name);
      list.push_back(j);
    } else {
      std::printf("%-18s %7d %7lld %6d %6d %8lld %8d %9.2fB %9.2fB\n", name.c_str(), m.layers, (long long)m.hidden, m.heads,
                  m.kv_heads, (long long)m.vocab, m.moe.num_experts, pc.total / 1e9, pc.active / 1e9);
    }
  }
  if (json) std::cout << list.dump(2) << "\n";
  return 0;
}

int list_hardware(bool json) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  if (!json)
    std::printf("%-16s %9s %9s %9s %9s %11s %11s %6s %7s\n", "hardware", "bf16 TF/s", "fp8 TF/s", "mem GiB", "HBM TB/s",
                "intra GB/s", "net GB/s", "/node", "/NVLink");
  for (const auto& name : builtin_hardware_names()) {
    const HardwareProfile hw = load_hardware(name);
    const double fp8 = hw.peak_flops.count(Dtype::FP8) ? hw.peak_flops.at(Dtype::FP8) / kTera : 0;
    if (json) {
      nlohmann::ordered_json j;
      j["name"] = name;
      j["description"] = hw.description;
      nlohmann::ordered_json peaks;
      for (const auto& [d, f] : hw.peak_flops) peaks[to_string(d)] = f / kTera;
      j["peak_tflops"] = peaks;
      j["memory_bytes"] = hw.memory_capacity;
      j["memory_bandwidth_bytes_per_s"] = hw.memory_bandwidth;
      j["sm_count"] = hw.sm_count;
      j["gpus_per_node"] = hw.gpus_per_node;
      j["nvlink_domain"] = hw.scale_up_gpus();
      j["intra_node_bandwidth_bytes_per_s"] = hw.intra_node_bandwidth;
      j["network_bandwidth_bytes_per_s"] = hw.network_bandwidth;
      j["provenance"] = hw.provenance;
      list.push_back(j);
    } else {
      std::printf("%-16s %9.0f %9.0f %9.1f %9.2f %11.0f %11.0f %6d %7d\n", name.c_str(), hw.peak(Dtype::BF16) / kTera, fp8,
                  hw.memory_capacity / kGiB, hw.memory_bandwidth / 1e12, hw.intra_node_bandwidth / 1e9,
                  hw.network_bandwidth / 1e9, hw.gpus_per_node, hw.scale_up_gpus());
    }
  }
  if (json) std::cout << list.dump(2) << "\n";
  return 0;
}

Registrar models("models", "list the built-in model zoo with parameter counts", [](CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "a list of {name, params_total, params_active, ...}");
  return Action([json] { return list_models(*json); });
});

Registrar hardware("hardware", "list the built-in hardware profiles", [](CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "a list of {name, peak_tflops, memory_bytes, ..., provenance}");
  return Action([json] { return list_hardware(*json); });
});

}  // namespace
}  // namespace sixfold::cli
