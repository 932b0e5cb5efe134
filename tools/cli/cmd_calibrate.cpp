// sixfold calibrate: fit a hardware profile. --from-runs fits it to measured training runs (a
// validation CSV) on a split and reports the error on the rows left out. --backend cpu measures
// the executor's CPU ranks (executor/cpu_calibration.hpp) into a profile YAML (-o FILE). Microbenchmark
// calibration on a GPU is done by the CUDA backend (see README, "calibrate on a GPU").
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "common/error.hpp"
#include "executor/cpu_calibration.hpp"
#include "simulator/profile_fit.hpp"
#include "tools/cli/command.hpp"

namespace sixfold::cli {
namespace {

struct CalibrateCommand {
  std::string runs, hardware, split = "even", backend, output, name = "cpu-dev";
  std::vector<std::string> parameters;
  int rounds = 3;

  int run_cpu() const {
    auto world = make_world_communicator(300);
    const CpuCalibration c = calibrate_cpu(*world);
    if (world->rank() != 0) return 0;
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    char date[32];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::fprintf(stderr, "# CPU calibration on %s, %d rank(s)\n", host, c.ranks);
    std::fprintf(stderr, "%6s %6s %6s %12s %10s\n", "m", "n", "k", "time us", "GFLOP/s");
    for (const auto& g : c.gemms)
      std::fprintf(stderr, "%6ld %6ld %6ld %12.3f %10.2f\n", g.m, g.n, g.k, g.time * 1e6, g.rate / 1e9);
    std::fprintf(stderr, "peak fp32 %.2f GFLOP/s; gemm fit max_efficiency %.3f half_dim %.1f (rms log error %.3f)\n",
                 c.peak_fp32 / 1e9, c.gemm.max_efficiency, c.gemm.half_dim, c.gemm_rms_log_error);
    std::fprintf(stderr, "memory %.2f GB/s best, efficiency %.3f, overhead %.3f us; attention efficiency %.4f\n",
                 c.memory_bandwidth / 1e9, c.memory_efficiency, c.kernel_overhead * 1e6, c.attention_efficiency);
    for (const auto& a : c.all_reduces)
      std::fprintf(stderr, "all_reduce %10.0f B %10.2f us\n", a.bytes, a.time * 1e6);
    if (!c.all_reduces.empty())
      std::fprintf(stderr, "mpi: busbw %.2f GB/s, half size %.0f B, latency %.2f us\n", c.mpi.peak_busbw / 1e9,
                   c.mpi.half_size, c.mpi.latency * 1e6);
    const std::string yaml = cpu_profile_yaml(c, name, host, date);
    parse_hardware(yaml, output.empty() ? "<calibration>" : output);  // what we write must load
    if (output.empty()) {
      std::cout << yaml;
    } else {
      std::ofstream out(output);
      if (!out) throw UsageError("cannot write " + output);
      out << yaml;
      std::fprintf(stderr, "wrote %s\n", output.c_str());
    }
    return 0;
  }

  int run() const {
    if (backend == "cpu") return run_cpu();
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
  app.add_option("--backend", cmd->backend,
                 "cpu: microbenchmark the executor's CPU ranks (run under mpirun -np 2 to measure MPI too); "
                 "cuda: microbenchmarks on this machine's GPU");
  app.add_option("-o,--output", cmd->output, "with --backend cpu: write the profile YAML here (default stdout)");
  app.add_option("--name", cmd->name, "with --backend cpu: the profile's name (default cpu-dev)");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
