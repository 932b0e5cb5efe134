#pragma once
// Human-readable tables of predictions, shared by predict, plan and simulate.
#include <iosfwd>
#include <string>

#include "simulator/cost_model.hpp"
#include "simulator/io/scenario.hpp"

#include <nlohmann/json.hpp>

namespace sixfold::cli {

std::string scenario_header(const Scenario& s);
// The layout as one line: its degrees, schedule, DP overlap and, with TP, whether TP communication
// is priced overlapped (what a user must turn on to see the predicted time).
std::string layout_line(const Layout& l);
// layout_line with its micro-batches per step and what the framework runs differently for it
// ("... (4 micro-batches; DeepSpeed's BF16_Optimizer: fp32 gradient accumulation)").
std::string layout_summary(const Layout& l, const Workload& w, Count micro_batches);
void print_prediction(std::ostream& out, const Prediction& p);
std::string format_seconds(Seconds s);
// Whether standard output is a terminal (progress only then).
bool stdout_is_terminal();

// "step 50.7 s, expect +-6% (23 similar measured runs: ...)" from the out-of-source residuals of
// the measured runs most like this one (simulator/fit/error_band.hpp); nothing when none are built in.
// `codebase`: a measured row's `framework` column (validate --explain), as the row's band takes it.
void print_expected_error(std::ostream& out, const Scenario& s, Seconds step_time, const std::string& codebase = "");
// A warning where the prediction does not fit the GPU, or fits only by the allocator's retries; a
// note where it fits the GPU but not plan's default budget (the memory model's measured error).
void print_memory_fit(std::ostream& out, const Prediction& p, const HardwareProfile& hw);
// A note for each workload flag the layout makes a no-op (--fsdp-float8-all-gather without FSDP
// sharding), so that a flag in the header is never silently ignored. predict and simulate.
void print_workload_notes(std::ostream& out, const Scenario& s);
// Appends a priced layout's --json keys to `out` (after the scenario's): prediction_json's, then in
// "prediction" the error band (with_band) and the memory verdict print_memory_fit prints, "memory_fit"
// and, as plan's JSON names it, "memory_budget_bytes" (plan's default budget) with
// "within_memory_budget". One place for predict, simulate and validate --explain.
void add_prediction_json(nlohmann::ordered_json& out, const Scenario& s, const Prediction& p, bool with_band,
                         const std::string& codebase = "");
// {"pct", "runs", "basis"} or null.
nlohmann::ordered_json expected_error_json(const Scenario& s, const std::string& codebase = "");
// What every --json output opens with: model, hardware, gpus, framework, workload and (unless a
// search chose it) the layout, in that order; the prediction's keys follow.
nlohmann::ordered_json scenario_json(const Scenario& s, bool with_layout = true);

}  // namespace sixfold::cli
