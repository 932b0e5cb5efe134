// The step simulator: schedule bubbles and in-flight micro-batches on crafted pipelines, agreement
// with the closed form when nothing overlaps, and the seed's DP overlap experiment.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {

// A uniform pipeline without communication: every chunk's forward takes 1/v, backward 2/v.
PipelineInputs uniform_pipeline(Schedule schedule, int p, int v, Count m, Seconds weight_grad_share = 0) {
  PipelineInputs in;
  in.schedule = schedule;
  in.micro_batches = m;
  for (int s = 0; s < p; ++s) {
    StageInputs st;
    for (int c = 0; c < v; ++c) {
      ChunkInputs ch;
      ch.forward.compute = 1.0 / v;
      ch.backward.compute = (2.0 - weight_grad_share) / v;
      ch.weight_grad.compute = weight_grad_share / v;
      ch.activations = 1.0 / v;
      st.chunks.push_back(ch);
    }
    st.static_memory = 10;
    in.stages.push_back(st);
  }
  return in;
}

double bubble_fraction(const SimulationResult& r, int stage) { return r.stages[size_t(stage)].bubble / r.step_time; }

}  // namespace

TEST_CASE("1F1B bubble fraction is (p-1)/(m+p-1) without communication") {
  for (int p : {2, 4, 8})
    for (Count m : {1, 4, 8, 13, 32}) {
      const SimulationResult r = simulate_pipeline(uniform_pipeline(Schedule::OneFOneB, p, 1, m));
      CAPTURE(p);
      CAPTURE(m);
      CHECK(r.step_time == doctest::Approx(3.0 * double(m + p - 1)));
      for (int s = 0; s < p; ++s) CHECK(bubble_fraction(r, s) == doctest::Approx(double(p - 1) / double(m + p - 1)));
    }
}

TEST_CASE("interleaved bubble fraction is (p-1)/(v m+p-1) without communication") {
  for (int p : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (Count groups : {1, 2, 4}) {
        const Count m = groups * p;
        const SimulationResult r = simulate_pipeline(uniform_pipeline(Schedule::Interleaved, p, v, m));
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        CHECK(r.step_time == doctest::Approx(3.0 * double(v * m + p - 1) / v));
        CHECK(bubble_fraction(r, 0) == doctest::Approx(double(p - 1) / double(v * m + p - 1)));
      }
}

TEST_CASE("peak in-flight micro-batches: m for GPipe, p on stage 0 for 1F1B") {
  const int p = 4;
  const Count m = 12;
  const SimulationResult gpipe = simulate_pipeline(uniform_pipeline(Schedule::GPipe, p, 1, m));
  for (const auto& s : gpipe.stages) CHECK(s.peak_in_flight == doctest::Approx(double(m)));
  const SimulationResult ofob = simulate_pipeline(uniform_pipeline(Schedule::OneFOneB, p, 1, m));
  for (int s = 0; s < p; ++s) CHECK(ofob.stages[size_t(s)].peak_in_flight == doctest::Approx(double(p - s)));
  // Memory follows: static plus one activation unit per micro-batch in flight.
  CHECK(ofob.stages[0].peak_memory == doctest::Approx(10.0 + p));
  CHECK(gpipe.stages[0].peak_memory == doctest::Approx(10.0 + double(m)));
  // GPipe takes as long as 1F1B (same bubble) but holds more.
  CHECK(gpipe.step_time == doctest::Approx(ofob.step_time));
}

TEST_CASE("ZB-H1 fills the cool-down bubble with deferred weight gradients") {
  const int p = 4;
  const Count m = 8;
  const SimulationResult ofob = simulate_pipeline(uniform_pipeline(Schedule::OneFOneB, p, 1, m));
  const SimulationResult zb = simulate_pipeline(uniform_pipeline(Schedule::ZeroBubble, p, 1, m, 1.0));
  MESSAGE("ZB-H1 step " << zb.step_time << ", 1F1B " << ofob.step_time);
  CHECK(zb.step_time < ofob.step_time - 0.5);
  // Never better than the compute alone.
  CHECK(zb.step_time >= 3.0 * m - 1e-9);
  // The same memory as 1F1B on stage 0.
  CHECK(zb.stages[0].peak_in_flight == doctest::Approx(double(p)));
}

TEST_CASE("interleaved pipelines need micro-batches divisible by pp") {
  CHECK_THROWS_AS(simulate_pipeline(uniform_pipeline(Schedule::Interleaved, 4, 2, 6)), LayoutError);
}

namespace {

// The closed form's step time with the pipeline sends taken out of its stage times (the sends are
// where the two models knowingly differ: see the GPipe and interleaved notes in the report).
Seconds closed_form_without_sends(const ModelSpec& model, const HardwareProfile& hw, const Workload& w, const Layout& l,
                                  const StepProgram& prog, const PipelineInputs& in) {
  std::vector<StageTime> st = stage_times(model, hw, w, l, prog);
  const int v = l.virtual_stages();
  Seconds dp = 0, opt = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    const Seconds p2p = in.stages[i].send;
    if (!prog.stages[i].last) st[i].forward -= v * p2p;
    if (!prog.stages[i].first) st[i].backward -= v * p2p;
    dp = std::max(dp, st[i].dp);
    opt = std::max(opt, st[i].optimizer);
  }
  return pipeline_time(l, prog.micro_batches, st) + dp + opt;
}

}  // namespace

TEST_CASE("with overlap off the simulator agrees with the closed form within 1% on random layouts") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  // Uniform stages: a tiny vocabulary makes the embedding and the LM head negligible, so every
  // stage (and every virtual chunk) holds the same layers and the same work.
  std::vector<ModelSpec> models = {load_model("seed-tp"), load_model("pythia-160m"), load_model("gpt-1.7b"),
                                   load_model("llama3-8b"), load_model("llama3-70b")};
  for (ModelSpec& m : models) m.vocab = 64;
  std::mt19937 rng(1234);
  auto pick = [&](std::initializer_list<int> options) {
    std::uniform_int_distribution<size_t> d(0, options.size() - 1);
    return *(options.begin() + d(rng));
  };
  int checked = 0, attempts = 0, pipelined = 0, interleaved = 0, gpipe = 0;
  double worst = 0, worst_with_sends = 0;
  while (checked < 1000 && attempts < 20000) {
    ++attempts;
    const ModelSpec& model = models[size_t(pick({0, 1, 2, 3, 4}))];
    Layout l;
    l.tp = pick({1, 2, 4, 8});
    l.pp = pick({1, 2, 4, 8});
    l.dp = pick({1, 2, 4, 8});
    l.zero = pick({0, 1});
    l.micro_batch = pick({1, 2});
    l.recompute = pick({0, 1}) ? Recompute::Full : Recompute::None;
    l.sp = l.tp > 1 && pick({0, 1});
    l.dp_overlap = DpOverlap::None;
    l.tp_overlap = false;
    const int schedule = pick({0, 1, 2, 2, 2});
    l.schedule = l.pp == 1 ? Schedule::OneFOneB : schedule == 0 ? Schedule::GPipe : schedule == 1 ? Schedule::OneFOneB : Schedule::Interleaved;
    if (l.schedule == Schedule::Interleaved) l.vpp = pick({2, 3, 5});
    Workload w;
    w.overlap_p2p_comm = false;  // pipeline sends block, like every other overlap here
    w.seq = std::min<Count>(model.max_seq, pick({512, 1024, 2048}));
    w.global_batch = Count(l.dp) * l.micro_batch * pick({1, 2, 4, 8, 16});
    if (model.layers % (l.pp * l.vpp) != 0) continue;
    try {
      validate_layout(model, l, w, 0);
    } catch (const LayoutError&) {
      continue;
    }
    const StepProgram prog = expand_step_program(model, l, w);
    PipelineInputs in = pipeline_inputs(model, hw, w, l, prog);
    // Uniform stages is the precondition: skip layouts whose chunks differ by more than 1% (on small
    // models the embedding and loss ops of the first and last chunk still weigh a few per cent).
    Seconds longest = 0, shortest = 1e30;
    for (const StageInputs& s : in.stages)
      for (const ChunkInputs& c : s.chunks) {
        const Seconds d = c.forward.duration() + c.backward.duration() + c.weight_grad.duration();
        longest = std::max(longest, d);
        shortest = std::min(shortest, d);
      }
    if (longest - shortest > 0.01 * longest) continue;
    const Seconds closed = closed_form_without_sends(model, hw, w, l, prog, in);
    for (StageInputs& s : in.stages) s.send = 0;
    in.record_tasks = false;
    const SimulationResult played = simulate_pipeline(in);
    const Seconds simulated = played.step_time;
    const double rel = std::abs(simulated - closed) / closed;
    worst = std::max(worst, rel);
    CAPTURE(model.name);
    CAPTURE(describe(l));
    CAPTURE(to_string(l.schedule));
    CAPTURE(w.global_batch);
    CHECK(rel < 0.01);
    // Memory: the simulated peak (static state plus the activations in flight at the worst moment)
    // equals the closed form's in-flight count times the saved activations. Interleaved within 3%:
    // the closed form gives every in-flight chunk 1/v of the stage's activations, the simulation
    // knows which chunks are in flight (the first chunk also holds the embedding output, which
    // matters with full recompute, where a layer saves only its input).
    const std::vector<MemoryBreakdown> memory = predict_memory(model, hw, w, l, prog);
    const double memory_tolerance = l.schedule == Schedule::Interleaved ? 0.03 : 0.01;
    for (size_t i = 0; i < memory.size(); ++i)
      CHECK(played.stages[i].peak_memory == doctest::Approx(memory[i].total()).epsilon(memory_tolerance));
    if (l.schedule == Schedule::OneFOneB) {
      // 1F1B with its blocking sends: both models charge each send once per micro-batch; only the
      // first and last stage's missing send makes the stages slightly uneven.
      const Prediction full = predict(model, hw, w, l, prog);
      const double rel_sends = std::abs(simulate_step(model, hw, w, l, prog, false).step_time - full.step_time) / full.step_time;
      worst_with_sends = std::max(worst_with_sends, rel_sends);
      CHECK(rel_sends < 0.02);
    }
    ++checked;
    pipelined += l.pp > 1;
    interleaved += l.schedule == Schedule::Interleaved;
    gpipe += l.schedule == Schedule::GPipe;
  }
  MESSAGE("worst relative difference " << worst << " (1F1B with sends " << worst_with_sends << ") over " << checked
                                       << " layouts: " << pipelined << " pipelined, " << interleaved << " interleaved, "
                                       << gpipe << " GPipe");
  CHECK(checked == 1000);
  CHECK(pipelined >= 300);
  CHECK(interleaved >= 80);
  CHECK(gpipe >= 100);
}

TEST_CASE("collectives that share a link share its bandwidth") {
  // Two stages; stage 1's gradient reduction runs while it still sends gradients to stage 0.
  auto run = [](Link dp_link) {
    PipelineInputs in = uniform_pipeline(Schedule::OneFOneB, 2, 1, 4);
    in.pp_link = Link::InterNode;
    in.dp_link = dp_link;
    in.dp_overlap = DpOverlap::PerLayer;
    for (StageInputs& s : in.stages) s.send = 0.5;
    // Only the last stage reduces, long enough to end the step; its first reduction starts while
    // its last gradient send is on the wire.
    in.stages[1].chunks[0].reductions = 4;
    in.stages[1].chunks[0].reduction = 3.0;
    return simulate_pipeline(in);
  };
  const SimulationResult separate = run(Link::IntraNode);
  const SimulationResult shared = run(Link::InterNode);
  Seconds slowdown = 0;
  for (const Task& t : shared.tasks) slowdown += t.slowdown;
  for (const Task& t : separate.tasks) CHECK(t.slowdown == 0);
  CHECK(slowdown > 0);
  CHECK(shared.step_time > separate.step_time);
}

TEST_CASE("uneven stages: the heavier stage sets the pace and holds the breakdown") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const ModelSpec model = load_model("gpt-1.7b");  // 24 layers
  Layout l;
  l.pp = 4;
  l.first_stage_layers = 3;
  l.last_stage_layers = 3;  // the middle stages get 9 each
  Workload w;
  w.seq = 2048;
  w.global_batch = 16;
  validate_layout(model, l, w, 0);
  const SimulationResult r = simulate_step(model, hw, w, l);
  CHECK((r.bottleneck_stage == 1 || r.bottleneck_stage == 2));
  CHECK(r.stages[1].compute > 2 * r.stages[0].compute);
  CHECK(r.stages[0].bubble > r.stages[1].bubble);
  // The breakdown adds up to the step.
  const TimeBreakdown& t = r.breakdown;
  CHECK(t.compute + t.dispatch_overhead + t.tp_comm + t.cp_comm + t.ep_comm + t.pp_comm + t.dp_comm + t.optimizer +
            t.bubble == doctest::Approx(r.step_time));
  // Memory peaks while micro-batches are in flight, above the static part.
  for (const StageSimulation& s : r.stages) CHECK(s.peak_memory > s.static_memory);
}
