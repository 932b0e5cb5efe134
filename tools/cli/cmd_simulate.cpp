// sixfold simulate: play one training step of a layout through its pipeline schedule on per-rank
// streams; print the step time, its breakdown and the memory per stage, optionally a Chrome trace.
#include <iomanip>
#include <iostream>

#include "simulator/io/prediction_json.hpp"
#include "simulator/step_simulator.hpp"
#include "simulator/io/trace_writer.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/html_report.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/scenario_options.hpp"

namespace sixfold::cli {
namespace {

struct SimulateCommand {
  ScenarioFlags flags;
  bool json = false;
  std::string trace, report;

  nlohmann::ordered_json to_json(const Scenario& s, const SimulationResult& r, const Prediction& closed) const {
    nlohmann::ordered_json out = scenario_json(s);
    out["simulated"] = true;
    add_prediction_json(out, s, r.prediction, false);  // as predict's, without the band
    out["closed_form_step_time_s"] = closed.step_time;
    out["bottleneck_stage"] = r.bottleneck_stage;
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const StageSimulation& st : r.stages) {
      nlohmann::ordered_json j;
      j["stage"] = st.stage;
      // predict's per-stage keys first (memory is the simulated peak; the per-micro-batch block
      // times are the ones the simulation played), then the simulation's own.
      j["memory_bytes"] = st.peak_memory;
      j["forward_s"] = closed.stage_time[size_t(st.stage)].forward;
      j["backward_s"] = closed.stage_time[size_t(st.stage)].backward;
      j["peak_memory_bytes"] = st.peak_memory;
      j["static_memory_bytes"] = st.static_memory;
      j["peak_time_s"] = st.peak_time;
      j["peak_in_flight_micro_batches"] = st.peak_in_flight;
      j["compute_s"] = st.compute;
      j["recompute_s"] = st.recompute;
      j["dispatch_overhead_s"] = st.dispatch_overhead;
      j["tp_comm_s"] = st.tp_comm;
      j["cp_comm_s"] = st.cp_comm;
      j["ep_comm_s"] = st.ep_comm;
      j["pp_comm_s"] = st.pp_comm;
      j["dp_comm_s"] = st.dp_comm;
      j["optimizer_s"] = st.optimizer;
      j["bubble_s"] = st.bubble;
      j["compute_end_s"] = st.compute_end;
      stages.push_back(j);
    }
    out["stages"] = stages;
    return out;
  }

  int run() const {
    const Scenario s = flags.resolve(true);
    flags.validate(s);
    const StepProgram program = expand_step_program(s.model, s.layout, s.work);
    const SimulationResult r = simulate_step(s.model, s.hardware, s.work, s.layout, program,
                                             !trace.empty() || !report.empty());
    const Prediction closed = predict(s.model, s.hardware, s.work, s.layout, program);
    if (!trace.empty()) write_chrome_trace(r, s.model.name + " " + describe(s.layout), trace);
    if (!report.empty()) {
      ReportInput in = report_input("simulate", s, r.prediction);
      in.simulation = &r;
      write_html_report(in, report);
    }
    if (json) {
      std::cout << to_json(s, r, closed).dump(2) << "\n";
      return 0;
    }
    std::cout << "sixfold simulate: " << scenario_header(s) << "\n";
    std::cout << "layout: " << layout_summary(s.layout, s.work, program.micro_batches) << "\n";
    print_prediction(std::cout, r.prediction);
    std::cout << "closed-form step time " << format_seconds(closed.step_time) << " (simulated "
              << format_seconds(r.step_time) << "; breakdown of the busiest stage, " << r.bottleneck_stage << ")\n";
    std::cout << "stage     compute          tp          cp          ep          pp          dp      bubble  in-flight   peak GiB\n";
    auto cell = [](Seconds t) {
      std::string text = format_seconds(t);
      return std::string(text.size() < 12 ? 12 - text.size() : 1, ' ') + text;
    };
    for (const StageSimulation& st : r.stages) {
      std::cout << std::setw(5) << st.stage << cell(st.compute) << cell(st.tp_comm) << cell(st.cp_comm)
                << cell(st.ep_comm) << cell(st.pp_comm) << cell(st.dp_comm) << cell(st.bubble) << std::fixed
                << std::setprecision(2) << std::setw(11) << st.peak_in_flight << std::setw(11) << st.peak_memory / kGiB
                << std::defaultfloat << "\n";
    }
    print_memory_fit(std::cout, r.prediction, s.hardware);
    print_workload_notes(std::cout, s);
    if (!trace.empty()) std::cout << "trace: " << trace << " (open in https://ui.perfetto.dev)\n";
    return 0;
  }
};

Registrar reg("simulate", "simulate one training step: timeline, bubble, exposed communication, memory over time",
              [](CLI::App& app) {
                auto cmd = std::make_shared<SimulateCommand>();
                cmd->flags.add_to(app, true);
                app.add_flag("--json", cmd->json, "machine-readable output: predict's keys plus \"simulated\" and per-stage detail");
                app.add_option("--trace", cmd->trace, "write a Chrome trace (Perfetto) of the step to this file");
                app.add_option("--report", cmd->report, "also write a self-contained HTML page of charts to FILE.html");
                return Action([cmd] { return cmd->run(); });
              });

}  // namespace
}  // namespace sixfold::cli
