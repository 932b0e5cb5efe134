#pragma once
// Fitting a hardware profile's efficiency parameters to measured runs (step time and throughput of a validation
// CSV): GEMM efficiency curve, attention and memory-bandwidth efficiency, the per-op dispatch
// floor and the collective curves. Never per-row constants: one profile for all rows, fitted on a
// split, and the error reported on the rows left out.
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "simulator/hardware_profile.hpp"

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

}  // namespace sixfold
