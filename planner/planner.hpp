#pragma once
// The planner: walks the search space, prunes by the memory budget before pricing time, ranks the
// layouts that fit by predicted step time (ties: more memory headroom, then the simpler layout,
// then a fixed order on the layout's fields), in parallel and deterministically. Then the top few
// are re-priced with the step simulator and re-ranked by simulated step time (planner/refine.cpp).
#include <string>
#include <vector>

#include "common/progress.hpp"
#include "models/layout.hpp"
#include "models/model_spec.hpp"
#include "planner/search_space.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

// What the default budget leaves free on each GPU: room for the memory model's own error. Of the
// measured runs' peak memory, out of source (data/validation/published_runs.csv, 20 rows; nothing
// is fitted to memory), a new run is under-predicted by at most the ceil(0.9 (n + 1))-th smallest
// under-prediction with 90% probability (the conformal rank argument of the error bands): 7.50%
// (G18; only G13, -11.0%, is beyond). A layout is planned only if its predicted peak, that much
// larger, still fits: budget = capacity / (1 + margin). tests/planner/test_memory_budget.cpp
// recomputes the margin from the data. Override with --mem-budget.
inline constexpr double kMemoryUnderPredictionMargin = 0.0750;
Bytes default_memory_budget(const HardwareProfile& hw);

// `sixfold plan --refine` default: eight covers the close calls (the closed form's top layouts
// usually lie within a few percent of each other) for a few milliseconds of simulation each.
inline constexpr int kDefaultRefine = 8;

struct PlanRequest {
  ModelSpec model;
  HardwareProfile hardware;
  int gpus = 1;
  Workload work;
  Bytes memory_budget = 0;  // 0: default_memory_budget(hardware)
  SearchOptions search;
  int threads = 0;          // 0: std::thread::hardware_concurrency()
  int closest_count = 5;    // infeasible requests: how many closest layouts to keep
  // How many of the analytically best layouts to re-price with the step simulator and re-rank by
  // simulated step time (0: off, the library's default so that `ranked` stays in closed-form
  // order; `sixfold plan` turns it on with kDefaultRefine).
  int refine = 0;
  // Told of each mesh searched (its total set once the meshes are known); not owned, may be null.
  Progress* progress = nullptr;
};

struct Candidate {
  Layout layout;
  Seconds step_time = 0;  // 0 for a candidate that does not fit (not priced)
  Bytes peak_memory = 0;
  Seconds simulated_step_time = 0;  // the step simulator's, for the refined top candidates; else 0
};

struct PlanResult {
  Bytes budget = 0;
  Count meshes = 0;          // (dp, tp, pp, cp, ep, etp, stage split) combinations that passed
  Count enumerated = 0;      // layouts generated (before dominance and memory pruning)
  Count memory_checked = 0;  // layouts whose memory was predicted
  Count evaluated = 0;       // layouts priced for time (they fit the budget)
  PruneCounts pruned;        // constraint or reason -> count
  std::vector<Candidate> ranked;   // every priced layout, best first (the first `refined` by simulated time)
  int refined = 0;                 // how many leading candidates the step simulator re-priced and re-ranked
  std::vector<Candidate> closest;  // when nothing fits: the layouts that need the least memory
  bool feasible() const { return !ranked.empty(); }
};

// Ranking order: faster; then more headroom (less peak memory); then simpler; then layout_less.
bool candidate_better(const Candidate& a, const Candidate& b);

PlanResult plan(const PlanRequest& request);

// Re-prices the first `count` candidates of result.ranked with simulate_step and re-orders them by
// simulated step time (ties: candidate_better); the rest keep their analytical order. Runs on
// request.threads threads; the outcome does not depend on how many.
void refine_with_simulator(const PlanRequest& request, PlanResult& result, int count);

// Step time as predict() computes it, from an already expanded program (the planner's fast path;
// a test holds it equal to predict()).
Seconds fast_step_time(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout);

}  // namespace sixfold
