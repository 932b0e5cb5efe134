#pragma once
// Scoring predictions against measured runs (data/validation/README.md format): one row per
// run, metrics iter_s, tflops_hw, tflops_model, mfu_pct, tokens_per_gpu_s, peak_mem_gib.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "common/progress.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/io/scenario.hpp"

namespace sixfold {

inline const std::vector<std::string>& validation_metrics() {
  static const std::vector<std::string> m = {"iter_s", "tflops_hw", "tflops_model", "mfu_pct", "tokens_per_gpu_s", "peak_mem_gib"};
  return m;
}

// The metrics that measure the step time (each the same step seen differently); peak_mem_gib is not one.
inline const std::vector<std::string>& throughput_metrics() {
  static const std::vector<std::string> m = {"iter_s", "tflops_hw", "tflops_model", "mfu_pct", "tokens_per_gpu_s"};
  return m;
}

// A run's error as the error bands count it (simulator/fit/error_band.hpp): the mean absolute
// error over the throughput metrics it has; nullopt when it has none.
std::optional<double> mean_abs_throughput_error_pct(const std::map<std::string, double>& error_pct);

struct RowResult {
  std::string id;
  std::string codebase;           // the row's `framework` column as written (llm-foundry, megatron-lm, ...); empty: unstated
  bool scored = false;
  std::string skip_reason;        // why not scored
  std::vector<std::string> filled;  // fields filled the way a user would ("recompute=full": the fastest layout that fits)
  Scenario scenario;
  std::map<std::string, double> measured, predicted, error_pct;  // signed % error per metric
  bool predicted_to_fit = true;
  // Fits with the allocator's cache, only by its retries, or not (memory_fit; out_of_memory is
  // !predicted_to_fit).
  MemoryFit memory_fit = MemoryFit::Fits;
  // The band `predict` prints for this scenario ("expect +-X%"), from the built-in out-of-source
  // residuals; nullopt for the null model or without enough residuals.
  std::optional<double> expected_error_pct;
};

struct MetricSummary {
  int n = 0;
  double mape_pct = 0, median_pct = 0, worst_pct = 0;
  std::string worst_id;
};

struct RankGroup {
  std::string key;
  int layouts = 0;
  double regret_pct = 0;   // measured time of the predicted best over the measured best, minus 1
  double spearman = 0;
};

struct ValidationReport {
  std::string source;
  std::vector<RowResult> rows;
  int rows_scored = 0, rows_skipped = 0;
  std::map<std::string, int> skip_reasons;
  std::map<std::string, int> filled_counts;
  std::map<std::string, MetricSummary> metrics;
  std::vector<RankGroup> groups;  // with ranking on
  // Scored rows whose predicted peak memory exceeds the GPU's: each ran, so each is a model error.
  // How many scored rows with a throughput metric and a band have their error inside the band:
  // each band is the error a new run stays within with 68% probability, so at least 68% should be.
  struct BandCoverage {
    int rows = 0, within = 0;
  };
  BandCoverage band_coverage() const {
    BandCoverage c;
    for (const RowResult& r : rows) {
      const auto err = mean_abs_throughput_error_pct(r.error_pct);
      if (!r.scored || !r.expected_error_pct || !err) continue;
      ++c.rows;
      c.within += *err <= *r.expected_error_pct;
    }
    return c;
  }
  int rows_not_fitting() const {
    int n = 0;
    for (const RowResult& r : rows) n += r.scored && !r.predicted_to_fit;
    return n;
  }
};

// Prices a row's scenario; the default is the closed-form predict(). The simulator plugs in here.
using Predictor = std::function<Prediction(const Scenario&)>;

struct ValidationOptions {
  bool rank = false;
  Predictor predictor;  // empty: closed form
  // Optional row filter (e.g. a calibration split): rows for which it returns false are left out.
  std::function<bool(size_t row_index, const std::string& id)> include;
  // Optional change to every hardware profile before pricing (calibration fits use it).
  std::function<void(HardwareProfile&)> adjust_hardware;
  // Score the null model instead: each row's step at its model FLOPs over the GPUs' dtype peak at
  // 50% (null_model_step_time); layouts and unstated fields are still filled by `predictor`.
  bool null_model = false;
  Progress* progress = nullptr;  // told of each row done (total set here); not owned, may be null
};

// The baseline every accuracy claim is compared with: model FLOPs / (GPUs x peak x 50%).
Seconds null_model_step_time(const Scenario& s);

// The source of a row, for out-of-source folds: the `source` column up to " · " (the paper or
// repository, without the table or file detail).
std::string source_of_row(const CsvTable& table, size_t row);

// Builds the scenario of a CSV row. Architecture: GPT-style (GELU, LayerNorm, learned positions,
// tied embeddings, biases, dropout) when ffn = 4*hidden and kv_heads = heads, else Llama-style
// (SwiGLU, RMSNorm, RoPE, untied). Throws Error with the reason when the row can't be priced.
using HardwareLookup = std::function<HardwareProfile(const std::string& name)>;
// The run's facts (framework, attention, overlap) come from the row's columns only; `settings`
// receives them with the unstated ones filled (run_facts.hpp).
Scenario scenario_from_row(const CsvTable& table, size_t row, const HardwareLookup& lookup, RunSettings& settings);

ValidationReport validate_runs(const CsvTable& table, const ValidationOptions& options);

// The columns this project added to its copy of the shared format (data/validation/README.md,
// "Columns this project adds"; a test holds the two lists together).
const std::vector<std::string>& project_added_columns();
// The table as the shared format carries it, what a held-out row states: the project's columns
// left out (read as absent) and a named flash kernel in `attention` read as the shared `flash`.
CsvTable shared_columns_only(CsvTable table);

// A cell's number; nothing when it is empty, "unknown" or not a number.
std::optional<double> cell_number(const CsvTable& table, size_t row, const std::string& column);

// Megatron's layer split of a virtual pipeline whose stages do not divide the layers: the
// embedding and the loss each in a layer's place where that divides, else its front-loaded
// custom layout (--pipeline-model-parallel-layout). Other frameworks and even splits: unchanged.
void split_pipeline_like_megatron(Layout& layout, const ModelSpec& model, Framework framework);

}  // namespace sixfold
