// sixfold calibrate: fit a hardware profile. --from-runs fits it to measured training runs (a
// validation CSV) on a split and reports the error on the rows left out. --backend cpu measures
// the executor's CPU ranks (executor/calibrate/cpu_calibration.hpp) into a profile YAML (-o FILE).
// --backend cuda microbenchmarks this machine's GPUs (executor/calibrate/cuda/cuda_calibration.hpp, CUDA build
// only) into a profile YAML plus FILE.measurements.json. --from-kineto fits a base profile to the
// kernels of a PyTorch profiler trace (simulator/io/kineto_trace.hpp).
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <cmath>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "tools/cli/flags.hpp"
#include "executor/calibrate/cpu_calibration.hpp"
#ifdef SIXFOLD_HAVE_CUDA
#include "executor/calibrate/cuda/cuda_calibration.hpp"
#include "kernels/cuda_kernels.hpp"
#endif
#include "simulator/fit/error_band.hpp"
#include "simulator/io/kineto_trace.hpp"
#include "simulator/fit/profile_fit.hpp"
#include "simulator/io/profile_yaml.hpp"
#include "tools/cli/command.hpp"

#include <nlohmann/json.hpp>

namespace sixfold::cli {
namespace {

std::string today() {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

// Writes a profile YAML to `output` (stdout when empty) after checking that it loads.
void write_profile(const std::string& yaml, const std::string& output) {
  parse_hardware(yaml, output.empty() ? "<calibration>" : output);  // what we write must load
  if (output.empty()) {
    std::cout << yaml;
    return;
  }
  write_text_file(output, yaml);
  std::fprintf(stderr, "wrote %s\n", output.c_str());
}

struct CalibrateCommand {
  std::vector<std::string> runs;
  std::string hardware, split = "even", backend, output, name, kineto, cv, bands_out;
  bool json = false;
  std::vector<std::string> parameters;
  std::optional<int> rounds;

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
    std::fprintf(stderr, "runner step of a 2-layer hidden-128 model, per op class (measured; predicted by the kernel "
                         "sweeps; residual):\n");
    for (const auto& r : c.runner_classes) {
      if (r.predicted <= 0) {  // communication and the optimizer are step terms, not compute classes
        std::fprintf(stderr, "  %-14s %10.3f ms   (priced as a step term, not per class)\n", r.op_class.c_str(), r.measured * 1e3);
        continue;
      }
      std::fprintf(stderr, "  %-14s %10.3f ms %10.3f ms %+8.1f%%\n", r.op_class.c_str(), r.measured * 1e3, r.predicted * 1e3,
                   100.0 * (r.predicted - r.measured) / r.measured);
    }
    std::fprintf(stderr, "attention efficiency x %.3f, memory efficiency x %.3f to price that step's attention and "
                         "memory-bound ops as measured (GEMMs keep the sweep's fit)\n",
                 c.runner_attention_ratio, c.runner_memory_ratio);
    for (const auto& a : c.all_reduces)
      std::fprintf(stderr, "all_reduce %10.0f B %10.2f us\n", a.bytes, a.time * 1e6);
    if (!c.all_reduces.empty())
      std::fprintf(stderr, "mpi: busbw %.2f GB/s, half size %.0f B, latency %.2f us\n", c.mpi.peak_busbw / 1e9,
                   c.mpi.half_size, c.mpi.latency * 1e6);
    write_profile(cpu_profile_yaml(c, name.empty() ? "cpu-dev" : name, host, date), output);
    return 0;
  }

  int run_kineto() const {
    if (hardware.empty())
      throw UsageError("--from-kineto needs --hardware BASE: the profile whose peaks the trace's rates are relative to");
    const HardwareProfile base = load_hardware(hardware);
    const KinetoTrace trace = read_kineto_trace(kineto);
    const std::string date = today();
    KinetoCalibration cal = calibrate_from_kineto(trace, base, date);
    cal.profile.name = name.empty() ? base.name + "-kineto" : name;
    cal.profile.description = base.description + " (fitted to Kineto trace " + kineto + ", " + date + ")";
    std::fprintf(stderr, "# Kineto trace %s: %d kernels, %zu GEMM calls, %zu memory-bound calls, %zu NCCL kernels; "
                 "%d kernels without operator, %d without shapes or sizes\n", kineto.c_str(), trace.kernels,
                 trace.gemms.size(), trace.memory_ops.size(), trace.collectives.size(), trace.unattributed, trace.skipped);
    if (cal.gemm)
      std::fprintf(stderr, "gemm: max_efficiency %.4f half_dim %.1f tile %d (rms log error %.3f over %d)\n",
                   cal.profile.gemm.max_efficiency, cal.profile.gemm.half_dim, cal.profile.gemm.tile,
                   cal.gemm->rms_log_error, cal.gemm->points);
    if (cal.memory_efficiency) std::fprintf(stderr, "memory_efficiency %.4f over %d calls\n", *cal.memory_efficiency, cal.memory_points);
    for (const auto& [level, fit] : {std::pair{"intra_node", &cal.intra_node}, std::pair{"inter_node", &cal.inter_node}})
      if (*fit)
        std::fprintf(stderr, "%s: busbw %.2f GB/s, half size %.0f B, latency %.2f us (rms log error %.3f over %d)\n", level,
                     (*fit)->curve.peak_busbw / 1e9, (*fit)->curve.half_size, (*fit)->curve.latency * 1e6,
                     (*fit)->rms_log_error, (*fit)->points);
    for (const auto& note : cal.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    write_profile(hardware_profile_yaml(cal.profile, "Fitted by `sixfold calibrate --from-kineto " + kineto + " --hardware " +
                                                         hardware + "` on " + date + ".\nFormat: docs/hardware-profiles.md."),
                  output);
    return 0;
  }

  int run_cuda() const {
#ifdef SIXFOLD_HAVE_CUDA
    if (output.empty()) throw UsageError("--backend cuda needs -o FILE.yaml (the raw measurements go to FILE.measurements.json)");
    if (cuda::device_count() == 0) throw UsageError("--backend cuda: no CUDA device on this machine");
    std::string base_name = hardware;
    const std::string device = cuda::device_name(0);
    if (base_name.empty()) {
      // The built-in profile of the device, for the datasheet peaks the efficiencies are relative to.
      for (const auto& [key, profile] : {std::pair{"H200", "h200-sxm-141g"}, {"H100", "h100-sxm-80g"}, {"H800", "h800-sxm-80g"},
                                         {"A100", "a100-sxm-80g"}, {"B200", "b200"}, {"4090", "rtx-4090"}})
        if (device.find(key) != std::string::npos) {
          base_name = profile;
          break;
        }
      if (base_name.empty())
        throw UsageError("--backend cuda: no built-in profile for '" + device + "'; give --hardware BASE for its datasheet peaks");
    }
    const HardwareProfile base = load_hardware(base_name);
    std::fprintf(stderr, "# CUDA calibration on %s against %s\n", device.c_str(), base.name.c_str());
    const CudaCalibration c = calibrate_cuda(base);
    const std::string date = today();
    std::fprintf(stderr, "%-5s %6s %6s %6s %10s %9s\n", "dtype", "m", "n", "k", "time us", "TFLOP/s");
    for (const auto& g : c.gemms)
      std::fprintf(stderr, "%-5s %6ld %6ld %6ld %10.2f %9.1f\n", to_string(g.dtype).c_str(), g.m, g.n, g.k, g.time * 1e6, g.rate / 1e12);
    if (c.gemm)
      std::fprintf(stderr, "gemm fit: max_efficiency %.4f half_dim %.1f tile %d (rms log error %.3f)\n", c.gemm->curve.max_efficiency,
                   c.gemm->curve.half_dim, c.gemm->curve.tile, c.gemm->rms_log_error);
    std::fprintf(stderr, "memory_efficiency %.4f, attention_efficiency %.4f\n", c.memory_efficiency, c.attention_efficiency);
    if (c.nccl)
      std::fprintf(stderr, "nccl (%d GPUs): busbw %.2f GB/s, half size %.0f B, latency %.2f us\n", c.devices,
                   c.nccl->curve.peak_busbw / 1e9, c.nccl->curve.half_size, c.nccl->curve.latency * 1e6);
    for (const auto& note : c.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    HardwareProfile hw = cuda_calibrated_profile(c, base, date);
    hw.name = name.empty() ? base.name + "-calibrated" : name;
    std::string json_path = output;
    if (json_path.size() > 5 && json_path.substr(json_path.size() - 5) == ".yaml") json_path.resize(json_path.size() - 5);
    json_path += ".measurements.json";
    write_profile(hardware_profile_yaml(hw, "Measured by `sixfold calibrate --backend cuda` on " + c.device + " (" + c.driver + ", " +
                                                c.runtime + "), " + date + ".\nRaw measurements: " + json_path +
                                                ". Format: docs/hardware-profiles.md."),
                  output);
    write_text_file(json_path, cuda_calibration_json(c, date));
    std::fprintf(stderr, "wrote %s\n", json_path.c_str());
    return 0;
#else
    throw UsageError("--backend cuda needs the CUDA build of sixfold (cmake -DSIXFOLD_WITH_CUDA=ON with a CUDA toolkit); "
                     "this binary was built without CUDA");
#endif
  }

  // The out-of-fold residual of every scored run, for predict's and plan's error band
  // (simulator/fit/error_band.hpp); checked by parsing it back before it is written.
  void write_bands(const CrossValidation& cv_result, const std::vector<std::string>& fitted) const {
    std::string files;
    for (const auto& f : runs) files += " " + f;
    std::string yaml = "# Out-of-source residuals of the cost model, one per measured run: the mean absolute error of its\n"
                       "# throughput metrics when " + std::string(fitted.empty() ? "nothing was fitted" : "the framework terms were fitted") +
                       " on its own source.\n# Written by `sixfold calibrate --from-runs" + files + " --cv source" +
                       (fitted.empty() ? " --parameters none" : "") + " --bands-out FILE` on " + today() +
                       ".\n# Read by predict and plan for \"expect +-X%\" (simulator/fit/error_band.hpp).\nruns:\n";
    size_t written = 0;
    for (const CvRow& r : cv_result.rows) {
      const auto error = mean_abs_throughput_error_pct(r.error_pct);
      if (!error) continue;  // a memory-only row says nothing about the step time
      char error_text[32];
      std::snprintf(error_text, sizeof error_text, "%.2f", *error);
      // Quoted where a CSV cell lands (id, codebase); parsed back below before anything is written.
      yaml += "  - {id: \"" + r.id + "\", framework: " + r.framework + ", codebase: \"" + r.codebase + "\", gpu: " + r.gpu +
              ", gpus: " + std::to_string(r.gpus) + ", abs_error_pct: " + error_text + "}\n";
      ++written;
    }
    parse_residual_runs(yaml, bands_out);
    write_text_file(bands_out, yaml);
    std::fprintf(stderr, "wrote %s (%zu runs)\n", bands_out.c_str(), written);
  }

  // Out-of-source cross-validation (profile_fit.hpp): per fold and pooled out-of-fold MAPE per
  // metric, with the null model on the same rows.
  int run_cv() const {
    if (cv != "source") throw UsageError("--cv '" + cv + "': allowed: source");
    if (!hardware.empty()) throw UsageError("--cv source fits framework terms for every GPU alike: drop --hardware");
    std::vector<CsvTable> tables;
    for (const auto& f : runs) tables.push_back(read_csv(f));
    const std::vector<std::string>& names = parameters.empty() ? default_cv_parameters() : parameters;
    const std::vector<std::string> fitted = names.size() == 1 && names[0] == "none" ? std::vector<std::string>{} : names;
    const CrossValidation result = cross_validate_by_source(tables, fitted, rounds.value_or(3));
    if (!bands_out.empty()) write_bands(result, fitted);
    auto metrics_json = [](const std::map<std::string, MetricSummary>& m) {
      nlohmann::ordered_json j = nlohmann::ordered_json::object();
      for (const auto& [metric, s] : m)
        j[metric] = {{"n", s.n}, {"mape_pct", s.mape_pct}, {"median_pct", s.median_pct}, {"worst_pct", s.worst_pct},
                     {"worst_id", s.worst_id}};
      return j;
    };
    if (json) {
      nlohmann::ordered_json j;
      j["cv"] = "source";
      j["fitted"] = fitted;
      j["folds"] = nlohmann::ordered_json::array();
      for (const CvFold& f : result.folds) {
        nlohmann::ordered_json fj = {{"source", f.source}, {"rows", f.rows}, {"metrics", metrics_json(f.metrics)},
                                     {"null_model", metrics_json(f.null_metrics)}};
        for (const auto& p : f.parameters) fj["parameters"][p.path] = p.value;
        j["folds"].push_back(fj);
      }
      j["metrics"] = metrics_json(result.metrics);
      j["null_model"] = metrics_json(result.null_metrics);
      j["rows"] = nlohmann::ordered_json::array();
      for (const CvRow& r : result.rows)
        j["rows"].push_back({{"id", r.id}, {"source", r.source}, {"framework", r.framework}, {"gpu", r.gpu}, {"gpus", r.gpus},
                             {"error_pct", r.error_pct}, {"null_error_pct", r.null_error_pct}});
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::printf("# out-of-source cross-validation of %zu file(s): fit %s on every source but one, score the one left out\n",
                runs.size(), fitted.empty() ? "nothing (fit-free)" : "the framework terms");
    std::printf("%-70s %5s  %s\n", "source left out", "rows", "MAPE per metric (null model)");
    for (const CvFold& f : result.folds) {
      std::string line;
      for (const auto& [metric, s] : f.metrics) {
        char buf[96];
        auto null = f.null_metrics.find(metric);
        if (null == f.null_metrics.end()) std::snprintf(buf, sizeof buf, " %s %.1f%%", metric.c_str(), s.mape_pct);
        else std::snprintf(buf, sizeof buf, " %s %.1f%% (%.1f%%)", metric.c_str(), s.mape_pct, null->second.mape_pct);
        line += buf;
      }
      std::printf("%-70.70s %5d %s\n", f.source.c_str(), f.rows, line.c_str());
    }
    std::printf("# pooled out-of-fold\n%-18s %5s %10s %10s\n", "metric", "n", "MAPE %", "null MAPE %");
    for (const auto& [metric, s] : result.metrics) {
      auto null = result.null_metrics.find(metric);
      if (null == result.null_metrics.end()) std::printf("%-18s %5d %10.2f %10s\n", metric.c_str(), s.n, s.mape_pct, "-");
      else std::printf("%-18s %5d %10.2f %10.2f\n", metric.c_str(), s.n, s.mape_pct, null->second.mape_pct);
    }
    return 0;
  }

  int run() const {
    if (!kineto.empty()) return run_kineto();
    if (backend == "cpu") return run_cpu();
    if (backend == "cuda") return run_cuda();
    if (!backend.empty()) throw UsageError("unknown --backend '" + backend + "' (allowed: cpu, cuda)");
    if (runs.empty()) {
      throw UsageError(
          "give --from-runs FILE.csv --hardware NAME to fit a profile to measured runs, --from-kineto TRACE.json "
          "--hardware NAME to fit one to a PyTorch profiler trace, or --backend cpu|cuda to microbenchmark this machine "
          "(cuda: the CUDA build on a machine with a GPU, tools/gpu-check.sh)");
    }
    if (!cv.empty()) return run_cv();
    if (runs.size() > 1) throw UsageError("--from-runs takes one file unless --cv source is given");
    if (hardware.empty()) throw UsageError("--hardware is required with --from-runs");
    if (split != "even" && split != "odd") throw UsageError("--split: unknown value '" + split + "' (allowed: even, odd)");
    const HardwareProfile base = load_hardware(hardware);  // an unknown name fails before the fit
    const std::string& file = runs[0];
    const CsvTable table = read_csv(file);
    const FitResult fit = fit_profile_to_runs(table, hardware, split, rounds.value_or(3), parameters);
    const std::string date = today();
    // A fit with nothing to fit, or whose error is not a number, is no profile.
    if (fit.fit_rows == 0) throw Error(file + ": no scored row on " + hardware + " to fit");
    for (double e : {fit.fit_mape_pct, fit.initial_fit_mape_pct})
      if (!std::isfinite(e)) throw Error(file + ": the fit's error is not a finite number (a row's measured value is not a number?)");
    std::printf("# fit of %s to the step time and throughput of %s, %s rows (%d), %d rounds, %s\n", hardware.c_str(), file.c_str(), split.c_str(),
                fit.fit_rows, rounds.value_or(3), date.c_str());
    std::printf("# MAPE on fitted rows: %.2f%% -> %.2f%%; on %d held-out rows: %.2f%% -> %.2f%%\n", fit.initial_fit_mape_pct,
                fit.fit_mape_pct, fit.holdout_rows, fit.initial_holdout_mape_pct, fit.holdout_mape_pct);
    for (const auto& p : fit.parameters) std::printf("%-24s %.6g\n", p.path.c_str(), p.value);
    if (!output.empty()) {
      HardwareProfile hw = base;
      apply_fit(hw, fit.parameters);
      hw.name = name.empty() ? base.name + "-fitted" : name;
      for (const auto& p : fit.parameters)
        hw.provenance[p.path] = "fit: sixfold calibrate --from-runs " + file + " (" + split + " rows), " + date;
      write_profile(hardware_profile_yaml(hw, "Fitted by `sixfold calibrate --from-runs " + file + " --hardware " + hardware +
                                                  "` on " + date + ".\nFormat: docs/hardware-profiles.md."),
                    output);
    }
    return 0;
  }
};

Registrar reg("calibrate", "fit a hardware profile to measured runs (or, with a GPU, to microbenchmarks)", [](CLI::App& app) {
  auto cmd = std::make_shared<CalibrateCommand>();
  app.add_option("--from-runs", cmd->runs, "validation CSV of measured runs to fit step time and throughput (iter_s, TFLOP/s, MFU, tokens/s) to");
  app.add_option("--hardware", cmd->hardware, "the profile to fit (rows on other GPUs are ignored); with --from-kineto or --backend cuda the base profile");
  app.add_option("--cv", cmd->cv,
                 "source: out-of-source cross-validation over the --from-runs files (fit the framework terms on every "
                 "source but one, score the one left out); prints per fold and pooled out-of-fold MAPE");
  app.add_option("--bands-out", cmd->bands_out,
                 "with --cv: write each run's out-of-fold error here (configs/error_bands/out_of_source.yaml is what "
                 "predict and plan read for their expected error)");
  app.add_flag("--json", cmd->json, "with --cv: {\"folds\": [{source, rows, metrics}], \"metrics\": {METRIC: {n, mape_pct}}, ...}");
  app.add_option("--split", cmd->split, "even: fit even rows, report odd ones (default); odd: the reverse");
  add_count(app, "--rounds", cmd->rounds, 1, 100, "coordinate-descent rounds (default 3)");
  app.add_option("--parameters", cmd->parameters,
                 "profile fields to fit, comma-separated (default: all fittable; with --cv: kernel_overhead,dispatch_overlap,"
                 "kernel_slowdown,step_overhead, 'none' for a fit-free score)")->delimiter(',');
  app.add_option("--backend", cmd->backend,
                 "cpu: microbenchmark the executor's CPU ranks (run under mpirun -np 2 to measure MPI too); "
                 "cuda: microbenchmarks on this machine's GPU");
  app.add_option("--from-kineto", cmd->kineto,
                 "PyTorch profiler (Kineto) Chrome trace JSON to fit --hardware's GEMM, memory and NCCL curves to");
  app.add_option("-o,--output", cmd->output,
                 "write the profile YAML here (--from-runs: the fitted profile; --backend, --from-kineto: default "
                 "stdout; required for cuda)");
  app.add_option("--name", cmd->name,
                 "the written profile's name (default cpu-dev, BASE-calibrated for cuda, BASE-kineto for a trace)");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
