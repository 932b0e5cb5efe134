#pragma once
// Fitting a hardware profile's efficiency parameters to measured runs (step time and throughput of a validation
// CSV): GEMM efficiency curve, attention and memory-bandwidth efficiency, the per-op dispatch
// floor and the collective curves. Never per-row constants: one profile for all rows, fitted on a
// split, and the error reported on the rows left out.
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/fit/validation.hpp"
#include <map>

namespace sixfold {

struct FitParameter {
  std::string path;  // YAML path in the profile, e.g. "gemm.max_efficiency"
  double value = 0, low = 0, high = 0;
};

struct FitResult {
  std::string hardware;
  std::vector<FitParameter> parameters;  // fitted values
  double fit_mape_pct = 0;               // on the rows fitted
  double holdout_mape_pct = 0;           // on the rows left out
  int fit_rows = 0, holdout_rows = 0;
  double initial_fit_mape_pct = 0, initial_holdout_mape_pct = 0;
};

// Rows whose index is even are fitted, odd ones held out (split "even"), or the reverse ("odd").
// Only rows on `hardware` are used.
// `only`: names of the parameters to fit (empty: all of fittable_parameters()).
FitResult fit_profile_to_runs(const CsvTable& runs, const std::string& hardware, const std::string& split, int rounds = 3,
                              const std::vector<std::string>& only = {});
const std::vector<std::string>& fittable_parameters();

void apply_fit(HardwareProfile& hw, const std::vector<FitParameter>& parameters);

// Out-of-source cross-validation: for each source (validation.hpp source_of_row) in turn, fit
// `parameters` (set in every hardware profile alike: framework terms, not one GPU's kernels) on
// the rows of every other source, and score the rows of the one left out. Empty `parameters`:
// nothing is fitted and every fold is scored with the profiles as they are (fit-free).
struct CvRow {
  std::string id, source, framework, gpu;
  std::string codebase;  // the row's `framework` column (RowResult::codebase)
  int gpus = 0;
  // Signed, per metric, out-of-fold. peak_mem_gib is scored but fits nothing and has no null model
  // (the null model prices time only), so null_error_pct holds the throughput metrics alone.
  std::map<std::string, double> error_pct, null_error_pct;
  bool has_throughput() const { return !null_error_pct.empty(); }
};
struct CvFold {
  std::string source;
  int rows = 0;
  std::vector<FitParameter> parameters;  // fitted without this source
  std::map<std::string, MetricSummary> metrics, null_metrics;
};
struct CrossValidation {
  std::vector<CvFold> folds;
  std::map<std::string, MetricSummary> metrics, null_metrics;  // pooled out-of-fold
  std::vector<CvRow> rows;
};
CrossValidation cross_validate_by_source(const std::vector<CsvTable>& tables, const std::vector<std::string>& parameters,
                                         int rounds = 3);
// The framework terms fitted by default under --cv (fittable_parameters() names).
const std::vector<std::string>& default_cv_parameters();

}  // namespace sixfold
