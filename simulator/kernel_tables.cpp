// Loading, validating and interpolating measured kernel tables (format: docs/kernel-tables.md).
#include "simulator/kernel_tables.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "common/yaml_util.hpp"

namespace sixfold {

namespace {

constexpr double kMicro = 1e-6;

// ---------------------------------------------------------------------------------------------
// Reading: every failure names the file, the line, the dotted field path, the value and what is
// allowed.

std::string dump(const YAML::Node& n) {
  std::string s = YAML::Dump(n);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

YAML::Node need(const YamlDoc& doc, const YAML::Node& parent, const std::string& key, const std::string& path,
                YAML::NodeType::value type) {
  YAML::Node n = parent[key];
  if (!n) yaml_field_error(doc, parent, path, "missing");
  if (n.Type() != type) {
    const char* what = type == YAML::NodeType::Map ? "a map" : type == YAML::NodeType::Sequence ? "a list" : "a value";
    yaml_field_error(doc, n, path, "got '" + dump(n) + "', allowed: " + what);
  }
  return n;
}

std::string need_string(const YamlDoc& doc, const YAML::Node& parent, const std::string& key, const std::string& path) {
  YAML::Node n = need(doc, parent, key, path, YAML::NodeType::Scalar);
  return n.Scalar();
}

bool need_bool(const YamlDoc& doc, const YAML::Node& parent, const std::string& key, const std::string& path) {
  YAML::Node n = need(doc, parent, key, path, YAML::NodeType::Scalar);
  if (n.Scalar() != "true" && n.Scalar() != "false")
    yaml_field_error(doc, n, path, "got '" + n.Scalar() + "', allowed: true, false");
  return n.Scalar() == "true";
}

double as_number(const YamlDoc& doc, const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) yaml_field_error(doc, n, path, "got '" + dump(n) + "', allowed: a number");
  // The common plain decimal without yaml-cpp's stream conversion (a table holds ~40k of them).
  const std::string& text = n.Scalar();
  double fast = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), fast);
  if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(fast)) return fast;
  try {
    double v = n.as<double>();
    if (std::isfinite(v)) return v;
  } catch (const YAML::Exception&) {
  }
  yaml_field_error(doc, n, path, "got '" + n.Scalar() + "', allowed: a finite number");
}

Count as_positive_count(const YamlDoc& doc, const YAML::Node& n, const std::string& path) {
  double v = as_number(doc, n, path);
  if (!(v >= 1) || v != std::floor(v) || v > 1e15)
    yaml_field_error(doc, n, path, "got '" + n.Scalar() + "', allowed: a positive integer");
  return static_cast<Count>(v);
}

// A long list of numbers: a YAML list, or one block string of numbers separated by commas or
// white space (what tools/import_kernel_tables.py writes: yaml-cpp reads a block in a quarter of
// the time it takes for a list of 40,000 scalars). Each value is checked by check(value), which
// returns what is wrong with it or null.
template <class Check>
std::vector<double> read_numbers(const YamlDoc& doc, const YAML::Node& parent, const std::string& key,
                                 const std::string& path, Check check) {
  YAML::Node n = parent[key];
  if (!n) yaml_field_error(doc, parent, path, "missing");
  std::vector<double> out;
  auto at = [&](size_t i) { return path + "[" + std::to_string(i) + "]"; };
  if (n.IsSequence()) {
    out.reserve(n.size());
    size_t i = 0;
    for (const YAML::Node& cell : n) {
      const double v = as_number(doc, cell, at(i));
      if (const char* wrong = check(v)) yaml_field_error(doc, cell, at(i), "got '" + cell.Scalar() + "', allowed: " + wrong);
      out.push_back(v);
      ++i;
    }
    return out;
  }
  if (!n.IsScalar()) yaml_field_error(doc, n, path, "got '" + dump(n) + "', allowed: a list of numbers");
  const std::string& text = n.Scalar();
  const char* c = text.data();
  const char* const end = c + text.size();
  auto separator = [](char x) { return x == ',' || x == ' ' || x == '\n' || x == '\t' || x == '\r'; };
  while (true) {
    while (c < end && separator(*c)) ++c;
    if (c == end) break;
    const char* token = c;
    while (c < end && !separator(*c)) ++c;
    double v = 0;
    const auto [stop, ec] = std::from_chars(token, c, v);
    auto got = [&] { return "got '" + std::string(token, c) + "', allowed: "; };  // spelt only for an error
    if (ec != std::errc() || stop != c || !std::isfinite(v)) yaml_field_error(doc, n, at(out.size()), got() + "a finite number");
    if (const char* wrong = check(v)) yaml_field_error(doc, n, at(out.size()), got() + wrong);
    out.push_back(v);
  }
  return out;
}

// A sorted axis: positive integers, strictly increasing.
std::vector<Count> read_axis(const YamlDoc& doc, const YAML::Node& parent, const std::string& key,
                             const std::string& path) {
  YAML::Node list = need(doc, parent, key, path, YAML::NodeType::Sequence);
  if (list.size() == 0) yaml_field_error(doc, list, path, "empty, allowed: at least one value");
  std::vector<Count> axis;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";  // axes are short
    Count v = as_positive_count(doc, list[i], p);
    if (!axis.empty() && v <= axis.back())
      yaml_field_error(doc, list[i], p,
                       "got " + std::to_string(v) + " after " + std::to_string(axis.back()) + ", allowed: increasing values");
    axis.push_back(v);
  }
  return axis;
}

// Latencies in microseconds (positive, finite) converted to seconds.
std::vector<Seconds> read_latencies(const YamlDoc& doc, const YAML::Node& parent, const std::string& key,
                                    const std::string& path, size_t expected, const std::string& why) {
  std::vector<double> us = read_numbers(doc, parent, key, path, [](double v) { return v > 0 ? nullptr : "a positive latency in us"; });
  if (us.size() != expected)
    yaml_field_error(doc, parent[key], path,
                     "has " + std::to_string(us.size()) + " values, allowed: exactly " + std::to_string(expected) + " (" +
                         why + ")");
  for (double& v : us) v *= kMicro;
  return us;
}

KernelTableSource read_source(const YamlDoc& doc, const YAML::Node& section, const std::string& path) {
  YAML::Node s = need(doc, section, "source", path + ".source", YAML::NodeType::Map);
  KernelTableSource src;
  src.file = need_string(doc, s, "file", path + ".source.file");
  src.sha256 = optional<std::string>(doc, s, "sha256", "");
  src.device = need_string(doc, s, "device", path + ".source.device");
  src.framework = need_string(doc, s, "framework", path + ".source.framework");
  src.version = need_string(doc, s, "version", path + ".source.version");
  src.kernel_source = need_string(doc, s, "kernel_source", path + ".source.kernel_source");
  return src;
}

Dtype read_dtype(const YamlDoc& doc, const YAML::Node& parent, const std::string& path) {
  std::string s = need_string(doc, parent, "dtype", path);
  for (Dtype d : {Dtype::BF16, Dtype::FP16, Dtype::FP8, Dtype::TF32, Dtype::FP32})
    if (s == to_string(d)) return d;
  yaml_field_error(doc, parent["dtype"], path, "got '" + s + "', allowed: bf16, fp16, fp8, tf32, fp32");
}

// nccl-tests' names, which the table files use.
const std::pair<const char*, Collective> kCollectiveNames[] = {{"all_reduce", Collective::AllReduce},
                                                               {"all_gather", Collective::AllGather},
                                                               {"reduce_scatter", Collective::ReduceScatter},
                                                               {"alltoall", Collective::AllToAll}};

const char* collective_name(Collective c) {
  for (const auto& [name, kind] : kCollectiveNames)
    if (kind == c) return name;
  return "?";
}

Collective read_collective(const YamlDoc& doc, const YAML::Node& parent, const std::string& path) {
  std::string s = need_string(doc, parent, "collective", path);
  for (const auto& [name, kind] : kCollectiveNames)
    if (s == name) return kind;
  yaml_field_error(doc, parent["collective"], path, "got '" + s + "', allowed: all_reduce, all_gather, reduce_scatter, alltoall");
}

// ---------------------------------------------------------------------------------------------
// Interpolation helpers.

// Position of x on a sorted axis in log space: lower index and weight of the upper neighbour,
// with x clamped to the axis.
std::pair<size_t, double> log_bracket(const std::vector<Count>& axis, double x) {
  if (axis.size() == 1 || x <= static_cast<double>(axis.front())) return {0, 0.0};
  if (x >= static_cast<double>(axis.back())) return {axis.size() - 2, 1.0};
  size_t hi = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), x,
                                                   [](double v, Count a) { return v < static_cast<double>(a); }) -
                                  axis.begin());
  size_t lo = hi - 1;
  double w = (std::log(x) - std::log(static_cast<double>(axis[lo]))) /
             (std::log(static_cast<double>(axis[hi])) - std::log(static_cast<double>(axis[lo])));
  return {lo, w};
}

double log_lerp(double a, double b, double w) { return std::exp((1 - w) * std::log(a) + w * std::log(b)); }

double clamp_to(const std::vector<Count>& axis, double x) {
  return std::clamp(x, static_cast<double>(axis.front()), static_cast<double>(axis.back()));
}

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw x factor.
double bus_factor(Collective kind, int gpus) {
  double n = gpus;
  return kind == Collective::AllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

// A collective's latency at `message` bytes: log-log between measured sizes; below the smallest
// the latency is held (the latency floor), above the largest the bus bandwidth is held.
Seconds series_time(const CollectiveSeries& s, Bytes message) {
  const auto& x = s.message;
  if (message <= x.front()) return s.latency.front();
  if (message >= x.back()) return s.latency.back() * message / x.back();
  size_t hi = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), message) - x.begin());
  size_t lo = hi - 1;
  double w = (std::log(message) - std::log(x[lo])) / (std::log(x[hi]) - std::log(x[lo]));
  return log_lerp(s.latency[lo], s.latency[hi], w);
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Loading

KernelTables KernelTables::parse(const std::string& yaml_text, const std::string& source) {
  YamlDoc doc = parse_yaml(yaml_text, source);
  const YAML::Node& root = doc.root;
  if (!root.IsMap()) throw Error(source + ": a kernel table file must be a YAML map of fields");
  KernelTables t;
  t.source_ = source;

  YAML::Node version = need(doc, root, "schema_version", "schema_version", YAML::NodeType::Scalar);
  if (version.Scalar() != "1") yaml_field_error(doc, version, "schema_version", "got '" + version.Scalar() + "', allowed: 1");
  t.device_ = need_string(doc, root, "device", "device");

  YAML::Node prov = need(doc, root, "provenance", "provenance", YAML::NodeType::Map);
  std::string licence = need_string(doc, prov, "licence", "provenance.licence");
  t.package_line_ = need_string(doc, prov, "package", "provenance.package") + " " +
                    need_string(doc, prov, "package_version", "provenance.package_version") + " (licence " + licence +
                    "), converted " + need_string(doc, prov, "converted", "provenance.converted") + " by " +
                    optional<std::string>(doc, prov, "converter", "?");

  if (YAML::Node gemm = root["gemm"]) {
    t.gemm_source_ = read_source(doc, gemm, "gemm");
    YAML::Node tables = need(doc, gemm, "tables", "gemm.tables", YAML::NodeType::Sequence);
    for (size_t i = 0; i < tables.size(); ++i) {
      const YAML::Node& n = tables[i];
      std::string p = "gemm.tables[" + std::to_string(i) + "]";
      if (!n.IsMap()) yaml_field_error(doc, n, p, "got '" + dump(n) + "', allowed: a map");
      GemmTable g;
      g.dtype = read_dtype(doc, n, p + ".dtype");
      for (const auto& other : t.gemm_)
        if (other.dtype == g.dtype) yaml_field_error(doc, n, p + ".dtype", "got '" + to_string(g.dtype) + "' twice, allowed: once");
      g.m = read_axis(doc, n, "m", p + ".m");
      g.n = read_axis(doc, n, "n", p + ".n");
      g.k = read_axis(doc, n, "k", p + ".k");
      size_t cells = g.m.size() * g.n.size() * g.k.size();
      g.latency = read_latencies(doc, n, "latency_us", p + ".latency_us", cells, "|m| x |n| x |k|");
      if (n["filled"]) {
        const std::string below = "an index below " + std::to_string(cells);
        for (double v : read_numbers(doc, n, "filled", p + ".filled", [&](double x) {
               return x >= 0 && x == std::floor(x) && x < static_cast<double>(cells) ? nullptr : below.c_str();
             }))
          g.filled.push_back(static_cast<size_t>(v));
        std::sort(g.filled.begin(), g.filled.end());
      }
      t.gemm_.push_back(std::move(g));
    }
  }

  if (YAML::Node att = root["attention"]) {
    t.attention_source_ = read_source(doc, att, "attention");
    t.attention_.causal = need_bool(doc, att, "causal", "attention.causal");
    t.attention_.batch = read_axis(doc, att, "batch", "attention.batch");
    t.attention_.seq = read_axis(doc, att, "seq", "attention.seq");
    YAML::Node series = need(doc, att, "series", "attention.series", YAML::NodeType::Sequence);
    std::set<std::tuple<Count, Count, Count>> seen;
    for (size_t i = 0; i < series.size(); ++i) {
      const YAML::Node& n = series[i];
      std::string p = "attention.series[" + std::to_string(i) + "]";
      if (!n.IsMap()) yaml_field_error(doc, n, p, "got '" + dump(n) + "', allowed: a map");
      AttentionSeries s;
      s.head_dim = as_positive_count(doc, need(doc, n, "head_dim", p + ".head_dim", YAML::NodeType::Scalar), p + ".head_dim");
      s.heads = as_positive_count(doc, need(doc, n, "heads", p + ".heads", YAML::NodeType::Scalar), p + ".heads");
      s.kv_heads = as_positive_count(doc, need(doc, n, "kv_heads", p + ".kv_heads", YAML::NodeType::Scalar), p + ".kv_heads");
      if (s.kv_heads > s.heads)
        yaml_field_error(doc, n["kv_heads"], p + ".kv_heads",
                         "got " + std::to_string(s.kv_heads) + ", allowed: at most heads (" + std::to_string(s.heads) + ")");
      if (!seen.insert({s.head_dim, s.heads, s.kv_heads}).second)
        yaml_field_error(doc, n, p, "(head_dim, heads, kv_heads) appears twice, allowed: once");
      YAML::Node counts = need(doc, n, "counts", p + ".counts", YAML::NodeType::Sequence);
      if (counts.size() != t.attention_.seq.size())
        yaml_field_error(doc, counts, p + ".counts",
                         "has " + std::to_string(counts.size()) + " values, allowed: one per seq (" +
                             std::to_string(t.attention_.seq.size()) + ")");
      std::vector<size_t> c;
      size_t total = 0;
      for (size_t j = 0; j < counts.size(); ++j) {
        std::string cp = p + ".counts[" + std::to_string(j) + "]";
        double v = as_number(doc, counts[j], cp);
        if (!(v >= 0) || v != std::floor(v) || v > static_cast<double>(t.attention_.batch.size()))
          yaml_field_error(doc, counts[j], cp,
                           "got '" + counts[j].Scalar() + "', allowed: 0 to " + std::to_string(t.attention_.batch.size()));
        c.push_back(static_cast<size_t>(v));
        total += c.back();
      }
      std::vector<Seconds> flat = read_latencies(doc, n, "latency_us", p + ".latency_us", total, "the sum of counts");
      size_t at = 0;
      for (size_t cnt : c) {
        s.latency_by_seq.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(at),
                                      flat.begin() + static_cast<std::ptrdiff_t>(at + cnt));
        at += cnt;
      }
      t.attention_.series.push_back(std::move(s));
    }
    // Series of one head dim sit together, head dims ascending (attention_forward_time relies on it).
    std::stable_sort(t.attention_.series.begin(), t.attention_.series.end(),
                     [](const AttentionSeries& a, const AttentionSeries& b) { return a.head_dim < b.head_dim; });
  }

  if (YAML::Node ta = root["training_attention"]) {
    if (!ta.IsMap()) yaml_field_error(doc, ta, "training_attention", "got '" + dump(ta) + "', allowed: a map");
    TrainingAttentionTable& tt = t.training_attention_;
    t.training_attention_source_ = need_string(doc, ta, "source", "training_attention.source");
    tt.chart_gpu = need_string(doc, ta, "chart_gpu", "training_attention.chart_gpu");
    YAML::Node ratio = need(doc, ta, "forward_backward_rate_ratio", "training_attention.forward_backward_rate_ratio",
                            YAML::NodeType::Scalar);
    tt.forward_backward_rate_ratio = as_number(doc, ratio, "training_attention.forward_backward_rate_ratio");
    if (!(tt.forward_backward_rate_ratio >= 0.5 && tt.forward_backward_rate_ratio <= 4))
      yaml_field_error(doc, ratio, "training_attention.forward_backward_rate_ratio",
                       "got '" + ratio.Scalar() + "', allowed: 0.5 to 4");
    tt.seq = read_axis(doc, ta, "seq", "training_attention.seq");
    YAML::Node series = need(doc, ta, "series", "training_attention.series", YAML::NodeType::Sequence);
    for (size_t i = 0; i < series.size(); ++i) {
      const YAML::Node& n = series[i];
      const std::string p = "training_attention.series[" + std::to_string(i) + "]";
      if (!n.IsMap()) yaml_field_error(doc, n, p, "got '" + dump(n) + "', allowed: a map");
      TrainingAttentionSeries s;
      const YAML::Node kernel = need(doc, n, "kernel", p + ".kernel", YAML::NodeType::Scalar);
      if (kernel.Scalar() == "flash-attention-1") s.kernel = AttentionKernel::Flash1;
      else if (kernel.Scalar() == "flash-attention-2") s.kernel = AttentionKernel::Flash2;
      else yaml_field_error(doc, kernel, p + ".kernel", "got '" + kernel.Scalar() + "', allowed: flash-attention-1, flash-attention-2");
      s.causal = need_bool(doc, n, "causal", p + ".causal");
      s.head_dim = as_positive_count(doc, need(doc, n, "head_dim", p + ".head_dim", YAML::NodeType::Scalar), p + ".head_dim");
      for (const auto& other : tt.series)
        if (other.kernel == s.kernel && other.causal == s.causal && other.head_dim == s.head_dim)
          yaml_field_error(doc, n, p, "(kernel, causal, head_dim) appears twice, allowed: once");
      const YAML::Node rates = need(doc, n, "tflops_fwd_bwd", p + ".tflops_fwd_bwd", YAML::NodeType::Sequence);
      if (rates.size() != tt.seq.size())
        yaml_field_error(doc, rates, p + ".tflops_fwd_bwd",
                         "has " + std::to_string(rates.size()) + " values, allowed: one per seq (" + std::to_string(tt.seq.size()) + ")");
      size_t measured = 0;
      for (size_t j = 0; j < rates.size(); ++j) {
        const std::string rp = p + ".tflops_fwd_bwd[" + std::to_string(j) + "]";
        if (rates[j].IsNull()) {
          s.rate.push_back(std::nan(""));
          continue;
        }
        const double v = as_number(doc, rates[j], rp);
        if (!(v > 0 && v < 1e5)) yaml_field_error(doc, rates[j], rp, "got '" + rates[j].Scalar() + "', allowed: TFLOP/s above 0");
        s.rate.push_back(v * 1e12);
        ++measured;
      }
      if (measured == 0) yaml_field_error(doc, rates, p + ".tflops_fwd_bwd", "has no measured value, allowed: at least one number");
      tt.series.push_back(std::move(s));
    }
    std::stable_sort(tt.series.begin(), tt.series.end(),
                     [](const TrainingAttentionSeries& a, const TrainingAttentionSeries& b) { return a.head_dim < b.head_dim; });
  }

  if (YAML::Node coll = root["collectives"]) {
    t.collective_source_ = read_source(doc, coll, "collectives");
    YAML::Node series = need(doc, coll, "series", "collectives.series", YAML::NodeType::Sequence);
    for (size_t i = 0; i < series.size(); ++i) {
      const YAML::Node& n = series[i];
      std::string p = "collectives.series[" + std::to_string(i) + "]";
      if (!n.IsMap()) yaml_field_error(doc, n, p, "got '" + dump(n) + "', allowed: a map");
      CollectiveSeries s;
      s.kind = read_collective(doc, n, p + ".collective");
      YAML::Node gpus = need(doc, n, "gpus", p + ".gpus", YAML::NodeType::Scalar);
      Count g = as_positive_count(doc, gpus, p + ".gpus");
      if (g < 2 || g > 1024) yaml_field_error(doc, gpus, p + ".gpus", "got " + std::to_string(g) + ", allowed: 2 to 1024");
      s.gpus = static_cast<int>(g);
      for (const auto& other : t.collectives_)
        if (other.kind == s.kind && other.gpus == s.gpus)
          yaml_field_error(doc, n, p, std::string(collective_name(s.kind)) + " on " + std::to_string(g) +
                                          " GPUs appears twice, allowed: once");
      for (Count b : read_axis(doc, n, "message_bytes", p + ".message_bytes")) s.message.push_back(static_cast<Bytes>(b));
      s.latency = read_latencies(doc, n, "latency_us", p + ".latency_us", s.message.size(), "one per message size");
      t.collectives_.push_back(std::move(s));
    }
    std::sort(t.collectives_.begin(), t.collectives_.end(), [](const CollectiveSeries& a, const CollectiveSeries& b) {
      return std::pair(static_cast<int>(a.kind), a.gpus) < std::pair(static_cast<int>(b.kind), b.gpus);
    });
  }
  return t;
}

KernelTables KernelTables::load(const std::string& name_or_path) {
  std::string builtin_path = "configs/kernel_tables/" + name_or_path + ".yaml";
  if (auto text = builtin_text(builtin_path)) return parse(std::string(*text), "built-in " + builtin_path);
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml")) {
    std::ifstream in(name_or_path);
    if (!in) throw Error("cannot open kernel table file '" + name_or_path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse(ss.str(), name_or_path);
  }
  std::string names;
  for (const auto& n : builtin_names("configs/kernel_tables")) names += (names.empty() ? "" : ", ") + n;
  throw UsageError("unknown kernel table '" + name_or_path + "' (built-in: " + names + "; or give a path to a .yaml file)");
}

KernelTables KernelTables::restricted(bool gemm, bool attention, bool collectives, const std::string& note) const {
  KernelTables t = *this;
  t.cache_id_ = next_cache_id();
  if (!gemm) {
    t.gemm_.clear();
    t.gemm_source_ = {};
  }
  if (!attention) {
    t.attention_ = {};
    t.attention_source_ = {};
    t.training_attention_ = {};
    t.training_attention_source_.clear();
  }
  if (!collectives) {
    t.collectives_.clear();
    t.collective_source_ = {};
  }
  if (!note.empty()) t.notes_.push_back(note);
  return t;
}

std::vector<std::string> KernelTables::provenance() const {
  std::vector<std::string> out{"kernel tables " + device_ + " (" + source_ + "): " + package_line_};
  auto section = [&](const std::string& what, const KernelTableSource& s, bool present) {
    if (!present) return;
    std::string line = what;
    line += ": " + s.file;
    line += " (device '" + s.device + "', " + s.framework + " " + s.version + ", kernel " + s.kernel_source + ")";
    out.push_back(line);
  };
  std::string dtypes = "gemm";
  for (const auto& g : gemm_) {
    dtypes += dtypes == "gemm" ? ' ' : '/';
    dtypes += to_string(g.dtype);
  }
  section(dtypes, gemm_source_, !gemm_.empty());
  section("attention forward", attention_source_, !attention_.series.empty());
  section("collectives", collective_source_, !collectives_.empty());
  if (!training_attention_.series.empty())
    out.push_back("training attention forward+backward (" + training_attention_.chart_gpu + "): " + training_attention_source_);
  for (const auto& n : notes_) out.push_back("note: " + n);
  return out;
}

// -----------------------------------------------------------------------------------------------
// Queries

namespace {
// The planner prices the same few GEMM and attention shapes across hundreds of thousands of
// layouts, and each lookup is a log-space interpolation (most of a search's time without this):
// each thread remembers what it has looked up, per table. Bounded: cleared when full.
using QueryKey = std::array<long long, 7>;
struct QueryKeyHash {
  size_t operator()(const QueryKey& k) const {
    size_t h = 1469598103934665603ull;
    for (long long v : k) h = (h ^ std::hash<long long>{}(v)) * 1099511628211ull;
    return h;
  }
};
template <class Compute>
std::optional<Seconds> remembered(const QueryKey& key, Compute compute) {
  thread_local std::unordered_map<QueryKey, std::optional<Seconds>, QueryKeyHash> cache;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= (1u << 16)) cache.clear();
  const std::optional<Seconds> t = compute();
  cache.emplace(key, t);
  return t;
}
}  // namespace

long long KernelTables::next_cache_id() {
  static std::atomic<long long> next{1};
  return next++;
}

std::optional<Seconds> KernelTables::gemm_time(Dtype dtype, Count m, Count n, Count k) const {
  if (m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  return remembered({cache_id_, 0, static_cast<long long>(dtype), m, n, k, 0},
                    [&] { return gemm_time_uncached(dtype, m, n, k); });
}

std::optional<Seconds> KernelTables::gemm_time_uncached(Dtype dtype, Count m, Count n, Count k) const {
  auto it = std::find_if(gemm_.begin(), gemm_.end(), [&](const GemmTable& g) { return g.dtype == dtype; });
  if (it == gemm_.end()) return std::nullopt;
  const GemmTable& g = *it;
  // Interpolate at the clamped point, then hold that point's FLOP rate for the real shape.
  double mc = clamp_to(g.m, static_cast<double>(m)), nc = clamp_to(g.n, static_cast<double>(n)),
         kc = clamp_to(g.k, static_cast<double>(k));
  auto [im, wm] = log_bracket(g.m, mc);
  auto [in, wn] = log_bracket(g.n, nc);
  auto [ik, wk] = log_bracket(g.k, kc);
  double log_latency = 0;
  for (int dm = 0; dm < 2; ++dm)
    for (int dn = 0; dn < 2; ++dn)
      for (int dk = 0; dk < 2; ++dk) {
        double w = (dm ? wm : 1 - wm) * (dn ? wn : 1 - wn) * (dk ? wk : 1 - wk);
        if (w == 0) continue;
        size_t jm = std::min(im + dm, g.m.size() - 1), jn = std::min(in + dn, g.n.size() - 1),
               jk = std::min(ik + dk, g.k.size() - 1);
        log_latency += w * std::log(g.at(jm, jn, jk));
      }
  double scale = (static_cast<double>(m) / mc) * (static_cast<double>(n) / nc) * (static_cast<double>(k) / kc);
  return std::exp(log_latency) * scale;
}

// Attention forward at one measured head dim. Rules (docs/kernel-tables.md):
//  - series: the measured (heads, kv_heads) with the nearest group size heads/kv_heads (log
//    distance), among those the nearest head count; exact when measured.
//  - batch x heads: flash attention's grid is (batch x heads) x query blocks, so the query is
//    priced as the series' heads at an equivalent batch b' = batch x heads / series heads.
//    Along the batch axis of one seq: log-log between measured batches; beyond the largest
//    measured batch the throughput is held (time proportional to b'; the package stopped at a
//    token budget where the GPU is already full); below the smallest the time is held.
//  - seq: log-log between measured lengths; below the shortest the time is held; beyond the
//    longest the FLOP rate is held (time proportional to seq^2, causal or not).
std::optional<Seconds> KernelTables::attention_at_head_dim(size_t first, Count batch, Count seq, Count heads,
                                                           Count kv_heads) const {
  const auto& all = attention_.series;
  Count head_dim = all[first].head_dim;
  double want_group = std::log(static_cast<double>(heads) / static_cast<double>(kv_heads));
  const AttentionSeries* best = nullptr;
  std::pair<double, double> best_score{1e300, 1e300};
  for (size_t i = first; i < all.size() && all[i].head_dim == head_dim; ++i) {
    const auto& s = all[i];
    double group = std::log(static_cast<double>(s.heads) / static_cast<double>(s.kv_heads));
    std::pair<double, double> score{std::round(std::abs(group - want_group) * 1e9) / 1e9,
                                    std::abs(std::log(static_cast<double>(s.heads) / static_cast<double>(heads)))};
    if (score < best_score) best_score = score, best = &s;
  }
  double b_eff = static_cast<double>(batch) * static_cast<double>(heads) / static_cast<double>(best->heads);
  const auto& B = attention_.batch;
  auto row_time = [&](size_t i_seq) -> std::optional<Seconds> {
    const auto& row = best->latency_by_seq[i_seq];
    if (row.empty()) return std::nullopt;
    std::vector<Count> measured(B.begin(), B.begin() + static_cast<std::ptrdiff_t>(row.size()));
    if (b_eff >= static_cast<double>(measured.back())) return row.back() * b_eff / static_cast<double>(measured.back());
    auto [lo, w] = log_bracket(measured, b_eff);
    return row.size() == 1 ? row[0] : log_lerp(row[lo], row[lo + 1], w);
  };
  const auto& S = attention_.seq;
  double s = static_cast<double>(seq);
  if (s >= static_cast<double>(S.back())) {
    auto t = row_time(S.size() - 1);
    if (!t) return std::nullopt;
    double r = s / static_cast<double>(S.back());
    return *t * r * r;
  }
  auto [lo, w] = log_bracket(S, s);
  auto t0 = row_time(lo);
  if (!t0) return std::nullopt;
  if (w == 0 || S.size() == 1) return t0;
  auto t1 = row_time(lo + 1);
  if (!t1) return std::nullopt;
  return log_lerp(*t0, *t1, w);
}

// Between measured head dims: log-log interpolation of the two neighbours' times.
std::optional<Seconds> KernelTables::attention_forward_time(Count batch, Count seq, Count heads, Count kv_heads,
                                                            Count head_dim, bool causal) const {
  return remembered({cache_id_, causal ? 2 : 1, batch, seq, heads, kv_heads, head_dim},
                    [&] { return attention_forward_time_uncached(batch, seq, heads, kv_heads, head_dim, causal); });
}

std::optional<Seconds> KernelTables::attention_forward_time_uncached(Count batch, Count seq, Count heads, Count kv_heads,
                                                                     Count head_dim, bool causal) const {
  const auto& all = attention_.series;
  if (all.empty() || causal != attention_.causal) return std::nullopt;
  if (batch <= 0 || seq <= 0 || heads <= 0 || kv_heads <= 0 || head_dim <= 0 || kv_heads > heads) return std::nullopt;
  std::vector<Count> dims;  // first series index of each head dim, ascending (parse sorted them)
  std::vector<size_t> first;
  for (size_t i = 0; i < all.size(); ++i)
    if (dims.empty() || all[i].head_dim != dims.back()) dims.push_back(all[i].head_dim), first.push_back(i);
  if (head_dim < dims.front() || head_dim > dims.back()) return std::nullopt;
  auto at = std::lower_bound(dims.begin(), dims.end(), head_dim);
  size_t hi = static_cast<size_t>(at - dims.begin());
  if (*at == head_dim) return attention_at_head_dim(first[hi], batch, seq, heads, kv_heads);
  size_t lo = hi - 1;
  auto t0 = attention_at_head_dim(first[lo], batch, seq, heads, kv_heads);
  auto t1 = attention_at_head_dim(first[hi], batch, seq, heads, kv_heads);
  if (!t0 || !t1) return std::nullopt;
  double w = (std::log(static_cast<double>(head_dim)) - std::log(static_cast<double>(dims[lo]))) /
             (std::log(static_cast<double>(dims[hi])) - std::log(static_cast<double>(dims[lo])));
  return log_lerp(*t0, *t1, w);
}

// One series' rate at seq: log-log between the measured points around it, held beyond the ends.
namespace {
std::optional<FlopsPerSec> series_rate(const std::vector<Count>& seq, const std::vector<FlopsPerSec>& rate, Count s) {
  std::vector<std::pair<double, double>> pts;  // (log seq, log rate) of the measured points
  for (size_t i = 0; i < seq.size(); ++i)
    if (std::isfinite(rate[i])) pts.emplace_back(std::log(double(seq[i])), std::log(rate[i]));
  if (pts.empty()) return std::nullopt;
  const double x = std::log(double(std::max<Count>(1, s)));
  if (x <= pts.front().first) return std::exp(pts.front().second);
  if (x >= pts.back().first) return std::exp(pts.back().second);
  size_t hi = 1;
  while (pts[hi].first < x) ++hi;
  const double w = (x - pts[hi - 1].first) / (pts[hi].first - pts[hi - 1].first);
  return std::exp(pts[hi - 1].second + w * (pts[hi].second - pts[hi - 1].second));
}
}  // namespace

std::optional<FlopsPerSec> KernelTables::training_attention_rate(AttentionKernel kernel, bool causal, Count head_dim,
                                                                 Count seq) const {
  std::vector<const TrainingAttentionSeries*> of;  // this kernel and causality, head dims ascending
  for (const auto& s : training_attention_.series)
    if (s.kernel == kernel && s.causal == causal) of.push_back(&s);
  if (of.empty() || head_dim <= 0) return std::nullopt;
  const auto rate_of = [&](const TrainingAttentionSeries* s) { return series_rate(training_attention_.seq, s->rate, seq); };
  if (head_dim <= of.front()->head_dim) return rate_of(of.front());
  if (head_dim >= of.back()->head_dim) return rate_of(of.back());
  size_t hi = 1;
  while (of[hi]->head_dim < head_dim) ++hi;
  const auto r0 = rate_of(of[hi - 1]), r1 = rate_of(of[hi]);
  if (!r0 || !r1) return std::nullopt;
  const double w = (std::log(double(head_dim)) - std::log(double(of[hi - 1]->head_dim))) /
                   (std::log(double(of[hi]->head_dim)) - std::log(double(of[hi - 1]->head_dim)));
  return log_lerp(*r0, *r1, w);
}

// Measured GPU counts are priced by their own series. Between two measured counts the bus
// bandwidth (nccl-tests convention) is interpolated linearly in the GPU count and turned back
// into time with the count's own bus factor; outside the measured counts: nullopt.
std::optional<Seconds> KernelTables::collective_time(Collective kind, int gpus, Bytes message) const {
  if (message < 0) return std::nullopt;
  const CollectiveSeries* below = nullptr;
  const CollectiveSeries* above = nullptr;
  for (const auto& s : collectives_) {
    if (s.kind != kind) continue;
    if (s.gpus == gpus) return series_time(s, message);
    if (s.gpus < gpus && (!below || s.gpus > below->gpus)) below = &s;
    if (s.gpus > gpus && (!above || s.gpus < above->gpus)) above = &s;
  }
  if (!below || !above) return std::nullopt;
  Bytes size = std::max(message, std::max(below->message.front(), above->message.front()));
  double bus_lo = size / series_time(*below, size) * bus_factor(kind, below->gpus);
  double bus_hi = size / series_time(*above, size) * bus_factor(kind, above->gpus);
  double w = static_cast<double>(gpus - below->gpus) / static_cast<double>(above->gpus - below->gpus);
  double bus = (1 - w) * bus_lo + w * bus_hi;
  return size / bus * bus_factor(kind, gpus);  // below the smallest measured size: that size's time
}

}  // namespace sixfold
