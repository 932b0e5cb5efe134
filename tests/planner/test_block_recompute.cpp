// Megatron's block recompute (--recompute-granularity full --recompute-method block
// --recompute-num-layers N): the first N layers of each virtual stage recompute, the others keep
// every activation. Layout::recompute_num_layers; priced by every layer of the cost model.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "planner/exporters.hpp"
#include "planner/planner.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/io/scenario.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {

Workload workload() {
  Workload w;
  w.seq = 4096;
  w.global_batch = 32;
  return w;
}

// llama3-8b's 32 layers on pp 4 x vpp 2: virtual stages of 4 layers.
Layout interleaved(int num_layers, Recompute r = Recompute::Full) {
  Layout l;
  l.dp = 2;
  l.tp = 2;
  l.sp = true;
  l.pp = 4;
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  l.recompute = r;
  l.recompute_num_layers = num_layers;
  return l;
}

Prediction price(const Layout& l) {
  static const ModelSpec m = load_model("llama3-8b");
  static const HardwareProfile hw = load_hardware("h100-sxm-80g");
  validate_layout(m, l, workload(), l.gpus());
  return predict(m, hw, workload(), l);
}

}  // namespace

TEST_CASE("block recompute keeps the layers of each virtual stage past the first N, and counts the rest") {
  const ModelSpec m = load_model("llama3-8b");
  for (int n : {1, 2, 3}) {
    CAPTURE(n);
    const StepProgram p = expand_step_program(m, interleaved(n), workload());
    for (const StageProgram& st : p.stages) {
      CHECK(st.dense_layers == 8);
      CHECK(st.kept_dense_layers == 2 * (4 - n));  // two virtual stages of four layers each
      int recomputed = 0, kept = 0;
      for (const LayerRun& run : layer_runs(p, st)) {
        if (std::string(run.part) == "dense") recomputed += run.layers;
        if (std::string(run.part) == "dense_kept") kept += run.layers;
      }
      CHECK(recomputed == 2 * n);
      CHECK(kept == 2 * (4 - n));
    }
    CHECK(fully_recomputed_layers(m, interleaved(n)) == 4 * 2 * n);
    // The kept layers run the forward once: their backward has no re-run forward.
    CHECK(p.parts->dense_kept.recompute_ops == 0);
    CHECK(p.parts->dense.recompute_ops > 0);
    CHECK(p.parts->dense_kept.saved > p.parts->dense.saved);
  }
  // As many layers as a virtual stage holds: every layer recomputes, nothing is kept.
  const StepProgram all = expand_step_program(m, interleaved(4), workload());
  for (const StageProgram& st : all.stages) CHECK(st.kept_dense_layers == 0);
  CHECK(fully_recomputed_layers(m, interleaved(0)) == 32);
  CHECK(fully_recomputed_layers(m, interleaved(0, Recompute::Selective)) == 0);
}

TEST_CASE("block recompute sits between no recompute and full: fewer recomputed layers, less time and more memory") {
  const Prediction none = price(interleaved(0, Recompute::None));
  const Prediction full = price(interleaved(0));
  Prediction previous = none;
  for (int n : {1, 2, 3}) {
    CAPTURE(n);
    const Prediction b = price(interleaved(n));
    CHECK(b.step_time > previous.step_time);
    CHECK(b.peak_memory < previous.peak_memory);
    CHECK(b.step_time < full.step_time);
    CHECK(b.peak_memory > full.peak_memory);
    CHECK(b.time.recompute > 0);
    previous = b;
  }
  // Block recompute of a whole virtual stage is full recompute, to the byte and the nanosecond.
  const Prediction whole = price(interleaved(4));
  CHECK(whole.step_time == doctest::Approx(full.step_time).epsilon(1e-12));
  CHECK(whole.peak_memory == doctest::Approx(full.peak_memory).epsilon(1e-12));
  // Hardware FLOPs count the recomputed forward of the recomputed layers only.
  const ModelSpec m = load_model("llama3-8b");
  const double f_none = step_flops(m, workload(), interleaved(0, Recompute::None)).hardware;
  const double f_full = step_flops(m, workload(), interleaved(0)).hardware;
  const double f_half = step_flops(m, workload(), interleaved(2)).hardware;
  CHECK(f_half > f_none);
  CHECK(f_half < f_full);
}

TEST_CASE("block recompute: the simulated memory timeline peaks where the closed form does, per stage") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = interleaved(1);
  const StepProgram prog = expand_step_program(m, l, workload());
  const SimulationResult sim = simulate_step(m, hw, workload(), l, prog, false);
  const std::vector<MemoryBreakdown> closed = predict_memory(m, hw, workload(), l, prog);
  for (size_t i = 0; i < closed.size(); ++i)
    CHECK(sim.stages[i].peak_memory == doctest::Approx(closed[i].total()).epsilon(1e-6));
}

TEST_CASE("block recompute is Megatron's, of full recompute, and exports as Megatron's flags") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w = workload();
  CHECK_THROWS_AS(validate_layout(m, interleaved(2, Recompute::Selective), w, 16), LayoutError);
  w.framework = Framework::Torchtitan;
  CHECK_THROWS_AS(validate_layout(m, interleaved(2), w, 16), LayoutError);
  w.framework = Framework::DeepSpeed;
  CHECK_THROWS_AS(validate_layout(m, interleaved(2), w, 16), LayoutError);

  Scenario s;
  s.model = m;
  s.model_name = "llama3-8b";
  s.hardware = load_hardware("h100-sxm-80g");
  s.hardware_name = "h100-sxm-80g";
  s.gpus = 16;
  s.work = workload();
  s.layout = interleaved(2);
  const std::string flags = export_megatron(s);
  CHECK(flags.find("--recompute-granularity full") != std::string::npos);
  CHECK(flags.find("--recompute-method block") != std::string::npos);
  CHECK(flags.find("--recompute-num-layers 2") != std::string::npos);
  s.layout = interleaved(0);
  const std::string uniform = export_megatron(s);
  CHECK(uniform.find("--recompute-method uniform") != std::string::npos);
  CHECK(uniform.find("--recompute-num-layers 1") != std::string::npos);
  s.layout = interleaved(2);
  CHECK_THROWS(export_torchtitan(s));
  CHECK_THROWS(export_deepspeed(s));
}

TEST_CASE("the planner tries block recompute under Megatron between selective and full, and no other framework does") {
  SearchOptions o;
  const ModelSpec m = load_model("llama3-8b");
  const auto policies = recompute_policies(m, o);
  int blocks = 0;
  bool full_seen = false;
  for (const RecomputePolicy& p : policies) {
    if (p.num_layers > 0) {
      CHECK(p.recompute == Recompute::Full);
      CHECK_FALSE(full_seen);  // lighter (fewer layers) first, plain full last
      ++blocks;
    }
    if (p.recompute == Recompute::Full && p.num_layers == 0) full_seen = true;
  }
  CHECK(blocks == 9);  // 1, 2, 3, 4, 6, 8, 12, 16, 24 of 32 layers
  for (Framework f : {Framework::DeepSpeed, Framework::Torchtitan}) {
    SearchOptions r;
    restrict_to_framework(r, f);
    for (const RecomputePolicy& p : recompute_policies(m, r)) CHECK(p.num_layers == 0);
  }
}

TEST_CASE("torchtitan's every k-th layer checkpointing: the rank's blocks counted over its virtual stages") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w = workload();
  w.framework = Framework::Torchtitan;
  Layout l;
  l.dp = 4;
  l.pp = 4;  // 8 layers a rank
  l.recompute = Recompute::Full;
  l.recompute_every = 3;
  validate_layout(m, l, w, 16);
  StepProgram p = expand_step_program(m, l, w);
  for (const StageProgram& st : p.stages) CHECK(st.kept_dense_layers == 8 - 2);  // blocks 3 and 6 recompute
  CHECK(fully_recomputed_layers(m, l) == 4 * 2);
  // Interleaved (torchtitan splits unevenly; here 4 + 4): the count runs on from one virtual stage
  // to the next, so blocks 3 and 6 of the rank, the third of its first virtual stage and the second
  // of its second.
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  const std::vector<int> chunks = virtual_stage_layer_counts(m, l);
  CHECK_FALSE(keeps_activations(chunks, l, 0, 2));
  CHECK(keeps_activations(chunks, l, 0, 3));
  CHECK_FALSE(keeps_activations(chunks, l, 4, 1));  // chunk 4 = virtual stage 1 of rank 0
  CHECK(keeps_activations(chunks, l, 4, 2));
  p = expand_step_program(m, l, w);
  for (const StageProgram& st : p.stages) CHECK(st.kept_dense_layers == 6);

  // Between no recompute and full, in time and memory.
  l.vpp = 1;
  l.schedule = Schedule::OneFOneB;
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  auto price_tt = [&](Recompute r, int every) {
    Layout t = l;
    t.recompute = r;
    t.recompute_every = every;
    validate_layout(m, t, w, 16);
    return predict(m, hw, w, t);
  };
  const Prediction none = price_tt(Recompute::None, 0), full = price_tt(Recompute::Full, 0);
  const Prediction every2 = price_tt(Recompute::Full, 2), every4 = price_tt(Recompute::Full, 4);
  CHECK(every4.step_time < every2.step_time);
  CHECK(every4.peak_memory > every2.peak_memory);
  CHECK(every2.step_time < full.step_time);
  CHECK(every4.step_time > none.step_time);
  CHECK(every2.peak_memory > full.peak_memory);
  CHECK(every4.peak_memory < none.peak_memory);

  // Only torchtitan's, at least every 2nd layer, and exported as its selective_ac_option.
  Workload megatron = workload();
  CHECK_THROWS_AS(validate_layout(m, l, megatron, 16), LayoutError);
  Layout one = l;
  one.recompute_every = 1;
  CHECK_THROWS_AS(validate_layout(m, one, w, 16), LayoutError);
  Scenario s;
  s.model = m;
  s.model_name = "llama3-8b";
  s.hardware = hw;
  s.hardware_name = "h100-sxm-80g";
  s.gpus = 16;
  s.work = w;
  s.layout = l;
  s.layout.zero = 3;  // torchtitan runs pp with FSDP
  const std::string toml = export_torchtitan(s);
  CHECK(toml.find("mode = \"selective\"") != std::string::npos);
  CHECK(toml.find("selective_ac_option = \"3\"") != std::string::npos);
  CHECK_THROWS(export_megatron(s));
  CHECK_THROWS(export_deepspeed(s));

  // The planner tries it for torchtitan, lightest (every 8th) first, and for no other framework.
  SearchOptions o;
  restrict_to_framework(o, Framework::Torchtitan);
  std::vector<int> everies;
  for (const RecomputePolicy& p2 : recompute_policies(m, o))
    if (p2.every > 0) everies.push_back(p2.every);
  CHECK(everies == std::vector<int>{8, 6, 4, 3, 2});
  SearchOptions mo;
  restrict_to_framework(mo, Framework::Megatron);
  for (const RecomputePolicy& p2 : recompute_policies(m, mo)) CHECK(p2.every == 0);
}
