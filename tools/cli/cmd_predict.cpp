// sixfold predict: price one layout: memory by component per GPU, time by component per step.
#include <cstdio>
#include <iostream>
#include <map>

#include "simulator/cost_model.hpp"
#include "simulator/op_listing.hpp"
#include "simulator/io/prediction_json.hpp"
#include "simulator/step_simulator.hpp"
#include "tools/cli/html_report.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/scenario_options.hpp"

namespace sixfold::cli {
namespace {

struct PredictCommand {
  ScenarioFlags flags;
  bool json = false, ops = false;
  std::string report;

  static nlohmann::ordered_json ops_json(const std::vector<ListedOp>& list) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const ListedOp& o : list) {
      nlohmann::ordered_json j;
      j["id"] = o.id;
      j["name"] = o.name;
      j["kind"] = o.kind;
      j["op_class"] = o.op_class;
      j["stage"] = o.stage;
      j["part"] = o.part;
      j["pass"] = o.pass;
      j["recompute"] = o.recompute;
      j["per_step"] = o.per_step;
      j["flops"] = o.flops;
      j["bytes"] = o.bytes;
      if (!o.group.empty()) j["group"] = o.group;
      j["predicted_s"] = o.predicted_s;
      j["predicted_step_s"] = o.predicted_s * double(o.per_step);
      out.push_back(std::move(j));
    }
    return out;
  }

  // One line per op; then, per stage, what the ops add up to set against the step time.
  static void print_ops(const std::vector<ListedOp>& list, const Prediction& p) {
    std::printf("\n%-44s %-11s %-5s %9s %10s %10s %11s %11s\n", "op id", "class", "group", "per step", "GFLOP",
                "MB", "us / call", "ms / step");
    std::map<int, std::pair<Seconds, Seconds>> by_stage;  // compute, communication per step
    for (const ListedOp& o : list) {
      const Seconds step = o.predicted_s * double(o.per_step);
      std::printf("%-44s %-11s %-5s %9lld %10.2f %10.2f %11.2f %11.3f\n", o.id.c_str(), o.op_class.c_str(),
                  o.group.c_str(), (long long)o.per_step, o.flops / 1e9, o.bytes / 1e6, o.predicted_s * 1e6, step * 1e3);
      auto& t = by_stage[o.stage];
      if (o.part == "dp") continue;  // each op alone overstates what the step pays for them: below
      (o.kind == "collective" || o.kind == "p2p" ? t.second : t.first) += step;
    }
    for (const auto& [stage, t] : by_stage)
      std::printf("stage %d: ops add up to %s of compute and %s of communication, each op alone\n", stage,
                  format_seconds(t.first).c_str(), format_seconds(t.second).c_str());
    std::printf("predicted step %s: it also counts what hides behind what (TP, CP, DP overlap), the pipeline bubble "
                "and host dispatch; the dp rows (gradient reductions, ZeRO gathers, optimizer) enter it as far as "
                "the compute does not hide them\n",
                format_seconds(p.step_time).c_str());
  }

  int run() const {
    const Scenario s = flags.resolve(true);
    flags.validate(s);
    const Prediction p = predict(s.model, s.hardware, s.work, s.layout);
    if (!report.empty()) {
      const SimulationResult sim = simulate_step(s.model, s.hardware, s.work, s.layout);
      ReportInput in = report_input("predict", s, p);
      in.simulation = &sim;
      write_html_report(in, report);
    }
    const std::vector<ListedOp> listed =
        ops ? list_ops(s.model, s.hardware, s.work, s.layout, expand_step_program(s.model, s.layout, s.work)) : std::vector<ListedOp>{};
    if (json) {
      nlohmann::ordered_json out = scenario_json(s);
      add_prediction_json(out, s, p, true);
      if (ops) out["ops"] = ops_json(listed);
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::cout << "sixfold predict: " << scenario_header(s) << "\n";
    std::cout << "layout: " << layout_summary(s.layout, s.work, p.micro_batches) << "\n";
    print_prediction(std::cout, p);
    print_expected_error(std::cout, s, p.step_time);
    print_memory_fit(std::cout, p, s.hardware);
    print_workload_notes(std::cout, s);
    if (ops) print_ops(listed, p);
    return 0;
  }
};

Registrar reg("predict", "price one layout: per-GPU memory and step time by component", [](CLI::App& app) {
  auto cmd = std::make_shared<PredictCommand>();
  cmd->flags.add_to(app, true);
  app.add_flag("--json", cmd->json, "machine-readable output (schema in README)");
  app.add_option("--report", cmd->report, "also write a self-contained HTML page of charts to FILE.html");
  app.add_flag("--ops", cmd->ops,
               "list the step program's ops: stable id, class, occurrences per step, FLOPs, bytes, predicted time");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
