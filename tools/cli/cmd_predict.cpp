// sixfold predict: price one layout: memory by component per GPU, time by component per step.
#include <iostream>

#include "simulator/cost_model.hpp"
#include "simulator/prediction_json.hpp"
#include "simulator/step_simulator.hpp"
#include "tools/cli/html_report.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/scenario_options.hpp"

namespace sixfold::cli {
namespace {

struct PredictCommand {
  ScenarioFlags flags;
  bool json = false;
  std::string report;

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
    if (json) {
      auto j = prediction_json(p);
      nlohmann::ordered_json out;
      out["model"] = s.model.name;
      out["hardware"] = s.hardware.name;
      out["gpus"] = s.gpus;
      out["framework"] = to_string(s.work.framework);
      out["workload"] = workload_json(s.work);
    out["layout"] = layout_json(s.layout);
      for (auto& [k, v] : j.items()) out[k] = v;
      out["prediction"]["expected_error"] = expected_error_json(s);
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::cout << "sixfold predict: " << scenario_header(s) << "\n";
    std::cout << "layout: " << describe(s.layout) << " dp-overlap=" << to_string(s.layout.dp_overlap)
              << " schedule=" << to_string(s.layout.schedule) << " (" << p.micro_batches << " micro-batches)\n";
    print_prediction(std::cout, p);
    print_expected_error(std::cout, s, p.step_time);
    if (p.peak_memory > s.hardware.memory_capacity)
      std::cout << "warning: needs " << p.peak_memory / kGiB << " GiB per GPU, the GPU has "
                << s.hardware.memory_capacity / kGiB << " GiB\n";
    return 0;
  }
};

Registrar reg("predict", "price one layout: per-GPU memory and step time by component", [](CLI::App& app) {
  auto cmd = std::make_shared<PredictCommand>();
  cmd->flags.add_to(app, true);
  app.add_flag("--json", cmd->json, "machine-readable output (schema in README)");
  app.add_option("--report", cmd->report, "also write a self-contained HTML page of charts to FILE.html");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
