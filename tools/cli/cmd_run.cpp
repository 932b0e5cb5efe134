// sixfold run: execute a plan for real on the ranks of this launch (mpirun -np N, or one process)
// and report measured against predicted: memory by category per rank, step time, op times.
#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/file_io.hpp"
#include "executor/runtime/measured_op_class.hpp"
#include "executor/runtime/run.hpp"
#include "models/rank_mesh.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/op_listing.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/flags.hpp"
#include "tools/cli/html_report.hpp"
#include "tools/cli/scenario_options.hpp"

namespace sixfold::cli {
namespace {

struct RunCommand {
  ScenarioFlags flags;
  std::string backend = "cpu", precision = "float32", cpu_profile, trace, report;
  std::optional<int> steps, emulate_rank;
  std::optional<Seconds> timeout_s;
  bool json = false;

  int run() const {
    const Scenario s = flags.resolve(true);
    flags.validate(s);
    RunOptions opt;
    opt.backend = backend;
    opt.steps = steps.value_or(10);
    opt.precision = parse_precision(precision);
    opt.timeout_s = timeout_s.value_or(120);
    opt.trace_path = trace;
    if (emulate_rank && *emulate_rank >= s.layout.gpus())
      throw UsageError("--emulate-rank " + std::to_string(*emulate_rank) + " is not a rank of the layout (0 to " +
                       std::to_string(s.layout.gpus() - 1) + ")");
    opt.emulate_rank = emulate_rank.value_or(-1);
    // The outputs come after the run: refuse a path that cannot be written before it starts.
    if (!trace.empty()) check_writable(trace);
    if (!report.empty()) check_writable(report);
    const RunReport rep = run_plan(s.model, s.layout, s.work, opt);
    if (rep.rank != 0) return 0;

    // The cost model's memory for the same run: CPU training keeps fp32 weights and gradients
    // and no master copy (state_bytes(FP32)).
    Workload cpu_work = s.work;
    cpu_work.dtype = Dtype::FP32;
    const StepProgram prog = expand_step_program(s.model, s.layout, cpu_work);
    const auto predicted = predict_memory(s.model, s.hardware, cpu_work, s.layout, prog);
    // Step time predicted with a calibrated profile of the CPU ranks (sixfold calibrate --backend cpu).
    std::optional<Prediction> timed;
    if (!cpu_profile.empty()) timed = predict(s.model, load_hardware(cpu_profile), cpu_work, s.layout);
    // World rank -> pipeline stage on the rank mesh (models/rank_mesh.hpp). Under --emulate-rank
    // the one row measured is that world rank's.
    auto world_rank = [&](int row) { return rep.emulated_rank >= 0 ? rep.emulated_rank : row; };
    auto stage_of = [&](int row) { return rank_coordinates(s.layout, world_rank(row)).pp; };
    if (!report.empty()) write_report(s, rep, cpu_work, timed, predicted[stage_of(0)]);
    // Predicted against measured op by op, under the ids `predict --ops` lists: the calibrated CPU
    // profile's prices when given, else the scenario's hardware's.
    const HardwareProfile op_hw = timed ? load_hardware(cpu_profile) : s.hardware;
    const double steps_run = double(rep.op_steps);  // the steps the op times cover (the warm-up left out)
    std::map<std::string, Seconds> predicted_op;
    for (const ListedOp& o : list_ops(s.model, op_hw, cpu_work, s.layout, prog))
      if (o.stage == stage_of(0)) predicted_op[o.id] = o.predicted_s * double(o.per_step);
    std::map<std::string, std::pair<Seconds, Seconds>> by_class;  // op class -> predicted, measured per step
    for (const MeasuredOp& o : rep.ops) {
      by_class[o.op_class].first += predicted_op[o.id];
      by_class[o.op_class].second += o.seconds / steps_run;
    }

    if (json) {
      nlohmann::ordered_json j;
      j["world_size"] = rep.world_size;
      if (rep.emulated_rank >= 0) {
        j["emulated_rank"] = rep.emulated_rank;
        j["communication"] = "modeled: collectives replaced by local copies, times not measured";
      }
      if (!rep.trace_written.empty()) j["trace"] = rep.trace_written;
      j["losses"] = rep.losses;
      j["step_times_s"] = rep.step_times;  // every step, the first (warm-up) included
      j["step_time_s"] = rep.step_time;
      j["step_time_excludes_first_step"] = rep.step_times.size() > 1;
      j["tokens_per_s"] = rep.tokens_per_second;
      const Prediction p = timed ? *timed : predict(s.model, op_hw, cpu_work, s.layout);
      nlohmann::ordered_json parts;
      for (const auto& [name, t] : p.time.components()) parts[name] = t;
      j["predicted"] = {{"hardware", op_hw.name}, {"step_time_s", p.step_time}, {"time", parts}};
      j["measured"] = {{"step_time_s", rep.step_time}, {"step_times_s", rep.step_times}};
      // Per op: seconds per step (the mean over the steps after the first), its own time; rank 0's stage.
      nlohmann::ordered_json ops = nlohmann::ordered_json::array();
      for (const MeasuredOp& o : rep.ops)
        ops.push_back({{"id", o.id}, {"name", o.name}, {"op_class", o.op_class}, {"calls", o.calls},
                       {"predicted_s", predicted_op[o.id]}, {"measured_s", o.seconds / steps_run}});
      j["ops_rank"] = world_rank(0);
      j["ops_stage"] = stage_of(0);
      j["ops_steps"] = rep.op_steps;
      j["ops"] = ops;
      nlohmann::ordered_json classes = nlohmann::ordered_json::array();
      for (const auto& [c, pm] : by_class)
        classes.push_back({{"op_class", c}, {"predicted_s", pm.first}, {"measured_s", pm.second}});
      j["op_classes"] = classes;
      nlohmann::ordered_json outside;
      for (const auto& [name, t] : rep.outside_program)
        outside[name] = {{"measured_s", t.total / steps_run}, {"calls", t.calls}};
      j["outside_program"] = outside;
      nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
      for (size_t r = 0; r < rep.memory_per_rank.size(); ++r) {
        const auto& m = rep.memory_per_rank[r];
        const auto& p = predicted[stage_of(int(r))];
        ranks.push_back({{"rank", world_rank(int(r))},
                         {"measured", {{"weights", m.peak_by_category[0]}, {"gradients", m.peak_by_category[1]},
                                       {"optimizer", m.peak_by_category[2]}, {"activations", m.peak_by_category[3]},
                                       {"buffers", m.peak_by_category[4]}, {"total", m.peak_total}}},
                         {"predicted", {{"weights", p.weights}, {"gradients", p.gradients},
                                        {"optimizer", p.optimizer_states + p.master_weights},
                                        {"activations", p.activations + p.moe_activations + p.logits}}}});
      }
      j["memory"] = ranks;
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::printf("sixfold run: %s, %d rank(s), backend %s, %s\n", s.model.name.c_str(), rep.world_size, backend.c_str(),
                precision.c_str());
    if (rep.emulated_rank >= 0)
      std::printf("emulating world rank %d of %d alone: communication is modeled (local copies), its times and the "
                  "losses are not a training run's\n", rep.emulated_rank, rep.world_size);
    if (!rep.trace_written.empty())
      std::printf("measured trace: %s (rank 0; open beside `sixfold simulate --trace` in https://ui.perfetto.dev)\n",
                  rep.trace_written.c_str());
    for (size_t i = 0; i < rep.losses.size(); ++i)
      std::printf("step %3zu | loss %.6f | %8.2f ms\n", i + 1, rep.losses[i],
                  i < rep.step_times.size() ? rep.step_times[i] * 1e3 : 0.0);
    const std::string which = rep.step_times.size() > 1 ? " (median of steps 2.." + std::to_string(rep.step_times.size()) +
                                                              "; the first step, warm-up, is left out)"
                                                        : " (one step)";
    std::printf("median step %.2f ms | %.0f tokens/s%s\n", rep.step_time * 1e3, rep.tokens_per_second, which.c_str());
    if (timed) {
      std::printf("predicted step %.2f ms with %s (%+.1f%% vs measured):", timed->step_time * 1e3, cpu_profile.c_str(),
                  100.0 * (timed->step_time - rep.step_time) / rep.step_time);
      for (const auto& [name, t] : timed->time.components())
        if (t > 0 && name != "step") std::printf(" %s %.2f ms", name.c_str(), t * 1e3);
      std::printf("\n");
    }
    std::printf("\n");
    std::printf("%-5s %-12s %14s %14s %9s\n", "rank", "memory", "measured B", "predicted B", "diff");
    for (size_t r = 0; r < rep.memory_per_rank.size(); ++r) {
      const auto& m = rep.memory_per_rank[r];
      const auto& p = predicted[stage_of(int(r))];
      const double pred[4] = {p.weights, p.gradients, p.optimizer_states + p.master_weights,
                              p.activations + p.moe_activations + p.logits};
      const char* names[4] = {"weights", "gradients", "optimizer", "activations"};
      for (int c = 0; c < 4; ++c) {
        const double meas = m.peak_by_category[c];
        std::printf("%-5s %-12s %14.0f %14.0f %+8.1f%%\n", c == 0 ? std::to_string(world_rank(int(r))).c_str() : "", names[c], meas, pred[c],
                    meas > 0 ? 100.0 * (pred[c] - meas) / meas : 0.0);
      }
    }
    std::printf("\nops of the step program (rank 0, stage %d; ms per step; predicted with %s)\n", stage_of(0),
                op_hw.name.c_str());
    std::printf("  %-34s %12s %12s %9s\n", "op", "predicted", "measured", "diff");
    for (const MeasuredOp& o : rep.ops) {
      const double pr = predicted_op[o.id] * 1e3, me = o.seconds / steps_run * 1e3;
      std::printf("  %-34s %12.3f %12.3f %+8.1f%%\n", o.id.c_str(), pr, me, me > 0 ? 100.0 * (pr - me) / me : 0.0);
    }
    std::printf("by op class\n");
    for (const auto& [c, pm] : by_class)
      std::printf("  %-34s %12.3f %12.3f %+8.1f%%\n", c.c_str(), pm.first * 1e3, pm.second * 1e3,
                  pm.second > 0 ? 100.0 * (pm.first - pm.second) / pm.second : 0.0);
    if (!rep.outside_program.empty())
      std::printf("outside the program's ops (waiting on pipeline receives, the tied embedding's gradient sum)\n");
    for (const auto& [name, t] : rep.outside_program)
      std::printf("  %-34s %12s %12.3f\n", name.c_str(), "", t.total / steps_run * 1e3);
    if (!timed)
      std::printf("(give --cpu-profile configs/hardware/cpu-dev.yaml, or a profile from `sixfold calibrate --backend cpu`, "
                  "to predict the step time)\n");
    return 0;
  }

  // The HTML page: the prediction (the calibrated CPU profile's when given, else the scenario's
  // hardware), the simulated timeline, and what rank 0 measured.
  void write_report(const Scenario& s, const RunReport& rep, const Workload& cpu_work, const std::optional<Prediction>& timed,
                    const MemoryBreakdown& predicted_memory) const {
    const HardwareProfile hw = timed ? load_hardware(cpu_profile) : s.hardware;
    const Prediction p = timed ? *timed : predict(s.model, hw, cpu_work, s.layout);
    const SimulationResult sim = simulate_step(s.model, hw, cpu_work, s.layout);
    ReportInput in = report_input("run", s, p);
    in.simulation = &sim;
    if (timed) in.header += " (predicted with " + cpu_profile + ")";
    ReportMeasured m;
    m.backend = backend + ", " + std::to_string(rep.world_size) + " rank(s)";
    m.step_times = rep.step_times;
    m.step_time = rep.step_time;
    std::map<std::string, Seconds> by_class;
    for (const auto& [name, t] : rep.op_times) by_class[rep.op_class_of.at(name)] += t.total / double(rep.step_times.size());
    m.measured_by_class.assign(by_class.begin(), by_class.end());
    if (timed) {
      m.predicted_by_class = timed->compute_by_op_class;
      const TimeBreakdown& t = timed->time;
      m.predicted_by_class.emplace_back("communication", t.tp_comm + t.cp_comm + t.ep_comm + t.pp_comm + t.dp_comm);
      m.predicted_by_class.emplace_back("optimizer", t.optimizer);
    }
    for (const StepEvent& e : rep.last_step_ops) m.timeline.push_back({e.name, e.start, e.end, e.depth});
    const auto& mem = rep.memory_per_rank.at(0);
    m.memory_measured = {{"weights", Bytes(mem.peak_by_category[0])}, {"gradients", Bytes(mem.peak_by_category[1])},
                         {"optimizer", Bytes(mem.peak_by_category[2])}, {"activations", Bytes(mem.peak_by_category[3])}};
    const MemoryBreakdown& pm = predicted_memory;
    m.memory_predicted = {{"weights", pm.weights}, {"gradients", pm.gradients}, {"optimizer", pm.optimizer_states + pm.master_weights},
                          {"activations", pm.activations + pm.moe_activations + pm.logits}};
    in.measured = std::move(m);
    write_html_report(in, report);
  }
};

Registrar reg("run", "execute a plan on this launch's ranks (CPU over MPI) and compare with the prediction", [](CLI::App& app) {
  auto cmd = std::make_shared<RunCommand>();
  cmd->flags.add_to(app, true);
  app.add_option("--backend", cmd->backend, "cpu (default); cuda needs the CUDA build and a GPU");
  add_count(app, "--steps", cmd->steps, 1, 1000000, "training steps (default 10)");
  app.add_option("--precision", cmd->precision, "float32 (default) or float64 (CPU backend)");
  add_duration(app, "--timeout", cmd->timeout_s, 1, 86400,
               "how long any one communication may take before the run fails, e.g. 120, 30s, 5min (default 120 s; "
               "at least 1 s)");
  app.add_option("--cpu-profile", cmd->cpu_profile,
                 "hardware profile of the CPU ranks (name or YAML path, e.g. cpu-dev) to predict the step time with");
  app.add_option("--trace", cmd->trace,
                 "write the measured step as a Chrome trace to FILE, in the format of `simulate --trace` (CPU: the "
                 "last step's ops by op id; CUDA: the CUPTI kernels and copies, by op); one file per rank");
  add_count(app, "--emulate-rank", cmd->emulate_rank, 0, limits::kGpus - 1,
                 "run world rank R of the layout alone on this device: its compute and memory, collectives as local "
                 "copies (modeled, not measured)");
  app.add_flag("--json", cmd->json, "machine-readable report");
  app.add_option("--report", cmd->report,
                 "also write a self-contained HTML page: prediction, simulated and measured timelines, per-op-class times");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
