// sixfold validate FILE.csv: score predictions against measured runs (data/validation format),
// with the closed form (default) or, with --simulate, the step simulator.
#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/progress.hpp"
#include "common/suggest.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/step_simulator.hpp"
#include "simulator/fit/validation.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/report.hpp"

namespace sixfold::cli {
namespace {

struct ValidateCommand {
  std::string file, cluster, explain;
  bool json = false, rank = false, simulate = false, null_model = false, shared_columns = false;

  const char* predictor_name() const { return simulate ? "simulator" : "closed-form"; }

  int run() const {
    const CsvTable table = shared_columns ? shared_columns_only(read_csv(file)) : read_csv(file);
    for (const char* col : {"id", "layers", "hidden", "heads", "vocab", "seq", "gpu", "gpus", "global_batch"})
      if (table.column(col) < 0) throw Error(file + ": missing column '" + col + "' (format: data/validation/README.md)");
    ValidationOptions opt;
    if (!explain.empty()) {
      if (rank || null_model) throw UsageError("--explain prices one row as sixfold does; it takes neither --rank nor --null-model");
      std::vector<std::string> ids;
      for (size_t r = 0; r < table.rows.size(); ++r) ids.push_back(table.field(r, "id"));
      if (std::find(ids.begin(), ids.end(), explain) == ids.end())
        throw UsageError(file + ": --explain " + explain + ": no row has that id" + did_you_mean(explain, ids));
      opt.include = [this](size_t, const std::string& id) { return id == explain; };
    }
    opt.rank = rank;
    opt.null_model = null_model;
    if (simulate) opt.predictor = simulated_prediction;
    if (!cluster.empty()) {
      // Score every row as run on this cluster: its node size and network override the profile's.
      std::string cluster_hardware;
      const ClusterOverrides overrides = load_cluster_overrides(cluster, &cluster_hardware);
      opt.adjust_hardware = [overrides](HardwareProfile& hw) { apply_overrides(hw, overrides); };
    }
    const ValidationReport rep = [&] {
      Progress bar("validate: pricing rows");
      opt.progress = &bar;
      ValidationReport r = validate_runs(table, opt);
      opt.progress = nullptr;
      return r;
    }();
    if (!explain.empty()) return print_explained(rep, table);
    if (json) print_json(rep);
    else print_text(rep);
    return 0;
  }

  // One row as sixfold priced it: the scenario its columns and fills made, the prediction by
  // component (predict's report), then measured against predicted.
  int print_explained(const ValidationReport& rep, const CsvTable& table) const {
    const RowResult& row = rep.rows.front();
    // The codebase as the row names it: several (llm-foundry, Megatron-DeepSpeed) are priced on the
    // code path of the framework they run on, which the header names.
    std::string codebase;
    for (size_t r = 0; r < table.rows.size(); ++r)
      if (table.field(r, "id") == row.id) {
        codebase = table.field(r, "framework");
        if (!table.field(r, "framework_date").empty()) codebase += " " + table.field(r, "framework_date");
      }
    if (!row.scored) throw Error(file + ": row " + row.id + " is not priced: " + row.skip_reason);
    const Scenario& s = row.scenario;
    const Prediction p = simulate ? simulated_prediction(s) : predict(s.model, s.hardware, s.work, s.layout);
    if (json) {
      nlohmann::ordered_json out = {{"id", row.id}, {"predictor", predictor_name()}, {"codebase", codebase}};
      const nlohmann::ordered_json scenario = scenario_json(s);  // named: items() must not outlive it
      for (const auto& [k, v] : scenario.items()) out[k] = v;
      out["filled"] = row.filled;
      add_prediction_json(out, s, p, true, row.codebase);  // as predict --json: p is the row's prediction, priced again
      out["measured"] = row.measured;
      out["predicted"] = row.predicted;
      out["error_pct"] = row.error_pct;
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::cout << "sixfold validate --explain " << row.id << " (" << file << ", " << predictor_name() << "): "
              << scenario_header(s) << "\n";
    if (!codebase.empty()) std::cout << "codebase: " << codebase << " (the row's framework and framework_date)\n";
    std::cout << "layout: " << layout_summary(s.layout, s.work, p.micro_batches) << "\n";
    std::string filled;
    for (const std::string& f : row.filled) filled += (filled.empty() ? "" : ", ") + f;
    std::cout << "filled: " << (filled.empty() ? "nothing (every field stated)" : filled) << "\n";
    print_prediction(std::cout, p);
    print_expected_error(std::cout, s, p.step_time, row.codebase);
    print_memory_fit(std::cout, p, s.hardware);
    std::printf("\n%-18s %12s %12s %9s\n", "metric", "measured", "predicted", "error");
    for (const auto& [metric, measured] : row.measured)
      std::printf("%-18s %12.4g %12.4g %+8.1f%%\n", metric.c_str(), measured, row.predicted.at(metric), row.error_pct.at(metric));
    return 0;
  }

  // The step simulator's prediction of a row (no task list: only the times and memory are scored).
  static Prediction simulated_prediction(const Scenario& s) {
    const StepProgram program = expand_step_program(s.model, s.layout, s.work);
    return simulate_step(s.model, s.hardware, s.work, s.layout, program, false).prediction;
  }

  void print_text(const ValidationReport& rep) const {
    std::printf("predictor: %s\n", simulate ? "step simulator (sixfold simulate)" : "closed form (sixfold predict)");
    char line[512];
    std::printf("%-8s %-18s %-34s %-14s %12s %12s %9s\n", "id", "gpus x hardware", "layout", "metric", "measured", "predicted", "error");
    for (const auto& row : rep.rows) {
      if (!row.scored) {
        std::printf("%-8s skipped: %s\n", row.id.c_str(), row.skip_reason.c_str());
        continue;
      }
      const auto& s = row.scenario;
      std::string hw = std::to_string(s.gpus) + " x " + s.hardware.name;
      std::string layout = "dp" + std::to_string(s.layout.dp) + " tp" + std::to_string(s.layout.tp) + " pp" +
                           std::to_string(s.layout.pp) + (s.layout.cp > 1 ? " cp" + std::to_string(s.layout.cp) : "") +
                           (s.layout.ep > 1 ? " ep" + std::to_string(s.layout.ep) : "") + " z" + std::to_string(s.layout.zero) +
                           " mbs" + std::to_string(s.layout.micro_batch) + " " + to_string(s.layout.recompute) +
                           (s.layout.block_recompute() ? "(block " + std::to_string(s.layout.recompute_num_layers) + ")" : "") +
                           (s.layout.partial_recompute() && s.layout.recompute_every > 0
                                ? "(every " + std::to_string(s.layout.recompute_every) + ")"
                                : "");
      bool first = true;
      for (const auto& [metric, measured] : row.measured) {
        std::snprintf(line, sizeof line, "%-8s %-18s %-34s %-14s %12.4g %12.4g %+8.1f%%%s\n", first ? row.id.c_str() : "",
                      first ? hw.c_str() : "", first ? layout.c_str() : "", metric.c_str(), measured,
                      row.predicted.at(metric), row.error_pct.at(metric),
                      first && !row.predicted_to_fit ? "  (predicted not to fit)" : "");
        std::cout << line;
        first = false;
      }
    }
    if (!rep.groups.empty()) {
      std::printf("\n%-44s %8s %10s %9s\n", "ranking group (same model, GPUs, batch)", "layouts", "regret", "Spearman");
      for (const auto& g : rep.groups)
        std::printf("%-44s %8d %9.2f%% %9.3f\n", g.key.c_str(), g.layouts, g.regret_pct, g.spearman);
      double regret = 0, worst = 0, rho = 0;
      std::string worst_key;
      for (const auto& g : rep.groups) {
        regret += g.regret_pct;
        rho += g.spearman;
        if (g.regret_pct >= worst) { worst = g.regret_pct; worst_key = g.key; }
      }
      const double n = double(rep.groups.size());
      std::printf("\nranking: %zu groups | mean regret %.2f%% | worst regret %.1f%% (%s) | mean Spearman %.3f\n",
                  rep.groups.size(), regret / n, worst, worst_key.c_str(), rho / n);
    }
    std::printf("\nsummary of %s: %d rows scored, %d skipped\n", rep.source.c_str(), rep.rows_scored, rep.rows_skipped);
    // Every row ran, so every row should fit: the ones that do not are the model's error.
    std::string misfits;
    for (const auto& row : rep.rows)
      if (row.scored && !row.predicted_to_fit) misfits += (misfits.empty() ? "" : ", ") + row.id;
    std::printf("  predicted not to fit: %d%s\n", rep.rows_not_fitting(), misfits.empty() ? "" : (" (" + misfits + ")").c_str());
    // Rows whose live tensors fit but not the allocator's cache: they ran with cudaMalloc retries,
    // which the prediction does not price.
    std::string retries;
    int retried = 0;
    for (const auto& row : rep.rows)
      if (row.scored && row.memory_fit == MemoryFit::AllocatorRetries)
        retries += (retries.empty() ? "" : ", ") + row.id, ++retried;
    if (retried > 0)
      std::printf("  predicted to fit only by the allocator's retries (slower than priced): %d (%s)\n", retried,
                  retries.c_str());
    for (const auto& [reason, count] : rep.skip_reasons) std::printf("  skipped %4d: %s\n", count, reason.c_str());
    // How each kind of field was filled or read, in the words a user would check it by.
    const std::map<std::string, std::string> how = {
        {"dp_overlap", "unstated: the codebase's default at its date (simulator/fit/run_facts.cpp)"},
        {"attention", "unstated: the codebase's kernel at its date (simulator/fit/run_facts.cpp)"},
        {"tp_overlap", "unstated: off, but on for Megatron-Core runs from 2023-11 with TP > 1, as its published recipes run (simulator/fit/run_facts.cpp)"},
        {"ep_dispatcher", "unstated: the codebase's MoE token dispatcher (Megatron's default: all-to-all; simulator/fit/run_facts.cpp)"},
        {"ep_overlap", "unstated: the codebase's default, off but for DeepSeek's DualPipe (simulator/fit/run_facts.cpp)"},
        {"compile", "unstated (torchtitan): off, its default, or on, the faster; published torchtitan benchmarks compile"},
        {"etp", "unstated (Megatron MoE): the TP size, Megatron-Core's default expert tensor parallelism (simulator/fit/validation.cpp)"},
        {"fsdp_float8_all_gather", "unstated (torchtitan fp8 under FSDP): off, its JobConfig default (simulator/fit/run_facts.cpp)"},
        {"float8_recipe", "unstated (torchtitan fp8): tensorwise, what its float8 converter runs without a recipe_name (simulator/fit/run_facts.cpp)"},
        {"pipeline_micro_batches", "torchtitan splits the local batch itself: pp micro-batches until 2025-01, one per stage until 2025-04, then one sequence each"},
        {"model_flops", "the source's count: Megatron-Bridge halves causal attention's FLOPs"},
        {"vpp", "unstated: the fastest interleave that fits in memory"},
        {"pipeline_split", "Megatron's embedding and loss in the pipeline split: the only way it runs a virtual pipeline the layers do not divide"},
        {"pipeline_layout", "Megatron's custom pipeline layout where even the embedding/loss split does not divide: every virtual stage takes ceil(layers / stages), as its DeepSeek-V3 recipes write"},
        {"global_batch", "unstated for torchtitan: dp x the local batch, as it accumulates no gradients by default"},
        {"model", "the built-in model of the row's shape, with what the columns cannot say (MLA, dense layers, shared experts)"},
        {"framework", "no codebase named and ZeRO-3: PyTorch FSDP, priced on torchtitan's code path, eager unless `compile` says 1 (simulator/fit/run_facts.cpp)"}};
    for (const auto& [field, count] : rep.filled_counts) {
      auto it = how.find(field);
      std::printf("  filled  %4d: %s (%s)\n", count, field.c_str(),
                  it != how.end() ? it->second.c_str() : "unstated: the fastest that fits in memory");
    }
    std::printf("  %-18s %5s %9s %9s %9s  %s\n", "metric", "n", "MAPE", "median", "worst", "worst row");
    for (const auto& metric : validation_metrics()) {
      auto it = rep.metrics.find(metric);
      if (it == rep.metrics.end()) continue;
      const auto& m = it->second;
      std::printf("  %-18s %5d %8.2f%% %8.2f%% %8.1f%%  %s\n", metric.c_str(), m.n, m.mape_pct, m.median_pct, m.worst_pct,
                  m.worst_id.c_str());
    }
    // Whether `predict`'s "expect +-X%" held on these rows: a row counts its mean absolute error
    // over its throughput metrics, as the bands do.
    if (const auto c = rep.band_coverage(); c.rows > 0)
      std::printf("  expected error band: %d of %d rows within it (%.0f%%; each band is the error a new run stays within "
                  "with 68%% probability, from similar runs' out-of-source errors, so at least 68%% should be; on the "
                  "runs the bands are made of, "
                  "data/validation/published_runs.csv and vtrain_multi_node.csv, this is in-sample)\n",
                  c.within, c.rows, 100.0 * c.within / c.rows);
  }

  void print_json(const ValidationReport& rep) const {
    nlohmann::ordered_json j;
    j["source"] = rep.source;
    j["predictor"] = predictor_name();
    j["rows_scored"] = rep.rows_scored;
    j["rows_skipped"] = rep.rows_skipped;
    j["rows_predicted_not_to_fit"] = rep.rows_not_fitting();
    j["skip_reasons"] = rep.skip_reasons;
    j["filled"] = rep.filled_counts;
    nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
    for (const auto& metric : validation_metrics()) {
      auto it = rep.metrics.find(metric);
      if (it == rep.metrics.end()) continue;
      metrics[metric] = {{"n", it->second.n},
                         {"mape_pct", it->second.mape_pct},
                         {"median_pct", it->second.median_pct},
                         {"worst_pct", it->second.worst_pct},
                         {"worst_id", it->second.worst_id}};
    }
    j["metrics"] = metrics;
    if (const auto c = rep.band_coverage(); c.rows > 0)
      j["error_band_coverage"] = {{"rows", c.rows}, {"within", c.within}, {"pct", 100.0 * c.within / c.rows}};
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& row : rep.rows) {
      nlohmann::ordered_json r;
      r["id"] = row.id;
      r["scored"] = row.scored;
      if (!row.scored) r["skip_reason"] = row.skip_reason;
      if (row.scored) r["predicted_to_fit"] = row.predicted_to_fit;
      if (row.scored) r["memory_fit"] = to_string(row.memory_fit);
      r["measured"] = row.measured;
      r["predicted"] = row.predicted;
      r["error_pct"] = row.error_pct;
      if (!row.filled.empty()) r["filled"] = row.filled;
      if (row.scored && row.expected_error_pct) r["expected_error_pct"] = *row.expected_error_pct;
      rows.push_back(r);
    }
    j["rows"] = rows;
    if (!rep.groups.empty()) {
      double regret = 0, worst = 0, rho = 0;
      for (const auto& g : rep.groups) {
        regret += g.regret_pct;
        rho += g.spearman;
        worst = std::max(worst, g.regret_pct);
      }
      const double n = double(rep.groups.size());
      nlohmann::ordered_json groups = nlohmann::ordered_json::array();
      for (const auto& g : rep.groups)
        groups.push_back({{"group", g.key}, {"layouts", g.layouts}, {"regret_pct", g.regret_pct}, {"spearman", g.spearman}});
      j["ranking"] = {{"groups", rep.groups.size()}, {"mean_regret_pct", regret / n}, {"worst_regret_pct", worst},
                      {"mean_spearman", rho / n}, {"per_group", groups}};
    }
    std::cout << j.dump(2) << "\n";
  }
};

Registrar reg("validate", "score predictions against measured runs (CSV, data/validation format)", [](CLI::App& app) {
  auto cmd = std::make_shared<ValidateCommand>();
  app.add_option("file", cmd->file, "CSV of measured runs")->required();
  app.add_flag("--json", cmd->json, "machine-readable output");
  app.add_option("--cluster", cmd->cluster, "cluster YAML whose node size and network apply to every row");
  app.add_flag("--null-model", cmd->null_model,
               "score the null model instead: every row at its model FLOPs / (GPUs x dtype peak x 50%), the baseline "
               "an accuracy figure must beat");
  app.add_flag("--simulate", cmd->simulate, "price every row with the step simulator instead of the closed form");
  app.add_flag("--rank", cmd->rank, "score the ranking of layouts within groups of the same model, GPUs and batch");
  app.add_flag("--shared-columns", cmd->shared_columns,
               "read each row as the shared validation format carries it, what a held-out run states: ignore the columns "
               "this project added (compile, dp_shard, grad_reduce_dtype, ...; data/validation/README.md) and read a named "
               "flash kernel as `flash`");
  app.add_option("--explain", cmd->explain,
                 "price only the row with this id and print how: the scenario its columns and fills made, memory and "
                 "step time by component (as `predict` prints them), measured against predicted");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
