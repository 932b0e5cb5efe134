#include "simulator/io/profile_yaml.hpp"

#include <cstdio>
#include <sstream>

#include "common/error.hpp"

namespace sixfold {

namespace {

std::string num(double x, const char* unit = "") {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g%s", x, unit);
  return buf;
}

// Sizes as whole bytes, exactly (a size read back must equal the size written).
std::string bytes(double b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0fB", b);
  return buf;
}

// YAML double-quoted scalar: escape backslashes and quotes.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

std::string hardware_profile_yaml(const HardwareProfile& hw, const std::string& header) {
  std::ostringstream y;
  auto field = [&](const std::string& indent, const std::string& path, const std::string& key, const std::string& value) {
    auto it = hw.provenance.find(path);
    if (it == hw.provenance.end() || it->second.empty())
      throw Error("hardware profile '" + hw.name + "': field " + path + " has no source to write");
    y << indent << key << ": {value: " << value << ", source: " << quoted(it->second) << "}\n";
  };
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) y << "# " << line << "\n";
  y << "name: " << quoted(hw.name) << "\n";
  y << "description: " << quoted(hw.description) << "\n";
  y << "peak_tflops:\n";
  for (const auto& [dtype, flops] : hw.peak_flops) {
    const std::string key = to_string(dtype);
    field("  ", "peak_tflops." + key, key, num(flops / kTera));
  }
  field("", "memory_capacity", "memory_capacity", bytes(hw.memory_capacity));
  field("", "memory_bandwidth", "memory_bandwidth", num(hw.memory_bandwidth / 1e9, "GB/s"));
  field("", "sm_count", "sm_count", std::to_string(hw.sm_count));
  field("", "gpus_per_node", "gpus_per_node", std::to_string(hw.gpus_per_node));
  if (hw.nvlink_domain > 0) field("", "nvlink_domain", "nvlink_domain", std::to_string(hw.nvlink_domain));
  field("", "intra_node_bandwidth", "intra_node_bandwidth", num(hw.intra_node_bandwidth / 1e9, "GB/s"));
  field("", "pcie_only", "pcie_only", hw.pcie_only ? "true" : "false");
  field("", "network_bandwidth", "network_bandwidth", num(hw.network_bandwidth / 1e9, "GB/s"));
  field("", "network_latency", "network_latency", num(hw.network_latency * 1e6, "us"));
  y << "gemm:\n";
  field("  ", "gemm.max_efficiency", "max_efficiency", num(hw.gemm.max_efficiency));
  field("  ", "gemm.half_dim", "half_dim", num(hw.gemm.half_dim));
  field("  ", "gemm.tile", "tile", std::to_string(hw.gemm.tile));
  field("", "attention_efficiency", "attention_efficiency", num(hw.attention_efficiency));
  field("", "memory_efficiency", "memory_efficiency", num(hw.memory_efficiency));
  for (const auto& [level, curve] : {std::pair<std::string, const CollectiveCurve&>{"intra_node", hw.intra_node},
                                     {"inter_node", hw.inter_node}}) {
    y << level << ":\n";
    field("  ", level + ".peak_busbw", "peak_busbw", num(curve.peak_busbw / 1e9, "GB/s"));
    field("  ", level + ".half_size", "half_size", bytes(curve.half_size));
    field("  ", level + ".latency", "latency", num(curve.latency * 1e6, "us"));
    field("  ", level + ".step_latency", "step_latency", num(curve.step_latency * 1e6, "us"));
  }
  field("", "context_memory", "context_memory", bytes(hw.context_memory));
  field("", "kernel_overhead", "kernel_overhead", num(hw.kernel_overhead * 1e6, "us"));
  field("", "dispatch_overlap", "dispatch_overlap", num(hw.dispatch_overlap));
  field("", "kernel_slowdown", "kernel_slowdown", num(hw.kernel_slowdown));
  field("", "overlap_slowdown", "overlap_slowdown", num(hw.overlap_slowdown));
  field("", "step_overhead", "step_overhead", num(hw.step_overhead * 1e3, "ms"));
  return y.str();
}

}  // namespace sixfold
