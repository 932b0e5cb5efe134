#pragma once
// A validation row's unstated choices, filled the way a user would (data/validation/README.md):
// the fastest layout that fits in memory over every unstated choice together.
#include <functional>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/io/scenario.hpp"

namespace sixfold {

struct RowFill {
  Prediction prediction;
  Layout layout;        // the row's layout with every unstated choice filled
  bool compile = false;  // torchtitan's torch.compile, stated or filled
  bool fits = false;     // false: nothing fits, and this is the layout needing the least memory
  std::vector<std::string> filled;  // "field=value" for each choice the row did not state
};

// Tries every combination of the row's unstated recompute policy (and Megatron's selective modules,
// block recompute, torchtitan's every k-th layer), micro-batch, ZeRO stage, virtual pipeline and
// torch.compile on scenario `s` (from scenario_from_row, with its run settings `run`), each priced
// by `price`. Throws Error when no combination is a valid layout.
RowFill fill_unstated_choices(const CsvTable& table, size_t row, const Scenario& s, const RunSettings& run,
                              const std::function<Prediction(const Scenario&)>& price);

}  // namespace sixfold
