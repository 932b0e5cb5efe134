// Benchmark: one simulated training step of Llama-3.1-405B on 16384 H100s (TP 8, PP 16, DP 128,
// global batch 2048 sequences of 8192 tokens), 1F1B and interleaved. Target: < 50 ms per simulated
// step (issue 4), possible because one representative rank per pipeline stage is simulated.
// Prints one line per layout: median and worst wall time over the repetitions, and the result.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

int main() {
  const ModelSpec model = load_model("llama3.1-405b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload work;
  work.seq = 8192;
  work.global_batch = 2048;
  struct Variant {
    Schedule schedule;
    int vpp;
  };
  const std::vector<Variant> variants = {{Schedule::OneFOneB, 1}, {Schedule::Interleaved, 2}, {Schedule::ZeroBubble, 1}};
  bool ok = true;
  std::printf("%-12s %4s %8s %12s %12s %12s %12s %8s\n", "schedule", "vpp", "tasks", "median_ms", "worst_ms",
              "step_s", "closed_s", "target");
  for (const Variant& v : variants) {
    Layout l;
    l.tp = 8;
    l.pp = 16;
    l.dp = 128;
    l.sp = true;
    l.zero = 1;
    l.recompute = Recompute::Selective;
    l.schedule = v.schedule;
    l.vpp = v.vpp;
    // 126 layers over 16 stages: 6 on the first (it also holds the embedding), 8 on the others.
    l.first_stage_layers = 6;
    l.last_stage_layers = 8;
    validate_layout(model, l, work, 16384);
    std::vector<double> ms;
    SimulationResult r;
    for (int rep = 0; rep < 15; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      // The whole path a planner refinement pays: expand the program, price it, simulate.
      r = simulate_step(model, hw, work, l, expand_step_program(model, l, work), false);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const SimulationResult traced = simulate_step(model, hw, work, l);
    const Prediction closed = predict(model, hw, work, l);
    const bool pass = ms[ms.size() / 2] < 50.0;
    ok = ok && pass;
    std::printf("%-12s %4d %8zu %12.2f %12.2f %12.3f %12.3f %8s\n", to_string(v.schedule).c_str(), v.vpp,
                traced.tasks.size(), ms[ms.size() / 2], ms.back(), r.step_time, closed.step_time, pass ? "ok" : "SLOW");
  }
  return ok ? 0 : 1;
}
