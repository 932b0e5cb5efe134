#include "simulator/profile_fit.hpp"

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
  if (path == "inter_node.peak_busbw") return &hw.inter_node.peak_busbw;
  throw Error("cannot fit profile field '" + path + "'");
}

}  // namespace

void apply_fit(HardwareProfile& hw, const std::vector<FitParameter>& parameters) {
  for (const auto& p : parameters) *field(hw, p.path) = p.value;
}

FitResult fit_profile_to_runs(const CsvTable& runs, const std::string& hardware, const std::string& split, int rounds) {
  if (split != "even" && split != "odd") throw UsageError("unknown split '" + split + "' (allowed: even, odd)");
  const int fit_parity = split == "even" ? 0 : 1;
  const HardwareProfile base = load_hardware(hardware);
  FitResult result;
  result.hardware = hardware;
  // Ranges are physical: efficiencies within (0, 1], the dispatch floor within 1-200 us.
  result.parameters = {{"gemm.max_efficiency", base.gemm.max_efficiency, 0.3, 1.0},
                       {"gemm.half_dim", base.gemm.half_dim, 8, 2048},
                       {"attention_efficiency", base.attention_efficiency, 0.1, 1.0},
                       {"memory_efficiency", base.memory_efficiency, 0.2, 1.0},
                       {"kernel_overhead", base.kernel_overhead, 1e-6, 200e-6},
                       {"intra_node.peak_busbw", base.intra_node.peak_busbw, 20e9, base.intra_node_bandwidth * 1.1},
                       {"intra_node.latency", base.intra_node.latency, 2e-6, 200e-6}};

  auto score = [&](const std::vector<FitParameter>& params, int parity, int* rows) {
    ValidationOptions opt;
    opt.include = [&](size_t index, const std::string&) {
      return int(index % 2) == parity && runs.field(index, "gpu") == hardware;
    };
    opt.adjust_hardware = [&](HardwareProfile& hw) { apply_fit(hw, params); };
    const ValidationReport rep = validate_runs(runs, opt);
    auto it = rep.metrics.find("iter_s");
    if (rows) *rows = it == rep.metrics.end() ? 0 : it->second.n;
    return it == rep.metrics.end() ? 1e9 : it->second.mape_pct;
  };
  result.initial_fit_mape_pct = score(result.parameters, fit_parity, &result.fit_rows);
  result.initial_holdout_mape_pct = score(result.parameters, 1 - fit_parity, &result.holdout_rows);
  if (result.fit_rows == 0) throw UsageError("no rows on hardware '" + hardware + "' with a measured iter_s to fit");

  // Coordinate descent on a log grid, narrowing each round.
  double best = result.initial_fit_mape_pct;
  double span = 4.0;  // factor around the current value explored in the first round
  for (int round = 0; round < rounds; ++round, span = std::sqrt(span)) {
    for (auto& p : result.parameters) {
      const double center = p.value;
      const int steps = 8;
      for (int i = 0; i <= steps; ++i) {
        const double factor = std::pow(span, 2.0 * i / steps - 1.0);
        const double v = std::clamp(center * factor, p.low, p.high);
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
