// `sixfold validate --simulate`: the step simulator, plugged into validation as its predictor,
// scores the measured runs of data/validation at least as well as the closed form (iter_s
// MAPE, 0.5 percentage points of tolerance), on vTrain's multi-node runs as run on their cluster
// (configs/clusters/vtrain-a100.yaml, the CLI's --cluster) and on the published runs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "common/csv.hpp"
#include "models/step_program.hpp"
#include "simulator/step_simulator.hpp"
#include "simulator/fit/validation.hpp"

using namespace sixfold;

namespace {

Prediction simulated(const Scenario& s) {
  const StepProgram program = expand_step_program(s.model, s.layout, s.work);
  return simulate_step(s.model, s.hardware, s.work, s.layout, program, false).prediction;
}

struct Pair {
  ValidationReport closed, sim;
};

Pair score(const std::string& file, const std::string& cluster) {
  const CsvTable table = read_csv(std::string(SIXFOLD_DATA_DIR) + "/validation/" + file);
  ValidationOptions opt;
  if (!cluster.empty()) {
    std::string hardware;
    const ClusterOverrides overrides = load_cluster_overrides(cluster, &hardware);
    opt.adjust_hardware = [overrides](HardwareProfile& hw) { apply_overrides(hw, overrides); };
  }
  Pair p;
  p.closed = validate_runs(table, opt);
  opt.predictor = simulated;
  p.sim = validate_runs(table, opt);
  return p;
}

void compare_iter_mape(const std::string& file, const Pair& p) {
  REQUIRE(p.closed.metrics.count("iter_s"));
  REQUIRE(p.sim.metrics.count("iter_s"));
  const MetricSummary& c = p.closed.metrics.at("iter_s");
  const MetricSummary& s = p.sim.metrics.at("iter_s");
  MESSAGE(file << " iter_s MAPE: closed form " << c.mape_pct << "% (n " << c.n << ", worst " << c.worst_pct << "% "
               << c.worst_id << "), simulator " << s.mape_pct << "% (n " << s.n << ", worst " << s.worst_pct << "% "
               << s.worst_id << ")");
  for (const auto& [metric, m] : p.sim.metrics)
    MESSAGE("  " << metric << ": closed form " << p.closed.metrics.at(metric).mape_pct << "%, simulator " << m.mape_pct
                 << "%");
  // The same rows are scored either way: the simulator changes the price, not what can be priced.
  CHECK(s.n == c.n);
  CHECK(p.sim.rows_scored == p.closed.rows_scored);
  CHECK(s.mape_pct <= c.mape_pct + 0.5);
}

std::string run_command(const std::string& args) {
  const std::string cmd = std::string(SIXFOLD_BINARY) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, n);
  return out;
}

}  // namespace

TEST_CASE("sixfold validate --simulate says which predictor scored the rows") {
  const std::string file = std::string(SIXFOLD_DATA_DIR) + "/validation/vtrain_multi_node.csv --cluster vtrain-a100";
  const std::string closed = run_command("validate " + file);
  const std::string sim = run_command("validate " + file + " --simulate");
  CHECK(closed.find("predictor: closed form") != std::string::npos);
  CHECK(sim.find("predictor: step simulator") != std::string::npos);
  CHECK(run_command("validate " + file + " --json").find("\"predictor\": \"closed-form\"") != std::string::npos);
  CHECK(run_command("validate " + file + " --simulate --json").find("\"predictor\": \"simulator\"") != std::string::npos);
}

TEST_CASE("validate --simulate: vTrain multi-node runs on the vtrain-a100 cluster, no worse than the closed form") {
  const Pair p = score("vtrain_multi_node.csv", "vtrain-a100");
  CHECK(p.closed.rows_scored >= 50);
  compare_iter_mape("vtrain_multi_node.csv", p);
  CHECK(p.closed.rows_not_fitting() == 0);
}

TEST_CASE("validate --simulate: published runs, no worse than the closed form") {
  const Pair p = score("published_runs.csv", "");
  compare_iter_mape("published_runs.csv", p);
  // Each of these runs ran: none may be predicted not to fit (DeepSeek-V3's K1 did not until MoE
  // routing weights were priced as Megatron-Core applies them).
  CHECK(p.closed.rows_not_fitting() == 0);
  CHECK(p.sim.rows_not_fitting() == 0);
  // Every throughput metric of every row, pooled, and the pipelined rows on their own: the
  // simulator's error is within a point of the closed form's. The simulator
  // plays Megatron's pipelined H100 rows (D5-D9, L3) about 2% slower than the closed form does;
  // with the H100-class kernel_slowdown both predict those rows slow, so the simulator's MAPE there
  // is 0.3 (all rows) to 0.5 (pp > 1) points above the closed form's (bench/RESULTS.md, 2026-12-02).
  auto pooled = [](const ValidationReport& rep, bool pipelined_only) {
    double sum = 0;
    int n = 0;
    for (const RowResult& row : rep.rows) {
      if (!row.scored || (pipelined_only && row.scenario.layout.pp <= 1)) continue;
      for (const auto& [metric, e] : row.error_pct)
        if (metric != "peak_mem_gib") sum += std::abs(e), ++n;
    }
    return n ? sum / n : 0.0;
  };
  MESSAGE("throughput MAPE, all rows: closed " << pooled(p.closed, false) << "%, simulator " << pooled(p.sim, false) << "%");
  MESSAGE("throughput MAPE, pp > 1: closed " << pooled(p.closed, true) << "%, simulator " << pooled(p.sim, true) << "%");
  CHECK(pooled(p.sim, false) <= pooled(p.closed, false) + 1.0);
  CHECK(pooled(p.sim, true) <= pooled(p.closed, true) + 1.0);
}

TEST_CASE("validate --simulate: each row's prediction is the simulator's for the filled layout") {
  const CsvTable table = read_csv(std::string(SIXFOLD_DATA_DIR) + "/validation/vtrain_single_node.csv");
  ValidationOptions opt;
  opt.predictor = simulated;
  const ValidationReport rep = validate_runs(table, opt);
  int checked = 0;
  for (const RowResult& row : rep.rows) {
    if (!row.scored || !row.predicted.count("iter_s")) continue;
    const Scenario& s = row.scenario;
    const SimulationResult r = simulate_step(s.model, s.hardware, s.work, s.layout);
    CHECK(row.predicted.at("iter_s") == doctest::Approx(r.step_time).epsilon(1e-12));
    if (++checked == 10) break;
  }
  CHECK(checked > 0);
}
