#pragma once
// How far to trust a prediction: the out-of-source errors of the measured runs most like it.
// configs/error_bands/out_of_source.yaml holds, per measured run, the absolute error of the
// shipped cost model on it when nothing was fitted on its source (written by `sixfold calibrate
// --from-runs ... --cv source --parameters none --bands-out FILE`). A prediction's band is the error
// that a new run like them stays within with 68% probability (about one standard deviation): the
// ceil(0.68 (n + 1))-th smallest of the n similar runs' errors (the same framework and GPU and a GPU
// count within 8x, widened step by step until at least kMinRuns are in).
#include <optional>
#include <string>
#include <vector>

#include "models/layout.hpp"

namespace sixfold {

struct ResidualRun {
  std::string id, framework, gpu;
  std::string codebase;  // the run's `framework` column (llm-foundry, megatron-deepspeed, ...); optional
  int gpus = 0;
  double abs_error_pct = 0;  // mean over the run's throughput metrics (each is the step time seen differently)
};

struct ErrorBand {
  double pct = 0;       // expect +- this many percent
  int runs = 0;         // similar measured runs it rests on
  std::string basis;    // which similarity it took ("torchtitan on h100, 8x GPU count")
};

inline constexpr int kMinRuns = 5;
inline constexpr double kBandCoverage = 0.68;  // the share of new runs a band should hold

// Parses a bands file (Error naming file, line and field on bad content).
std::vector<ResidualRun> parse_residual_runs(const std::string& yaml_text, const std::string& source);
// The built-in residuals (configs/error_bands/out_of_source.yaml).
const std::vector<ResidualRun>& builtin_residual_runs();

// nullopt when there are fewer than kMinRuns residuals at all. `codebase` (a measured run's
// `framework` column, in `validate`): where the residuals name codebases and none is this one (an
// llm-foundry row priced with torchtitan's traits), the levels keyed on the framework are skipped:
// another codebase's errors do not say how far to trust this one's.
std::optional<ErrorBand> expected_error(const std::vector<ResidualRun>& runs, Framework framework,
                                        const std::string& hardware, int gpus, const std::string& codebase = "");

// "expect +-6% (23 similar measured runs: torchtitan on h100, 8x GPU count)"
std::string describe(const ErrorBand& band);

}  // namespace sixfold
