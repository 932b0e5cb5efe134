#include "simulator/fit/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/error.hpp"
#include "simulator/fit/validation.hpp"

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
  if (path == "kernel_slowdown") return &hw.kernel_slowdown;
  if (path == "overlap_slowdown") return &hw.overlap_slowdown;
  if (path == "step_overhead") return &hw.step_overhead;
  if (path == "inter_node.peak_busbw") return &hw.inter_node.peak_busbw;
  if (path == "inter_node.latency") return &hw.inter_node.latency;
  throw Error("cannot fit profile field '" + path + "'");
}

// Ranges are physical: efficiencies within (0, 1], the dispatch floor within 1-200 us, the
// per-step ring latency up to the largest NVLink ring/Simple hwLat of NCCL's tuning model
// (5.7 us in NCCL 2.7-2.8, 3.4 us since; src/graph/tuning.cc), the dispatch overlap a share.
std::vector<FitParameter> parameter_ranges(const HardwareProfile& base) {
  return {{"gemm.max_efficiency", base.gemm.max_efficiency, 0.3, 1.0},
          {"gemm.half_dim", base.gemm.half_dim, 8, 2048},
          {"attention_efficiency", base.attention_efficiency, 0.1, 1.0},
          {"memory_efficiency", base.memory_efficiency, 0.2, 1.0},
          {"kernel_overhead", base.kernel_overhead, 1e-6, 200e-6},
          {"intra_node.peak_busbw", base.intra_node.peak_busbw, 20e9, base.intra_node_bandwidth * 1.1},
          {"intra_node.latency", base.intra_node.latency, 2e-6, 200e-6},
          {"inter_node.peak_busbw", base.inter_node.peak_busbw, 1e9, base.network_bandwidth * 1.1},
          {"inter_node.latency", base.inter_node.latency, 2e-6, 500e-6},
          {"intra_node.step_latency", base.intra_node.step_latency, 0, 5.7e-6},
          {"dispatch_overlap", base.dispatch_overlap, 0, 1},
          {"kernel_slowdown", base.kernel_slowdown, 1.0, 1.6},
          {"overlap_slowdown", base.overlap_slowdown, 0, 0.6},
          {"step_overhead", base.step_overhead, 0, 1.0}};
}

// Coordinate descent on a log grid, narrowing each round. Correlated parameters (dispatch time
// and its overlap, GEMM and memory efficiency) stall a single narrowing pass far from the
// optimum, so after six rounds (span down to ~1.04) the span widens again and the next pass
// starts from where the last one ended.
void descend(std::vector<FitParameter>& params, int rounds, double& best,
             const std::function<double(const std::vector<FitParameter>&)>& score) {
  const double first_span = 4.0;  // factor around the current value explored in the first round
  double span = first_span;
  for (int round = 0; round < rounds; ++round, span = span < 1.05 ? first_span : std::sqrt(span)) {
    for (auto& p : params) {
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
        const double s = score(params);
        if (s < best) best = s;
        else p.value = old;
      }
    }
  }
}

std::map<std::string, MetricSummary> summarise(const std::vector<CvRow>& rows, bool null_model) {
  std::map<std::string, std::vector<double>> errs;
  std::map<std::string, MetricSummary> out;
  for (const CvRow& r : rows)
    for (const auto& [metric, e] : null_model ? r.null_error_pct : r.error_pct) {
      errs[metric].push_back(std::fabs(e));
      MetricSummary& ms = out[metric];
      if (std::fabs(e) >= ms.worst_pct) ms.worst_pct = std::fabs(e), ms.worst_id = r.id;
    }
  for (auto& [metric, v] : errs) {
    MetricSummary& ms = out[metric];
    ms.n = int(v.size());
    double sum = 0;
    for (double e : v) sum += e;
    ms.mape_pct = sum / double(v.size());
    std::sort(v.begin(), v.end());
    ms.median_pct = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& default_cv_parameters() {
  // Host dispatch per kernel and how much of it hides behind the GPU, the kernels' sustained rate
  // against their microbenchmark, and the host time of each optimizer step (syncs, launches,
  // data loading): how a framework runs its work, the same on every GPU; everything else is
  // priced from kernel measurements.
  static const std::vector<std::string> names = {"kernel_overhead", "dispatch_overlap", "kernel_slowdown",
                                                 "step_overhead"};
  return names;
}

CrossValidation cross_validate_by_source(const std::vector<CsvTable>& tables, const std::vector<std::string>& names,
                                         int rounds) {
  for (const auto& name : names)
    if (std::find(fittable_parameters().begin(), fittable_parameters().end(), name) == fittable_parameters().end())
      throw UsageError("cannot fit '" + name + "' (fittable: kernel_overhead, dispatch_overlap, ...; see --parameters)");
  // Sources in order of first appearance.
  std::vector<std::string> sources;
  std::vector<std::vector<std::string>> row_source(tables.size());
  for (size_t t = 0; t < tables.size(); ++t)
    for (size_t r = 0; r < tables[t].rows.size(); ++r) {
      row_source[t].push_back(source_of_row(tables[t], r));
      if (std::find(sources.begin(), sources.end(), row_source[t].back()) == sources.end())
        sources.push_back(row_source[t].back());
    }
  if (sources.size() < 2) throw UsageError("--cv source needs rows from at least two sources");
  // Starting values: the first profile's (the terms are set alike in every profile).
  const HardwareProfile start = load_hardware("h100-sxm-80g");
  std::vector<FitParameter> initial;
  for (const FitParameter& p : parameter_ranges(start))
    if (std::find(names.begin(), names.end(), p.path) != names.end()) initial.push_back(p);

  // Scores the rows whose source is (or is not) `source` with the given terms.
  auto run = [&](const std::vector<FitParameter>& params, const std::string& source, bool inside, bool null_model) {
    std::vector<ValidationReport> reps;
    for (size_t t = 0; t < tables.size(); ++t) {
      ValidationOptions opt;
      opt.include = [&](size_t index, const std::string&) { return (row_source[t][index] == source) == inside; };
      opt.adjust_hardware = [&](HardwareProfile& hw) { apply_fit(hw, params); };
      opt.null_model = null_model;
      reps.push_back(validate_runs(tables[t], opt));
    }
    return reps;
  };
  auto pooled_mape = [&](const std::vector<ValidationReport>& reps) {
    int n = 0;
    double sum = 0;
    for (const auto& rep : reps)
      for (const std::string& metric : throughput_metrics())
        if (auto it = rep.metrics.find(metric); it != rep.metrics.end()) {
          n += it->second.n;
          sum += it->second.n * it->second.mape_pct;
        }
    return n == 0 ? 1e9 : sum / n;
  };

  CrossValidation cv;
  for (const std::string& source : sources) {
    CvFold fold;
    fold.source = source;
    fold.parameters = initial;
    if (!fold.parameters.empty()) {
      double best = pooled_mape(run(fold.parameters, source, false, false));
      descend(fold.parameters, rounds, best,
              [&](const std::vector<FitParameter>& p) { return pooled_mape(run(p, source, false, false)); });
    }
    const auto reps = run(fold.parameters, source, true, false);
    const auto nulls = run(fold.parameters, source, true, true);
    std::vector<CvRow> rows;
    for (size_t t = 0; t < reps.size(); ++t)
      for (size_t i = 0; i < reps[t].rows.size(); ++i) {
        const RowResult& rr = reps[t].rows[i];
        if (!rr.scored) continue;
        CvRow row;
        row.id = rr.id;
        row.source = source;
        row.gpu = rr.scenario.hardware_name;
        row.gpus = rr.scenario.gpus;
        row.framework = to_string(rr.scenario.work.framework);
        row.codebase = rr.codebase;
        for (const std::string& metric : throughput_metrics())
          if (auto it = rr.error_pct.find(metric); it != rr.error_pct.end()) {
            row.error_pct[metric] = it->second;
            row.null_error_pct[metric] = nulls[t].rows[i].error_pct.at(metric);
          }
        if (auto it = rr.error_pct.find("peak_mem_gib"); it != rr.error_pct.end()) row.error_pct[it->first] = it->second;
        if (!row.error_pct.empty()) rows.push_back(row);
      }
    fold.rows = int(rows.size());
    fold.metrics = summarise(rows, false);
    fold.null_metrics = summarise(rows, true);
    cv.rows.insert(cv.rows.end(), rows.begin(), rows.end());
    cv.folds.push_back(std::move(fold));
  }
  cv.metrics = summarise(cv.rows, false);
  cv.null_metrics = summarise(cv.rows, true);
  return cv;
}

void apply_fit(HardwareProfile& hw, const std::vector<FitParameter>& parameters) {
  for (const auto& p : parameters) *field(hw, p.path) = p.value;
}

const std::vector<std::string>& fittable_parameters() {
  static const std::vector<std::string> names = {"gemm.max_efficiency", "gemm.half_dim",         "attention_efficiency",
                                                 "memory_efficiency",   "kernel_overhead",       "intra_node.peak_busbw",
                                                 "intra_node.latency",  "inter_node.peak_busbw", "inter_node.latency",
                                                 "intra_node.step_latency", "dispatch_overlap", "kernel_slowdown",
                                                 "overlap_slowdown", "step_overhead"};
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
  result.parameters = parameter_ranges(base);
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
    for (const std::string& metric : throughput_metrics()) {
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

  double best = result.initial_fit_mape_pct;
  descend(result.parameters, rounds, best, [&](const std::vector<FitParameter>& p) { return score(p, fit_parity, nullptr); });
  result.fit_mape_pct = best;
  result.holdout_mape_pct = score(result.parameters, 1 - fit_parity, nullptr);
  return result;
}

}  // namespace sixfold
