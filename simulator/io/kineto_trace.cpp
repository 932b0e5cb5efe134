#include "simulator/io/kineto_trace.hpp"

#include "common/file_io.hpp"
#include "common/parse.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"

namespace sixfold {

namespace {

using nlohmann::json;

struct CpuOp {
  std::string name;
  double ts = 0, dur = 0;  // microseconds
  const json* args = nullptr;
};

struct Launch {
  long long pid = 0, tid = 0;
  double ts = 0;
};

struct Kernel {
  std::string name;
  double dur = 0;
  long long correlation = 0;
  const json* args = nullptr;
};

// A JSON number as a 64-bit integer when it is one (a float must be integral and below 2^53; an
// unsigned above INT64_MAX is not): no undefined conversion of 1e300 or 2^64.
std::optional<long long> integer_of(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<unsigned long long>();
    return u <= 0x7fffffffffffffffULL ? std::optional<long long>((long long)u) : std::nullopt;
  }
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= 9007199254740992.0) return (long long)d;
  }
  return std::nullopt;
}

// pid and tid are numbers in Kineto's traces, strings in some converters; both are keys here.
long long id_of(const json& e, const char* key) {
  if (!e.contains(key)) return 0;
  const json& v = e[key];
  if (v.is_number()) return integer_of(v).value_or(0);
  if (v.is_string()) return (long long)std::hash<std::string>{}(v.get<std::string>());
  return 0;
}

std::optional<Dtype> dtype_of_torch(const std::string& t) {
  if (t == "c10::BFloat16" || t == "BFloat16") return Dtype::BF16;
  if (t == "c10::Half" || t == "Half") return Dtype::FP16;
  if (t == "float" || t == "Float") return Dtype::FP32;
  if (t.find("Float8") != std::string::npos) return Dtype::FP8;
  return std::nullopt;
}

double element_bytes(const std::string& t) {
  if (t == "c10::BFloat16" || t == "BFloat16" || t == "c10::Half" || t == "Half") return 2;
  if (t == "float" || t == "Float" || t == "int" || t == "Int") return 4;
  if (t == "double" || t == "Double" || t == "long int" || t == "Long") return 8;
  if (t.find("Float8") != std::string::npos || t == "unsigned char" || t == "signed char" || t == "bool" || t == "Byte")
    return 1;
  return 0;
}

// "Input Dims" as a list of shapes (empty for non-tensor arguments), or nullopt when absent.
std::optional<std::vector<std::vector<Count>>> input_dims(const json* args) {
  if (!args || !args->contains("Input Dims") || !(*args)["Input Dims"].is_array()) return std::nullopt;
  std::vector<std::vector<Count>> out;
  for (const auto& shape : (*args)["Input Dims"]) {
    // A dimension that is not a whole number in [0, 2^40] makes the shape unknown (empty).
    std::vector<Count> dims;
    if (shape.is_array())
      for (const auto& d : shape) {
        const auto v = integer_of(d);
        if (!v || *v < 0 || *v > (1LL << 40)) {
          dims.clear();
          break;
        }
        dims.push_back(*v);
      }
    out.push_back(dims);
  }
  return out;
}

std::vector<std::string> input_types(const json* args) {
  std::vector<std::string> out;
  if (args && args->contains("Input type") && (*args)["Input type"].is_array())
    for (const auto& t : (*args)["Input type"]) out.push_back(t.is_string() ? t.get<std::string>() : "");
  return out;
}

// Elements of a shape; -1 when the product does not fit in 64 bits.
Count numel(const std::vector<Count>& dims) {
  Count n = 1;
  for (Count d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

// GEMM shape of an ATen matrix-multiply call from its input dims (PyTorch's signatures:
// mm(self[m,k], mat2[k,n]); addmm(bias, mat1[m,k], mat2[k,n], ...); bmm(self[b,m,k], mat2[b,k,n]);
// linear(input[..., k], weight[n, k], bias); matmul(a[..., m, k], b[k, n])).
std::optional<KinetoGemm> gemm_of(const std::string& name, const std::vector<std::vector<Count>>& d) {
  KinetoGemm g;
  g.op = name;
  auto two = [&](size_t a, size_t b) { return d.size() > std::max(a, b) && d[a].size() == 2 && d[b].size() == 2; };
  if (name == "aten::mm" && two(0, 1) && d[0][1] == d[1][0]) {
    g.m = d[0][0], g.k = d[0][1], g.n = d[1][1];
  } else if (name == "aten::addmm" && two(1, 2) && d[1][1] == d[2][0]) {
    g.m = d[1][0], g.k = d[1][1], g.n = d[2][1];
  } else if (name == "aten::bmm" && d.size() >= 2 && d[0].size() == 3 && d[1].size() == 3 && d[0][2] == d[1][1]) {
    g.batch = d[0][0], g.m = d[0][1], g.k = d[0][2], g.n = d[1][2];
  } else if (name == "aten::linear" && d.size() >= 2 && !d[0].empty() && d[1].size() == 2 && d[0].back() == d[1][1]) {
    g.k = d[0].back(), g.n = d[1][0], g.m = g.k > 0 ? numel(d[0]) / g.k : 0;
  } else if (name == "aten::matmul" && d.size() >= 2 && d[0].size() >= 2 && d[1].size() == 2 && d[0].back() == d[1][0]) {
    g.k = d[0].back(), g.n = d[1][1], g.m = g.k > 0 ? numel(d[0]) / g.k : 0;
  } else {
    return std::nullopt;
  }
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return std::nullopt;
  return g;
}

bool is_gemm_op(const std::string& n) {
  return n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" || n == "aten::linear" || n == "aten::matmul";
}

// Bytes a memory-bound ATen op reads and writes, from its tensor inputs: unary ops and norms read x
// and write a tensor like it; binary ops read both and write the (broadcast) larger one; in-place
// ops ("add_") write their first input; copy_ reads the source and writes the destination.
std::optional<Bytes> memory_bytes_of(const std::string& name, const std::vector<std::vector<Count>>& d,
                                     const std::vector<std::string>& types) {
  static const std::vector<std::string> unary = {"aten::silu", "aten::gelu", "aten::relu", "aten::neg", "aten::exp",
                                                 "aten::native_layer_norm", "aten::layer_norm", "aten::rms_norm",
                                                 "aten::_fused_rms_norm", "aten::sigmoid", "aten::tanh"};
  static const std::vector<std::string> binary = {"aten::add", "aten::mul", "aten::sub", "aten::div",
                                                  "aten::add_", "aten::mul_", "aten::sub_", "aten::div_"};
  auto tensor_bytes = [&](size_t i) -> double {
    if (i >= d.size() || i >= types.size() || d[i].empty() || numel(d[i]) < 0) return 0;
    return double(numel(d[i])) * element_bytes(types[i]);
  };
  const bool is_unary = std::find(unary.begin(), unary.end(), name) != unary.end();
  const bool is_binary = std::find(binary.begin(), binary.end(), name) != binary.end();
  if (name == "aten::copy_") {
    const double src = tensor_bytes(1), dst = tensor_bytes(0);
    return src > 0 && dst > 0 ? std::optional<Bytes>(src + dst) : std::nullopt;
  }
  if (is_unary) {
    const double x = tensor_bytes(0);
    double weights = 0;
    for (size_t i = 1; i < d.size(); ++i) weights += tensor_bytes(i);
    return x > 0 ? std::optional<Bytes>(2 * x + weights) : std::nullopt;
  }
  if (is_binary) {
    const double a = tensor_bytes(0), b = tensor_bytes(1);
    return a > 0 ? std::optional<Bytes>(a + b + std::max(a, b)) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<Collective> collective_of_kernel(const std::string& name) {
  if (name.rfind("ncclDevKernel_", 0) != 0 && name.rfind("ncclKernel_", 0) != 0) return std::nullopt;
  if (name.find("AllReduce") != std::string::npos) return Collective::AllReduce;
  if (name.find("AllGather") != std::string::npos) return Collective::AllGather;
  if (name.find("ReduceScatter") != std::string::npos) return Collective::ReduceScatter;
  return std::nullopt;
}

// Message size (nccl-tests convention) from the kComms* args on the kernel or its operator.
std::optional<std::pair<Bytes, int>> comms_size(Collective c, const json* a) {
  if (!a || !a->contains("Group size") || !a->contains("dtype")) return std::nullopt;
  const char* key = c == Collective::AllGather ? "Out msg nelems" : "In msg nelems";
  if (!a->contains(key) || !(*a)[key].is_number() || !(*a)["Group size"].is_number() || !(*a)["dtype"].is_string())
    return std::nullopt;
  const double el = element_bytes((*a)["dtype"].get<std::string>());
  const double n = (*a)[key].get<double>();
  const auto group = integer_of((*a)["Group size"]);
  if (!(el > 0) || !(n > 0) || !std::isfinite(n) || !group || *group < 1 || *group > (1 << 20)) return std::nullopt;
  return std::make_pair(Bytes(n * el), int(*group));
}

[[noreturn]] void malformed(const std::string& source, const std::string& what) {
  throw Error(source + ": not a usable PyTorch profiler (Kineto) trace: " + what);
}

}  // namespace

KinetoTrace read_kineto_trace(const std::string& path) {
  return parse_kineto_trace(read_text_file(path, limits::kTraceFileBytes, "Kineto traces"), path);
}

KinetoTrace parse_kineto_trace(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // syntax, or a number too large for a double
    malformed(source, std::string("invalid JSON (") + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    malformed(source, "no \"traceEvents\" array at the top level");
  KinetoTrace trace;
  trace.source = source;
  std::map<std::pair<long long, long long>, std::vector<CpuOp>> ops_by_thread;
  std::map<long long, Launch> launches;
  std::vector<Kernel> kernels;
  const json& events = doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object() || !e.contains("cat") || !e["cat"].is_string()) continue;
    const std::string cat = e["cat"].get<std::string>();
    if (cat != "kernel" && cat != "cpu_op" && cat != "cuda_runtime" && cat != "cuda_driver") continue;
    const std::string where = "event " + std::to_string(i) + " (\"cat\": \"" + cat + "\")";
    for (const char* field : {"name", "ts", "dur"}) {
      if (!e.contains(field)) malformed(source, where + " has no \"" + field + "\"");
    }
    if (!e["name"].is_string() || !e["ts"].is_number() || !e["dur"].is_number())
      malformed(source, where + ": \"name\" must be a string, \"ts\" and \"dur\" numbers (microseconds)");
    if (!std::isfinite(e["ts"].get<double>()) || !(e["dur"].get<double>() >= 0) || !std::isfinite(e["dur"].get<double>()))
      malformed(source, where + ": \"ts\" must be finite and \"dur\" finite and not negative");
    const json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
    const bool has_corr = args && args->contains("correlation") && integer_of((*args)["correlation"]);
    if (cat == "cpu_op") {
      ops_by_thread[{id_of(e, "pid"), id_of(e, "tid")}].push_back(
          {e["name"].get<std::string>(), e["ts"].get<double>(), e["dur"].get<double>(), args});
    } else if (cat == "kernel") {
      if (!has_corr) malformed(source, where + " (\"" + e["name"].get<std::string>() + "\") has no \"args\": {\"correlation\": N}");
      kernels.push_back({e["name"].get<std::string>(), e["dur"].get<double>(), *integer_of((*args)["correlation"]), args});
    } else if (has_corr) {
      launches[*integer_of((*args)["correlation"])] = {id_of(e, "pid"), id_of(e, "tid"), e["ts"].get<double>()};
    }
  }
  if (kernels.empty())
    malformed(source, "no \"cat\": \"kernel\" events (profile with ProfilerActivity.CUDA)");
  trace.kernels = int(kernels.size());
  for (auto& [thread, ops] : ops_by_thread)
    std::sort(ops.begin(), ops.end(), [](const CpuOp& a, const CpuOp& b) { return a.ts < b.ts || (a.ts == b.ts && a.dur > b.dur); });

  // Sum kernel time per operator call (thread, index of the op), and keep NCCL kernels apart.
  std::map<std::pair<std::pair<long long, long long>, size_t>, double> op_time;
  for (const Kernel& k : kernels) {
    const auto launch = launches.find(k.correlation);
    const CpuOp* op = nullptr;
    std::pair<std::pair<long long, long long>, size_t> key;
    if (launch != launches.end()) {
      const auto thread = std::make_pair(launch->second.pid, launch->second.tid);
      const auto it = ops_by_thread.find(thread);
      if (it != ops_by_thread.end()) {
        const auto& ops = it->second;
        // The innermost operator containing the launch is the latest-starting one that contains it.
        auto pos = std::upper_bound(ops.begin(), ops.end(), launch->second.ts,
                                    [](double t, const CpuOp& o) { return t < o.ts; });
        while (pos != ops.begin()) {
          --pos;
          if (pos->ts + pos->dur >= launch->second.ts) {
            op = &*pos;
            key = {thread, size_t(pos - ops.begin())};
            break;
          }
        }
      }
    }
    if (auto c = collective_of_kernel(k.name)) {
      auto size = comms_size(*c, k.args);
      if (!size && op) size = comms_size(*c, op->args);
      if (size && size->second >= 2) trace.collectives.push_back({k.name, *c, size->second, size->first, k.dur * 1e-6});
      else ++trace.skipped;
      continue;
    }
    if (!op) {
      ++trace.unattributed;
      continue;
    }
    op_time[key] += k.dur;
  }
  for (const auto& [key, dur_us] : op_time) {
    const CpuOp& op = ops_by_thread[key.first][key.second];
    const auto dims = input_dims(op.args);
    const auto types = input_types(op.args);
    if (is_gemm_op(op.name)) {
      std::optional<KinetoGemm> g = dims ? gemm_of(op.name, *dims) : std::nullopt;
      // The matrix operand's type: mm/bmm/linear/matmul's first input, addmm's second.
      const size_t ti = op.name == "aten::addmm" ? 1 : 0;
      const auto dt = ti < types.size() ? dtype_of_torch(types[ti]) : std::nullopt;
      if (!g || !dt) {
        ++trace.skipped;
        continue;
      }
      g->dtype = *dt;
      g->time = dur_us * 1e-6;
      trace.gemms.push_back(*g);
    } else if (dims) {
      if (auto bytes = memory_bytes_of(op.name, *dims, types)) trace.memory_ops.push_back({op.name, *bytes, dur_us * 1e-6});
      else ++trace.skipped;
    } else {
      ++trace.skipped;
    }
  }
  return trace;
}

KinetoCalibration calibrate_from_kineto(const KinetoTrace& trace, const HardwareProfile& base, const std::string& date) {
  KinetoCalibration out;
  out.profile = base;
  const std::string meas = "measurement: Kineto trace " + trace.source + ", " + date;
  auto fmt = [](const char* f, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return std::string(buf);
  };
  auto set = [&](const std::string& path, const std::string& source) {
    out.profile.provenance[path] = source;
    out.fitted.push_back(path);
  };

  std::vector<GemmPoint> gemm_points;
  for (const auto& g : trace.gemms) {
    auto peak = base.peak_flops.find(g.dtype);
    if (peak == base.peak_flops.end()) {
      out.notes.push_back("GEMM " + g.op + " in " + to_string(g.dtype) + " skipped: profile '" + base.name + "' has no peak for it");
      continue;
    }
    const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.batch);
    gemm_points.push_back({g.m, g.n, g.k, g.batch, flops / g.time / peak->second});
  }
  if (gemm_points.size() >= 2) {
    out.gemm = fit_gemm_efficiency(gemm_points, base.sm_count);
    out.profile.gemm = out.gemm->curve;
    const std::string src = meas + "; fit of max * s(m) s(n) s(k) * waves to " + std::to_string(gemm_points.size()) +
                            " GEMM calls (aten::mm/addmm/bmm/linear with record_shapes), rms log error " +
                            fmt("%.3g", out.gemm->rms_log_error);
    for (const char* p : {"gemm.max_efficiency", "gemm.half_dim", "gemm.tile"}) set(p, src);
  } else {
    out.notes.push_back("GEMM curve kept from the base profile: " + std::to_string(gemm_points.size()) +
                        " GEMM call(s) with shapes (profile with record_shapes=True)");
  }

  // memory_efficiency: time = bytes / (bandwidth * efficiency); log least squares gives the
  // geometric mean of the achieved fraction. Ops under 5 us are launch-bound and left out.
  double log_sum = 0;
  for (const auto& m : trace.memory_ops) {
    if (m.time < 5e-6) continue;
    log_sum += std::log(m.bytes / m.time / base.memory_bandwidth);
    ++out.memory_points;
  }
  if (out.memory_points > 0) {
    out.memory_efficiency = std::clamp(std::exp(log_sum / out.memory_points), 1e-3, 1.0);
    double sq = 0;
    for (const auto& m : trace.memory_ops)
      if (m.time >= 5e-6) sq += std::pow(std::log(m.bytes / m.time / base.memory_bandwidth / *out.memory_efficiency), 2);
    out.profile.memory_efficiency = *out.memory_efficiency;
    set("memory_efficiency", meas + "; geometric mean of bytes / time / memory_bandwidth over " +
                                 std::to_string(out.memory_points) + " element-wise and norm calls of >= 5 us, rms log error " +
                                 fmt("%.3g", std::sqrt(sq / out.memory_points)));
  } else {
    out.notes.push_back("memory_efficiency kept: no memory-bound operator of >= 5 us with input dims");
  }

  std::vector<CollectivePoint> intra, inter;
  for (const auto& c : trace.collectives)
    (c.ranks <= base.scale_up_gpus() ? intra : inter).push_back({c.collective, c.ranks, c.message, c.time});
  for (auto [level, points, curve, slot] :
       {std::tuple{std::string("intra_node"), &intra, &out.profile.intra_node, &out.intra_node},
        std::tuple{std::string("inter_node"), &inter, &out.profile.inter_node, &out.inter_node}}) {
    if (points->size() < 2) {
      out.notes.push_back(level + " curve kept: " + std::to_string(points->size()) + " NCCL kernel(s) with message sizes");
      continue;
    }
    *slot = fit_collective_curve(*points, curve->latency);
    *curve = (*slot)->curve;
    const std::string src = meas + "; NCCL kernels' duration (includes waiting for late ranks) fitted to latency + "
                            "busbw curve over " + std::to_string(points->size()) + " calls, rms log error " +
                            fmt("%.3g", (*slot)->rms_log_error);
    set(level + ".peak_busbw", src);
    set(level + ".half_size", src);
    if ((*slot)->latency_fitted) set(level + ".latency", src);
    else out.notes.push_back(level + ".latency kept from the base profile: one bus factor only, latency and half size not separable");
  }
  if (out.fitted.empty())
    throw Error(trace.source + ": nothing to calibrate: no GEMM with shapes, no memory-bound operator of >= 5 us and "
                "no two NCCL kernels with sizes (" + std::to_string(trace.kernels) + " kernels read)");
  return out;
}

}  // namespace sixfold
