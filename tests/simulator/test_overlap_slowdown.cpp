// A collective hidden behind compute still costs the compute it hides behind
// (overlap::hiding_cost, HardwareProfile::overlap_slowdown; Lee et al. 2025, arXiv 2507.03114):
// the closed form and the step simulator charge the same cost, and a slowdown of 0 is the ideal
// overlap of before. The CP ring hides behind the attention it runs under, forward and backward.
#include <doctest/doctest.h>

#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_cost.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/overlap_rules.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {
struct Case {
  const char* name;
  int dp, tp, zero;
  bool tp_overlap;
};
}  // namespace

TEST_CASE("hiding_cost charges the hidden share of a collective, nothing of its exposed share") {
  CHECK(overlap::hiding_cost(10e-3, 4e-3, 0.2) == doctest::Approx(1.2e-3));
  CHECK(overlap::hiding_cost(10e-3, 10e-3, 0.2) == 0);
  CHECK(overlap::hiding_cost(10e-3, 12e-3, 0.2) == 0);  // more exposed than the collective: nothing hidden
  CHECK(overlap::hiding_cost(10e-3, 0, 0) == 0);
}

TEST_CASE("overlapped DP and TP traffic slows the step by the slowdown times what it hides, in both predictors") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  for (const Case& c : {Case{"DDP dp8", 8, 1, 0, false}, Case{"distributed optimizer dp4 tp2", 4, 2, 1, true},
                        Case{"FSDP-like zero3 dp8", 8, 1, 3, false}}) {
    const std::string name = c.name;
    CAPTURE(name);
    Layout l;
    l.dp = c.dp;
    l.tp = c.tp;
    l.sp = c.tp > 1;
    l.tp_overlap = c.tp_overlap;
    l.zero = c.zero;
    l.micro_batch = 1;
    l.recompute = Recompute::Full;
    l.dp_overlap = DpOverlap::Bucketed;
    validate_layout(m, l, w, c.dp * c.tp);
    HardwareProfile ideal = load_hardware("h100-sxm-80g");
    ideal.overlap_slowdown = 0;
    HardwareProfile real = ideal;
    real.overlap_slowdown = 0.189;
    const Prediction a = predict(m, ideal, w, l), b = predict(m, real, w, l);
    // Some traffic hides (else there is nothing to test), and hiding it is not free.
    CHECK(b.step_time > a.step_time);
    MESSAGE(name << ": ideal " << a.step_time << " s, with the slowdown " << b.step_time << " s");
    const SimulationResult sa = simulate_step(m, ideal, w, l), sb = simulate_step(m, real, w, l);
    MESSAGE(name << ": simulator ideal " << sa.step_time << " s, with the slowdown " << sb.step_time << " s");
    CHECK(sb.step_time > sa.step_time);
    // The two predictors agree on the step with the cost charged; where the DP stream is one
    // reduction pass (DDP, the distributed optimizer) they charge exactly the same cost. ZeRO-3's
    // gathers queue behind reductions on the simulator's one DP stream, so there it measures less
    // overlap than the closed form's per-layer bound (bench/RESULTS.md).
    CHECK(std::abs(sb.step_time - b.step_time) < 0.03 * b.step_time);
    if (c.zero < 3) CHECK(sb.step_time - sa.step_time == doctest::Approx(b.step_time - a.step_time).epsilon(1e-3));
  }
}

TEST_CASE("the CP ring hides behind the attention in the backward as in the forward") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l;
  l.cp = 2;
  Workload w;
  w.seq = 16384;
  w.global_batch = 4;
  const StepProgram p = expand_step_program(m, l, w);
  const OpPricer pricer(hw, l, w.dtype);
  const auto& fwd = p.dense_layer().forward;
  const auto& bwd = p.dense_layer().backward;
  // The backward list holds the attention's backward, then its exchange of K, V and dK, dV.
  size_t at = bwd.size();
  for (size_t i = 0; i + 1 < bwd.size(); ++i)
    if (bwd[i].kind == OpKind::Attention && bwd[i + 1].group == Group::CP) at = i;
  REQUIRE(at < bwd.size());
  const Seconds ring = pricer.time(bwd[at + 1]), attention = pricer.time(bwd[at]);
  REQUIRE(ring < attention);  // 16k tokens: the exchange is shorter than the blocks it runs under
  const OpListCost f = price_op_list(fwd, 0, pricer, false), b = price_op_list(bwd, 0, pricer, false);
  CHECK(b.cp_raw == doctest::Approx(ring));
  // Hidden: what remains is the compute it slows (overlap_slowdown of its time), as in the forward.
  CHECK(b.cp_exposed == doctest::Approx(hw.overlap_slowdown * ring));
  CHECK(f.cp_exposed == doctest::Approx(hw.overlap_slowdown * f.cp_raw));
}
