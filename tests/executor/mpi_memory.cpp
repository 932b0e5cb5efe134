// Measured activation memory of every rank against the cost model, under mpirun.
//   mpi_memory <case>
// Runs 2 float32 steps of the tiny model under the case's layout and checks, on every rank, that
// the executor's peak of the "activations" category lies within 5% of the cost model's
// activations + moe_activations + logits of the rank's pipeline stage (the mapping of
// `sixfold run`). Exit 0 on success, 1 on a mismatch, 2 on a usage error.
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "common/error.hpp"
#include "executor/runtime/run.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"
#include "tiny_model.hpp"

using namespace sixfold;

namespace {

constexpr double kTolerance = 0.05;

struct Case {
  Layout layout;
  bool moe = false;
};

std::map<std::string, std::function<Case()>> cases() {
  auto with = [](std::function<void(Case&)> f) {
    return [f] {
      Case c;
      c.layout.micro_batch = 2;
      f(c);
      return c;
    };
  };
  return {
      {"single", with([](Case&) {})},
      {"single_selective", with([](Case& c) { c.layout.recompute = Recompute::Selective; })},
      {"single_full", with([](Case& c) { c.layout.recompute = Recompute::Full; })},
      {"dp2", with([](Case& c) { c.layout.dp = 2; })},
      {"tp2", with([](Case& c) { c.layout.tp = 2; })},
      {"tp2_sp", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; })},
      {"tp2_sp_selective", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; c.layout.recompute = Recompute::Selective; })},
      {"pp2_1f1b", with([](Case& c) { c.layout.pp = 2; c.layout.micro_batch = 1; })},
      {"pp2_full", with([](Case& c) { c.layout.pp = 2; c.layout.micro_batch = 1; c.layout.recompute = Recompute::Full; })},
      {"single_block", with([](Case& c) { c.layout.recompute = Recompute::Full; c.layout.recompute_num_layers = 1; })},
      {"pp2_block", with([](Case& c) {
         c.layout.pp = 2; c.layout.micro_batch = 1; c.layout.recompute = Recompute::Full; c.layout.recompute_num_layers = 1; })},
      {"cp2", with([](Case& c) { c.layout.cp = 2; })},
      {"moe_ep2_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.ep = 2; c.moe = true; })},
      {"zero1_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.zero = 1; })},
      {"zero2_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.zero = 2; })},
      {"zero3_dp2_tp2", with([](Case& c) { c.layout.dp = 2; c.layout.tp = 2; c.layout.zero = 3; })},
      {"zero3_moe_ep2_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.ep = 2; c.layout.zero = 3; c.moe = true; })},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_memory <case>\n");
    return 2;
  }
  try {
    auto all = cases();
    auto it = all.find(argv[1]);
    if (it == all.end()) throw UsageError(std::string("unknown case ") + argv[1]);
    const Case c = it->second();
    const ModelSpec model = test::tiny_model(c.moe);
    const Workload work = test::tiny_workload();  // dtype fp32: 4-byte activations, as the run
    RunOptions opt;
    opt.steps = 2;
    opt.precision = Precision::Float32;
    opt.timeout_s = 60;
    const RunReport run = run_plan(model, c.layout, work, opt);
    if (run.rank != 0) return 0;
    const StepProgram prog = expand_step_program(model, c.layout, work);
    const auto predicted = predict_memory(model, load_hardware("h100-sxm-80g"), work, c.layout, prog);
    const int ranks_per_stage = c.layout.tp * c.layout.cp * c.layout.dp;  // Megatron's order: pp slowest
    bool ok = true;
    std::printf("%s: %s\n", argv[1], describe(c.layout).c_str());
    for (size_t r = 0; r < run.memory_per_rank.size(); ++r) {
      const MemoryBreakdown& p = predicted[r / ranks_per_stage];
      // The activation category peaks at the loss's backward on the last stage (the held softmax
      // and the transient logits), whichever moment the stage's total peaks at.
      const StageProgram& st = prog.stages[r / ranks_per_stage];
      const double want = p.activations + p.moe_activations + held_activations(c.layout, prog, st).post + st.edges->logits_bytes;
      const double got = run.memory_per_rank[r].peak_by_category[int(MemoryCategory::Activations)];
      const double diff = (got - want) / want;
      const bool pass = std::abs(diff) <= kTolerance;
      std::printf("  rank %zu stage %zu: activations measured %.0f B, predicted %.0f B (%+.2f%%)%s\n", r,
                  r / ranks_per_stage, got, want, 100 * diff, pass ? "" : "  MISMATCH");
      ok = ok && pass;
      // Model state is counted, not estimated: weights, gradients and optimizer state (fp32 Adam
      // moments; no master copy in fp32 training) equal the cost model's bytes exactly.
      const double states[3][2] = {
          {run.memory_per_rank[r].peak_by_category[int(MemoryCategory::Weights)], p.weights},
          {run.memory_per_rank[r].peak_by_category[int(MemoryCategory::Gradients)], p.gradients},
          {run.memory_per_rank[r].peak_by_category[int(MemoryCategory::Optimizer)], p.optimizer_states + p.master_weights}};
      const char* names[3] = {"weights", "gradients", "optimizer"};
      for (int k = 0; k < 3; ++k) {
        const bool exact = states[k][0] == states[k][1];
        if (!exact)
          std::printf("  rank %zu: %s measured %.0f B, predicted %.0f B  MISMATCH\n", r, names[k], states[k][0], states[k][1]);
        ok = ok && exact;
      }
    }
    return ok ? 0 : 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "usage error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
