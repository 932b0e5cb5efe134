// Loading, validating and overriding hardware profiles (configs/hardware/*.yaml) and cluster
// descriptions (configs/clusters/*.yaml). The file format is documented in docs/hardware-profiles.md:
// every number is written {value: X, source: "KIND: where it came from"}, and the source is kept
// in HardwareProfile::provenance under the value's YAML path ("peak_tflops.bf16", "gemm.half_dim").
#include "simulator/hardware_profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/suggest.hpp"
#include "common/yaml_util.hpp"

namespace sixfold {

namespace {

constexpr const char* kHardwareFolder = "configs/hardware";
constexpr const char* kClusterFolder = "configs/clusters";

// The kinds a source may name. A source reads "KIND: detail", so that a reader (and a test) can tell a
// datasheet figure from a measurement, a fit or a prior still waiting for calibration.
const std::vector<std::string>& source_kinds() {
  static const std::vector<std::string> kinds = {"datasheet", "whitepaper", "publication", "measurement", "fit",
                                                 "prior",     "derived",    "override"};
  return kinds;
}

std::string join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// Reads one profile document, remembering the source of every value it reads.
class ProfileReader {
 public:
  ProfileReader(const YamlDoc& doc, std::map<std::string, std::string>& provenance)
      : doc_(doc), provenance_(provenance) {}

  // Rejects keys that the format does not know, so that a typo ("memory_bandwith") is an error
  // instead of a silently used default.
  void only_keys(const YAML::Node& map, const std::string& where, const std::vector<std::string>& allowed) {
    if (!map.IsMap()) yaml_field_error(doc_, map, where, "expected a map of fields");
    for (const auto& kv : map) {
      std::string key = kv.first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        yaml_field_error(doc_, kv.first, where.empty() ? key : where + "." + key,
                         "unknown field (allowed: " + join(allowed) + ")");
    }
  }

  // The {value, source} pair at parent[key]; `path` names it in errors and in the provenance map.
  // Returns the value's text and node.
  YAML::Node sourced(const YAML::Node& parent, const std::string& key, const std::string& path) {
    YAML::Node n = parent[key];
    if (!n) yaml_field_error(doc_, parent, path, "missing");
    if (!n.IsMap())
      yaml_field_error(doc_, n, path,
                       "write {value: X, source: \"KIND: where it came from\"} (KIND one of " +
                           join(source_kinds()) + ")");
    only_keys(n, path, {"value", "source"});
    YAML::Node value = n["value"];
    if (!value || !value.IsScalar()) yaml_field_error(doc_, n, path + ".value", "missing or not a scalar");
    YAML::Node source = n["source"];
    if (!source || !source.IsScalar()) yaml_field_error(doc_, n, path + ".source", "missing (every value says where it came from)");
    std::string text = source.Scalar();
    check_source(source, path, text);
    provenance_[path] = text;
    return value;
  }

  // A finite number (".inf" and ".nan" are refused) within [min, max].
  double number(const YAML::Node& parent, const std::string& key, const std::string& path, double min = -1e300,
                double max = 1e300) {
    YAML::Node v = sourced(parent, key, path);
    return yaml_parse_scalar(doc_, v, path, [&](const std::string& t) { return parse_number(t, path, min, max); });
  }

  int integer(const YAML::Node& parent, const std::string& key, const std::string& path, long long min = 0,
              long long max = 1 << 30) {
    YAML::Node v = sourced(parent, key, path);
    return int(yaml_parse_scalar(doc_, v, path, [&](const std::string& t) { return parse_count(t, path, min, max); }));
  }

  bool boolean(const YAML::Node& parent, const std::string& key, const std::string& path) {
    YAML::Node v = sourced(parent, key, path);
    try {
      return v.as<bool>();
    } catch (const YAML::Exception&) {
      yaml_field_error(doc_, v, path, "cannot read '" + v.as<std::string>() + "' as true/false");
    }
  }

  Bytes size(const YAML::Node& parent, const std::string& key, const std::string& path) {
    YAML::Node v = sourced(parent, key, path);
    return yaml_parse_scalar(doc_, v, path, [&](const std::string& t) { return parse_size(t, path, true); });
  }

  BytesPerSec rate(const YAML::Node& parent, const std::string& key, const std::string& path) {
    YAML::Node v = sourced(parent, key, path);
    return yaml_parse_scalar(doc_, v, path, [&](const std::string& t) { return parse_rate(t, path); });
  }

  // Durations (a bare number is seconds), at most an hour: every one is a latency or an overhead.
  Seconds duration(const YAML::Node& parent, const std::string& key, const std::string& path) {
    YAML::Node v = sourced(parent, key, path);
    return yaml_parse_scalar(doc_, v, path, [&](const std::string& t) { return parse_duration(t, path, 0, 3600); });
  }

  // Value checks that name the field and its line.
  void require_positive(const YAML::Node& parent, const std::string& key, const std::string& path, double v) {
    if (!(v > 0)) yaml_field_error(doc_, value_node(parent, key), path, "must be positive, got " + show(v));
  }
  void require_fraction(const YAML::Node& parent, const std::string& key, const std::string& path, double v) {
    if (!(v > 0 && v <= 1))
      yaml_field_error(doc_, value_node(parent, key), path, "must be in (0, 1], got " + show(v));
  }
  void require_non_negative(const YAML::Node& parent, const std::string& key, const std::string& path, double v) {
    if (!(v >= 0)) yaml_field_error(doc_, value_node(parent, key), path, "must not be negative, got " + show(v));
  }

  const YamlDoc& doc() const { return doc_; }
  std::map<std::string, std::string>& provenance() { return provenance_; }

 private:
  void check_source(const YAML::Node& node, const std::string& path, const std::string& text) {
    auto colon = text.find(':');
    std::string kind = colon == std::string::npos ? "" : trim(text.substr(0, colon));
    std::string detail = colon == std::string::npos ? "" : trim(text.substr(colon + 1));
    const auto& kinds = source_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end() || detail.empty())
      yaml_field_error(doc_, node, path + ".source",
                       "'" + text + "' must read \"KIND: detail\" with KIND one of " + join(kinds));
  }

  YAML::Node value_node(const YAML::Node& parent, const std::string& key) {
    YAML::Node n = parent[key];
    return n && n.IsMap() && n["value"] ? n["value"] : parent;
  }

  static std::string show(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

  const YamlDoc& doc_;
  std::map<std::string, std::string>& provenance_;
};

CollectiveCurve read_curve(ProfileReader& r, const YAML::Node& root, const std::string& key) {
  YAML::Node n = root[key];
  if (!n) yaml_field_error(r.doc(), root, key, "missing");
  r.only_keys(n, key, {"peak_busbw", "half_size", "latency", "step_latency"});
  CollectiveCurve c;
  c.peak_busbw = r.rate(n, "peak_busbw", key + ".peak_busbw");
  r.require_positive(n, "peak_busbw", key + ".peak_busbw", c.peak_busbw);
  c.half_size = r.size(n, "half_size", key + ".half_size");
  r.require_non_negative(n, "half_size", key + ".half_size", c.half_size);
  c.latency = r.duration(n, "latency", key + ".latency");
  // Optional: profiles without it price one latency per collective whatever the group size.
  if (n["step_latency"]) {
    c.step_latency = r.duration(n, "step_latency", key + ".step_latency");
    r.require_non_negative(n, "step_latency", key + ".step_latency", c.step_latency);
  } else {
    r.provenance()[key + ".step_latency"] = "prior: 0 (one latency per collective; not fitted)";
  }
  return c;
}

bool looks_like_path(const std::string& s) {
  if (s.find('/') != std::string::npos) return true;
  auto ends_with = [&](const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".yaml") || ends_with(".yml");
}

// The text of a built-in file by name, or of a file by path, with the name used in error messages.
struct NamedText {
  std::string text;
  std::string source;
};

NamedText read_named(const std::string& name_or_path, const std::string& folder, const std::string& what) {
  std::string builtin_path = folder + "/" + name_or_path + ".yaml";
  if (auto text = builtin_text(builtin_path)) return {std::string(*text), "built-in " + builtin_path};
  std::error_code ec;
  if (looks_like_path(name_or_path) || std::filesystem::exists(name_or_path, ec))
    return {read_text_file(name_or_path, limits::kConfigFileBytes, what + " files"), name_or_path};
  const std::string hint = did_you_mean(name_or_path, builtin_names(folder));
  if (!hint.empty()) throw UsageError("unknown " + what + " '" + name_or_path + "'" + hint);
  throw UsageError("unknown " + what + " '" + name_or_path + "' (built-in: " + join(builtin_names(folder)) +
                   "; or give a path to a YAML file)");
}

}  // namespace

FlopsPerSec HardwareProfile::peak(Dtype d) const {
  auto it = peak_flops.find(d);
  if (it != peak_flops.end()) return it->second;
  std::vector<std::string> have;
  for (const auto& [dtype, flops] : peak_flops) have.push_back(to_string(dtype));
  throw Error("hardware profile '" + name + "' has no peak rate for dtype '" + to_string(d) +
              "' (it has: " + join(have) + ")");
}

HardwareProfile parse_hardware(const std::string& yaml_text, const std::string& source) {
  YamlDoc doc = parse_yaml(yaml_text, source);
  const YAML::Node& root = doc.root;
  HardwareProfile hw;
  ProfileReader r(doc, hw.provenance);
  if (!root || !root.IsMap()) throw Error(source + ": a hardware profile must be a YAML map of fields");
  r.only_keys(root, "",
              {"name", "description", "peak_tflops", "memory_capacity", "memory_bandwidth", "sm_count",
               "gpus_per_node", "nvlink_domain", "intra_node_bandwidth", "pcie_only", "network_bandwidth",
               "network_latency", "gemm", "attention_efficiency", "memory_efficiency", "intra_node", "inter_node",
               "context_memory", "kernel_overhead", "dispatch_overlap", "kernel_slowdown", "overlap_slowdown",
               "step_overhead"});

  hw.name = required<std::string>(doc, root, "name");
  hw.description = optional<std::string>(doc, root, "description", "");

  YAML::Node peaks = root["peak_tflops"];
  if (!peaks) yaml_field_error(doc, root, "peak_tflops", "missing");
  r.only_keys(peaks, "peak_tflops", {"fp32", "tf32", "bf16", "fp16", "fp8"});
  for (const auto& kv : peaks) {
    std::string key = kv.first.as<std::string>();
    std::string path = "peak_tflops." + key;
    double tflops = r.number(peaks, key, path, 0, 1e9);
    r.require_positive(peaks, key, path, tflops);
    hw.peak_flops[parse_dtype(key)] = tflops * kTera;
  }
  if (!hw.peak_flops.count(Dtype::BF16))
    yaml_field_error(doc, peaks, "peak_tflops.bf16", "missing (every profile needs the bf16 dense peak)");

  hw.memory_capacity = r.size(root, "memory_capacity", "memory_capacity");
  r.require_positive(root, "memory_capacity", "memory_capacity", hw.memory_capacity);
  hw.memory_bandwidth = r.rate(root, "memory_bandwidth", "memory_bandwidth");
  r.require_positive(root, "memory_bandwidth", "memory_bandwidth", hw.memory_bandwidth);
  hw.sm_count = r.integer(root, "sm_count", "sm_count", 1, 1 << 20);
  r.require_positive(root, "sm_count", "sm_count", hw.sm_count);
  hw.gpus_per_node = r.integer(root, "gpus_per_node", "gpus_per_node", 1, limits::kGpus);
  r.require_positive(root, "gpus_per_node", "gpus_per_node", hw.gpus_per_node);
  if (root["nvlink_domain"]) {
    hw.nvlink_domain = r.integer(root, "nvlink_domain", "nvlink_domain", 1, limits::kGpus);
    r.require_positive(root, "nvlink_domain", "nvlink_domain", hw.nvlink_domain);
  }
  hw.intra_node_bandwidth = r.rate(root, "intra_node_bandwidth", "intra_node_bandwidth");
  r.require_positive(root, "intra_node_bandwidth", "intra_node_bandwidth", hw.intra_node_bandwidth);
  hw.pcie_only = r.boolean(root, "pcie_only", "pcie_only");
  hw.network_bandwidth = r.rate(root, "network_bandwidth", "network_bandwidth");
  r.require_positive(root, "network_bandwidth", "network_bandwidth", hw.network_bandwidth);
  hw.network_latency = r.duration(root, "network_latency", "network_latency");

  YAML::Node gemm = root["gemm"];
  if (!gemm) yaml_field_error(doc, root, "gemm", "missing");
  r.only_keys(gemm, "gemm", {"max_efficiency", "half_dim", "tile"});
  hw.gemm.max_efficiency = r.number(gemm, "max_efficiency", "gemm.max_efficiency");
  r.require_fraction(gemm, "max_efficiency", "gemm.max_efficiency", hw.gemm.max_efficiency);
  hw.gemm.half_dim = r.number(gemm, "half_dim", "gemm.half_dim", 0, 1e9);
  r.require_non_negative(gemm, "half_dim", "gemm.half_dim", hw.gemm.half_dim);
  hw.gemm.tile = r.integer(gemm, "tile", "gemm.tile", 1, 1 << 16);
  r.require_positive(gemm, "tile", "gemm.tile", hw.gemm.tile);

  hw.attention_efficiency = r.number(root, "attention_efficiency", "attention_efficiency");
  r.require_fraction(root, "attention_efficiency", "attention_efficiency", hw.attention_efficiency);
  hw.memory_efficiency = r.number(root, "memory_efficiency", "memory_efficiency");
  r.require_fraction(root, "memory_efficiency", "memory_efficiency", hw.memory_efficiency);

  hw.intra_node = read_curve(r, root, "intra_node");
  hw.inter_node = read_curve(r, root, "inter_node");

  hw.context_memory = r.size(root, "context_memory", "context_memory");
  r.require_non_negative(root, "context_memory", "context_memory", hw.context_memory);
  if (hw.context_memory >= hw.memory_capacity)
    yaml_field_error(doc, root["context_memory"], "context_memory", "must be smaller than memory_capacity");
  // Optional: a floor on every op's time (kernel launch and framework dispatch). Profiles without
  // it keep the header's default, a prior.
  if (root["kernel_overhead"]) {
    hw.kernel_overhead = r.duration(root, "kernel_overhead", "kernel_overhead");
    r.require_non_negative(root, "kernel_overhead", "kernel_overhead", hw.kernel_overhead);
  } else {
    hw.provenance["kernel_overhead"] = "prior: 4 us per kernel launch (CUDA launch latency; not yet fitted)";
  }
  // Optional: profiles without it keep the additive dispatch model they were fitted with.
  if (root["dispatch_overlap"]) {
    hw.dispatch_overlap = r.number(root, "dispatch_overlap", "dispatch_overlap");
    r.require_non_negative(root, "dispatch_overlap", "dispatch_overlap", hw.dispatch_overlap);
    if (hw.dispatch_overlap > 1) yaml_field_error(doc, root["dispatch_overlap"], "dispatch_overlap", "must be within [0, 1]");
  } else {
    hw.provenance["dispatch_overlap"] = "prior: 0 (host dispatch adds to GPU time; not fitted)";
  }
  // Optional framework terms (hardware_profile.hpp); a fitted profile (calibrate -o) writes them.
  if (root["kernel_slowdown"]) {
    hw.kernel_slowdown = r.number(root, "kernel_slowdown", "kernel_slowdown", 1, 4);  // 1: the microbenchmark's rate
  } else {
    hw.provenance["kernel_slowdown"] = "prior: 1 (measured kernels run at their microbenchmark rate)";
  }
  if (root["overlap_slowdown"]) {
    hw.overlap_slowdown = r.number(root, "overlap_slowdown", "overlap_slowdown", 0, 1);
  } else {
    hw.provenance["overlap_slowdown"] =
        "prior: 0.189, the mean compute slowdown under overlapped communication (Lee et al. 2025, arXiv 2507.03114)";
  }
  if (root["step_overhead"]) {
    hw.step_overhead = r.duration(root, "step_overhead", "step_overhead");
    r.require_non_negative(root, "step_overhead", "step_overhead", hw.step_overhead);
  } else {
    hw.provenance["step_overhead"] = "prior: 0 (no host bookkeeping between steps; fit it with calibrate)";
  }
  return hw;
}

std::vector<std::string> builtin_hardware_names() { return builtin_names(kHardwareFolder); }

HardwareProfile load_hardware(const std::string& name_or_path) {
  NamedText file = read_named(name_or_path, kHardwareFolder, "hardware");
  return parse_hardware(file.text, file.source);
}

void apply_overrides(HardwareProfile& hw, const ClusterOverrides& o) {
  auto record = [&](const std::string& field) {
    auto it = o.provenance.find(field);
    std::string src = it != o.provenance.end() ? it->second : "override: command line";
    auto prev = hw.provenance.find(field);
    if (prev != hw.provenance.end() && prev->second != src) src += " (replaces " + prev->second + ")";
    hw.provenance[field] = src;
  };
  if (o.gpus_per_node) {
    if (*o.gpus_per_node <= 0)
      throw UsageError("gpus_per_node must be positive, got " + std::to_string(*o.gpus_per_node));
    hw.gpus_per_node = *o.gpus_per_node;
    record("gpus_per_node");
  }
  if (o.nvlink_domain) {
    if (*o.nvlink_domain <= 0)
      throw UsageError("nvlink_domain must be positive, got " + std::to_string(*o.nvlink_domain));
    hw.nvlink_domain = *o.nvlink_domain;
    record("nvlink_domain");
  }
  if (o.intra_node_bandwidth) {
    if (!(*o.intra_node_bandwidth > 0)) throw UsageError("intra_node_bandwidth must be positive");
    // The measured collective curve scales with the link it runs on.
    hw.intra_node.peak_busbw *= *o.intra_node_bandwidth / hw.intra_node_bandwidth;
    // The measured NCCL tables are of the stock NVLink: another bandwidth turns them off.
    if (*o.intra_node_bandwidth != hw.intra_node_bandwidth) hw.use_collective_tables = false;
    hw.intra_node_bandwidth = *o.intra_node_bandwidth;
    record("intra_node_bandwidth");
    record("intra_node.peak_busbw");
  }
  if (o.network_bandwidth) {
    if (!(*o.network_bandwidth > 0)) throw UsageError("network_bandwidth must be positive");
    hw.inter_node.peak_busbw *= *o.network_bandwidth / hw.network_bandwidth;
    hw.network_bandwidth = *o.network_bandwidth;
    record("network_bandwidth");
    record("inter_node.peak_busbw");
  }
  if (o.network_latency) {
    if (!(*o.network_latency >= 0)) throw UsageError("network_latency must not be negative");
    hw.network_latency = *o.network_latency;
    record("network_latency");
  }
}

ClusterOverrides load_cluster_overrides(const std::string& name_or_path, std::string* hardware_name) {
  NamedText file = read_named(name_or_path, kClusterFolder, "cluster");
  return parse_cluster_overrides(file.text, file.source, hardware_name);
}

ClusterOverrides parse_cluster_overrides(const std::string& yaml_text, const std::string& source, std::string* hardware_name) {
  YamlDoc doc = parse_yaml(yaml_text, source);
  const YAML::Node& root = doc.root;
  if (!root || !root.IsMap()) throw Error(doc.source + ": a cluster file must be a YAML map of fields");
  ClusterOverrides o;
  ProfileReader r(doc, o.provenance);
  r.only_keys(root, "",
              {"name", "description", "hardware", "gpus_per_node", "nvlink_domain", "intra_node_bandwidth",
               "network_bandwidth", "network_latency"});
  if (!root["hardware"] || root["hardware"].IsNull())
    yaml_field_error(doc, root, "hardware", "missing (a built-in hardware name or a path)");
  std::string hardware = required<std::string>(doc, root, "hardware");
  try {
    load_hardware(hardware);  // an unknown name is this file's error
  } catch (const UsageError& e) {
    yaml_field_error(doc, root["hardware"], "hardware", e.what());
  }
  if (hardware_name) *hardware_name = hardware;
  if (root["gpus_per_node"]) {
    o.gpus_per_node = r.integer(root, "gpus_per_node", "gpus_per_node", 1, limits::kGpus);
    r.require_positive(root, "gpus_per_node", "gpus_per_node", *o.gpus_per_node);
  }
  if (root["nvlink_domain"]) {
    o.nvlink_domain = r.integer(root, "nvlink_domain", "nvlink_domain", 1, limits::kGpus);
    r.require_positive(root, "nvlink_domain", "nvlink_domain", *o.nvlink_domain);
  }
  if (root["intra_node_bandwidth"]) {
    o.intra_node_bandwidth = r.rate(root, "intra_node_bandwidth", "intra_node_bandwidth");
    r.require_positive(root, "intra_node_bandwidth", "intra_node_bandwidth", *o.intra_node_bandwidth);
  }
  if (root["network_bandwidth"]) {
    o.network_bandwidth = r.rate(root, "network_bandwidth", "network_bandwidth");
    r.require_positive(root, "network_bandwidth", "network_bandwidth", *o.network_bandwidth);
  }
  if (root["network_latency"]) o.network_latency = r.duration(root, "network_latency", "network_latency");
  if (root["name"]) required<std::string>(doc, root, "name");
  if (root["description"]) required<std::string>(doc, root, "description");
  // Say which cluster file a value came from, next to the file's own source for it.
  for (auto& [field, src] : o.provenance) src += " [cluster " + doc.source + "]";
  return o;
}

}  // namespace sixfold
