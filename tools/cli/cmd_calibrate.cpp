// sixfold calibrate: fit a hardware profile. --from-runs fits it to measured training runs (a
// validation CSV) on a split and reports the error on the rows left out. Microbenchmark
// calibration on a GPU is done by the CUDA backend (see README, "calibrate on a GPU").
#include <cstdio>
#include <ctime>
#include <iostream>

#include "common/error.hpp"
#include "simulator/profile_fit.hpp"
#include "tools/cli/command.hpp"

namespace sixfold::cli {
namespace {

struct CalibrateCommand {
  std::string runs, hardware, split = "even", backend;
  std::vector<std::string> parameters;
  int rounds = 3;

  int run() const {
    if (runs.empty()) {
      throw UsageError(
          "give --from-runs FILE.csv --hardware NAME to fit a profile to measured runs; GPU microbenchmark "
          "calibration needs `--backend cuda` on a machine with a GPU and the CUDA build (tools/gpu-check.sh)");
    }
    if (hardware.empty()) throw UsageError("--hardware is required with --from-runs");
    const CsvTable table = read_csv(runs);
    const FitResult fit = fit_profile_to_runs(table, hardware, split, rounds, parameters);
    char date[32];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::printf("# fit of %s to iter_s of %s, %s rows (%d), %d rounds, %s\n", hardware.c_str(), runs.c_str(), split.c_str(),
                fit.fit_rows, rounds, date);
    std::printf("# MAPE on fitted rows: %.2f%% -> %.2f%%; on %d held-out rows: %.2f%% -> %.2f%%\n", fit.initial_fit_mape_pct,
                fit.fit_mape_pct, fit.holdout_rows, fit.initial_holdout_mape_pct, fit.holdout_mape_pct);
    for (const auto& p : fit.parameters) std::printf("%-24s %.6g\n", p.path.c_str(), p.value);
    return 0;
  }
};

Registrar reg("calibrate", "fit a hardware profile to measured runs (or, with a GPU, to microbenchmarks)", [](CLI::App& app) {
  auto cmd = std::make_shared<CalibrateCommand>();
  app.add_option("--from-runs", cmd->runs, "validation CSV of measured runs to fit iter_s to");
  app.add_option("--hardware", cmd->hardware, "the profile to fit (rows on other GPUs are ignored)");
  app.add_option("--split", cmd->split, "even: fit even rows, report odd ones (default); odd: the reverse");
  app.add_option("--rounds", cmd->rounds, "coordinate-descent rounds (default 3)");
  app.add_option("--parameters", cmd->parameters, "profile fields to fit, comma-separated (default: all fittable)")->delimiter(',');
  app.add_option("--backend", cmd->backend, "cuda: microbenchmarks on this machine's GPU");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
