#include "simulator/profile_fit.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "simulator/validation.hpp"

namespace sixfold {

namespace {

double* field(HardwareProfile& hw, const std::string& path) {
  if (path == "gemm.max_efficiency") return &hw.gemm.max_efficiency;
  if (path == "gemm.half_dim") return &hw.gemm.half_dim;
  if (path == "attention_efficiency") return &hw.attention_efficiency;
  if (path == "memory_efficiency") return &hw.memory_efficiency;
  if (path == "kernel_overhead") return &hw.kernel_overhead;
  if (path == "intra_node.peak_busbw") return &hw.intra_node.peak_busbw;
  if (path == "intra_node.latency") return &hw.intra_node.latency;
  if (path == "intra_node.step_latency") return &hw.intra_node.step_latency;
  if (path == "dispatch_overlap") return &hw.dispatch_overlap;
  if (path == "inter_node.peak_busbw") return &hw.inter_node.peak_busbw;
  if (path == "inter_node.latency") return &hw.inter_node.latency;
  throw Error("cannot fit profile field '" + path + "'");
}

}  // namespace

void apply_fit(HardwareProfile& hw, const std::vector<FitParameter>& parameters) {
  for (const auto& p : parameters) *field(hw, p.path) = p.value;
}

const std::vector<std::string>& fittable_parameters() {
  static const std::vector<std::string> names = {"gemm.max_efficiency", "gemm.half_dim",         "attention_efficiency",
                                                 "memory_efficiency",   "kernel_overhead",       "intra_node.peak_busbw",
                                                 "intra_node.latency",  "inter_node.peak_busbw", "inter_node.latency",
                                                 "intra_node.step_latency", "dispatch_overlap"};
  return names;
}

FitResult fit_profile_to_runs(const CsvTable& runs, const std::string& hardware, const std::string& split, int rounds,
                              const std::vector<std::string>& only) {
  for (const auto& name : only)
    if (std::find(fittable_parameters().begin(), fittable_parameters().end(), name) == fittable_parameters().end()) {
      std::string allowed;
      for (const auto& n : fittable_parameters()) allowed += (allowed.empty() ? "" : ", ") + n;
      throw UsageError("cannot fit '" + name + "' (fittable: " + allowed + ")");
    }
  if (split != "even" && split != "odd") throw UsageError("unknown split '" + split + "' (allowed: even, odd)");
  const int fit_parity = split == "even" ? 0 : 1;
  const HardwareProfile base = load_hardware(hardware);
  FitResult result;
  result.hardware = hardware;
  // Ranges are physical: efficiencies within (0, 1], the dispatch floor within 1-200 us, the
  // per-step ring latency up to the largest NVLink ring/Simple hwLat of NCCL's tuning model
  // (5.7 us in NCCL 2.7-2.8, 3.4 us since; src/graph/tuning.cc), the dispatch overlap a share.
  result.parameters = {{"gemm.max_efficiency", base.gemm.max_efficiency, 0.3, 1.0},
                       {"gemm.half_dim", base.gemm.half_dim, 8, 2048},
                       {"attention_efficiency", base.attention_efficiency, 0.1, 1.0},
                       {"memory_efficiency", base.memory_efficiency, 0.2, 1.0},
                       {"kernel_overhead", base.kernel_overhead, 1e-6, 200e-6},
                       {"intra_node.peak_busbw", base.intra_node.peak_busbw, 20e9, base.intra_node_bandwidth * 1.1},
                       {"intra_node.latency", base.intra_node.latency, 2e-6, 200e-6},
                       {"inter_node.peak_busbw", base.inter_node.peak_busbw, 1e9, base.network_bandwidth * 1.1},
                       {"inter_node.latency", base.inter_node.latency, 2e-6, 500e-6},
                       {"intra_node.step_latency", base.intra_node.step_latency, 0, 5.7e-6},
                       {"dispatch_overlap", base.dispatch_overlap, 0, 1}};
  if (!only.empty())
    std::erase_if(result.parameters, [&](const FitParameter& p) { return std::find(only.begin(), only.end(), p.path) == only.end(); });

  auto score = [&](const std::vector<FitParameter>& params, int parity, int* rows) {
    ValidationOptions opt;
    opt.include = [&](size_t index, const std::string&) {
      return int(index % 2) == parity && runs.field(index, "gpu") == hardware;
    };
    opt.adjust_hardware = [&](HardwareProfile& hw) { apply_fit(hw, params); };
    const ValidationReport rep = validate_runs(runs, opt);
    // Every throughput metric a row measured counts once: iter_s for vTrain's rows, TFLOP/s,
    // MFU or tokens/s for published runs (they are the same step time seen differently).
    int n = 0;
    double sum = 0;
    for (const char* metric : {"iter_s", "tflops_hw", "tflops_model", "mfu_pct", "tokens_per_gpu_s"}) {
      auto it = rep.metrics.find(metric);
      if (it == rep.metrics.end()) continue;
      n += it->second.n;
      sum += it->second.n * it->second.mape_pct;
    }
    if (rows) *rows = n;
    return n == 0 ? 1e9 : sum / n;
  };
  result.initial_fit_mape_pct = score(result.parameters, fit_parity, &result.fit_rows);
  result.initial_holdout_mape_pct = score(result.parameters, 1 - fit_parity, &result.holdout_rows);
  if (result.fit_rows == 0) throw UsageError("no rows on hardware '" + hardware + "' with a measured step time or throughput to fit");

  // Coordinate descent on a log grid, narrowing each round. Correlated parameters (dispatch time
  // and its overlap, GEMM and memory efficiency) stall a single narrowing pass far from the
  // optimum, so after six rounds (span down to ~1.04) the span widens again and the next pass
  // starts from where the last one ended.
  double best = result.initial_fit_mape_pct;
  const double first_span = 4.0;  // factor around the current value explored in the first round
  double span = first_span;
  for (int round = 0; round < rounds; ++round, span = span < 1.05 ? first_span : std::sqrt(span)) {
    for (auto& p : result.parameters) {
      // A parameter at zero (a term switched off) has no scale of its own: search from a quarter
      // of its range, and keep zero itself among the candidates so that a term can stay off.
      const bool may_be_zero = p.low <= 0;
      const double center = p.value > 0 ? p.value : (p.high - p.low) / 4;
      const int steps = 8;
      for (int i = may_be_zero ? -1 : 0; i <= steps; ++i) {
        const double factor = std::pow(span, 2.0 * i / steps - 1.0);
        const double v = i < 0 ? 0.0 : std::clamp(center * factor, p.low, p.high);
        const double old = p.value;
        p.value = v;
        const double s = score(result.parameters, fit_parity, nullptr);
        if (s < best) best = s;
        else p.value = old;
      }
    }
  }
  result.fit_mape_pct = best;
  result.holdout_mape_pct = score(result.parameters, 1 - fit_parity, nullptr);
  return result;
}

}  // namespace sixfold
