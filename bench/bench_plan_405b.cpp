// Benchmark: the whole layout search for Llama-3.1-405B on 16384 H100 80GB, sequence 8192,
// global batch 2048 sequences (the acceptance figure: under 1 s wall on 2 cores), and the
// comparison with Meta's published layout (TP 8, CP 1, PP 16, DP 128; Dubey et al. 2024, Table 4).
// Usage: bench_plan_405b [threads]   (default 2)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "models/model_zoo.hpp"
#include "planner/planner.hpp"
#include "simulator/cost_model.hpp"

using namespace sixfold;

int main(int argc, char** argv) {
  PlanRequest rq;
  rq.model = load_model("llama3.1-405b");
  rq.hardware = load_hardware("h100-sxm-80g");
  rq.gpus = 16384;
  rq.work.seq = 8192;
  rq.work.global_batch = 2048;
  rq.threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const auto t0 = std::chrono::steady_clock::now();
  const PlanResult r = plan(rq);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("405B / 16384 H100: %.3f s wall on %d threads; meshes %lld, enumerated %lld, memory checked %lld, "
              "priced %lld, fits %zu\n",
              wall, rq.threads, (long long)r.meshes, (long long)r.enumerated, (long long)r.memory_checked,
              (long long)r.evaluated, r.ranked.size());
  for (const auto& [k, v] : r.pruned) std::printf("  pruned %-55s %lld\n", k.c_str(), (long long)v);
  if (!r.feasible()) {
    std::printf("no layout fits\n");
    return 1;
  }
  const Candidate& best = r.ranked.front();
  std::printf("best: %s schedule=%s dp-overlap=%s: step %.3f s, peak %.2f GiB\n", describe(best.layout).c_str(),
              to_string(best.layout.schedule).c_str(), to_string(best.layout.dp_overlap).c_str(), best.step_time,
              best.peak_memory / kGiB);
  // Meta's layout: TP 8, CP 1, PP 16 (126 layers: 7 + 14 x 8 + 7 ... first and last stage lighter), DP 128,
  // sharded optimizer and gradients (FSDP-style ZeRO); interleaved schedule.
  Layout meta;
  meta.tp = 8; meta.pp = 16; meta.cp = 1; meta.dp = 128; meta.sp = true; meta.zero = 1; meta.micro_batch = 1;
  meta.first_stage_layers = 7; meta.last_stage_layers = 7;
  meta.schedule = Schedule::OneFOneB;
  const Prediction pm = predict(rq.model, rq.hardware, rq.work, meta);
  size_t rank = 0;
  while (rank < r.ranked.size() && r.ranked[rank].step_time < pm.step_time) ++rank;
  std::printf("Meta's layout (%s): step %.3f s, peak %.2f GiB; planner's pick is %.1f%% faster; Meta's would rank ~%zu\n",
              describe(meta).c_str(), pm.step_time, pm.peak_memory / kGiB, 100.0 * (pm.step_time / best.step_time - 1),
              rank + 1);
  return best.step_time <= pm.step_time ? 0 : 1;
}
