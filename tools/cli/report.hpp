#pragma once
// Human-readable tables of predictions, shared by predict, plan and simulate.
#include <iosfwd>
#include <string>

#include "simulator/cost_model.hpp"
#include "simulator/scenario.hpp"

namespace sixfold::cli {

std::string scenario_header(const Scenario& s);
void print_prediction(std::ostream& out, const Prediction& p);
std::string format_seconds(Seconds s);
// Whether standard output is a terminal (progress only then).
bool stdout_is_terminal();

}  // namespace sixfold::cli
