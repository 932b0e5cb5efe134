#pragma once
// `--report FILE.html` of plan, predict, simulate and run: one self-contained page (inline SVG and
// CSS, no script, nothing fetched) with the charts a user would rather look at than read: memory
// per component and per pipeline stage against the budget, step time by component, the simulated
// timeline, the ranked layouts (plan), and after `run` the measured steps, the measured op
// timeline and predicted against measured time per op class.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simulator/cost_model.hpp"
#include "simulator/io/scenario.hpp"
#include "simulator/step_simulator.hpp"

namespace sixfold::cli {

struct ReportLayout {
  std::string layout;  // describe(layout) and its schedule
  Seconds step_time = 0;
  Bytes peak_memory = 0;
  double tokens_per_s_per_gpu = 0;
};

// One timed op of a measured run (rank 0), seconds from the start of the run.
struct ReportOpEvent {
  std::string name;
  Seconds start = 0, end = 0;
  int depth = 0;  // nesting: an op timed inside another (a GEMM inside recompute) is one deeper
};

struct ReportMeasured {
  std::string backend;
  std::vector<Seconds> step_times;  // every step, the first included
  Seconds step_time = 0;            // the median the text report quotes
  std::vector<std::pair<std::string, Seconds>> measured_by_class;   // per step
  std::vector<std::pair<std::string, Seconds>> predicted_by_class;  // per step; empty without a profile
  std::vector<ReportOpEvent> timeline;                              // rank 0, one step
  std::vector<std::pair<std::string, Bytes>> memory_measured, memory_predicted;  // rank 0, by category
};

struct ReportInput {
  std::string command;  // "plan", "predict", "simulate", "run"
  std::string header;   // scenario_header()
  std::string layout;   // the layout the charts show
  Bytes budget = 0;     // the memory line: the plan's budget, else the GPU's capacity
  std::string budget_label;
  const Prediction* prediction = nullptr;        // the headline (required)
  const SimulationResult* simulation = nullptr;  // with tasks recorded, for the timeline (optional)
  std::vector<ReportLayout> ranked;              // plan: best first, the first few
  size_t ranked_total = 0;                       // how many layouts the plan ranked in all
  std::optional<ReportMeasured> measured;        // run
};

// The fields every command fills alike: header, layout, the GPU's capacity as the memory line.
ReportInput report_input(const std::string& command, const Scenario& s, const Prediction& p);

std::string html_report(const ReportInput& input);
// Written atomically (common/file_io.hpp); refuses a path not ending in .html or .htm.
void write_html_report(const ReportInput& input, const std::string& path);

}  // namespace sixfold::cli
