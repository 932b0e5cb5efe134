// Refinement: the closed form ranks millions of layouts in microseconds each but prices the
// pipeline as uniform stages with overlap rules in closed form; the step simulator plays the
// schedule exactly (uneven first/last stages, DP reduction and ZeRO-3 prefetch as they interleave
// with the backward). The planner re-prices only its top few with the simulator and lets it decide
// among them (DESIGN.md, "Two speeds of the same model").
#include <algorithm>
#include <atomic>
#include <thread>

#include "models/step_program.hpp"
#include "planner/planner.hpp"
#include "simulator/step_simulator.hpp"

namespace sixfold {

void refine_with_simulator(const PlanRequest& rq, PlanResult& res, int count) {
  const size_t k = std::min(res.ranked.size(), size_t(std::max(0, count)));
  res.refined = int(k);
  if (k == 0) return;
  // Each candidate is simulated independently into its own slot, so the thread count does not
  // change the outcome.
  int threads = rq.threads > 0 ? rq.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, int(k)));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < k; i = next++) {
      Candidate& c = res.ranked[i];
      const StepProgram program = expand_step_program(rq.model, c.layout, rq.work);
      c.simulated_step_time = simulate_step(rq.model, rq.hardware, rq.work, c.layout, program, false).step_time;
    }
  };
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work);
    for (auto& th : pool) th.join();
  }
  std::sort(res.ranked.begin(), res.ranked.begin() + std::ptrdiff_t(k), [](const Candidate& a, const Candidate& b) {
    if (a.simulated_step_time != b.simulated_step_time) return a.simulated_step_time < b.simulated_step_time;
    return candidate_better(a, b);
  });
}

}  // namespace sixfold
