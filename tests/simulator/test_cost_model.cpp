// The cost model against closed formulas from the literature (test oracles), and its invariants.
#include <doctest/doctest.h>

#include <cmath>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/op_cost.hpp"

using namespace sixfold;

namespace {

// A GPT-3-style layer (Korthikanti et al. 2022, arXiv 2205.05198): MHA, ffn = 4h, GELU,
// LayerNorm, dropout, 2-byte activations.
ModelSpec gpt_like(int layers = 4, Count h = 1024, int heads = 16, Count vocab = 51200) {
  ModelSpec m;
  m.name = "gpt-test";
  m.layers = layers;
  m.hidden = h;
  m.ffn = 4 * h;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = int(h / heads);
  m.vocab = vocab;
  m.max_seq = 2048;
  m.norm = NormKind::LayerNorm;
  m.activation = Activation::GELU;
  m.dropout = true;
  m.learned_positions = true;
  m.rotary_fraction = 0;
  return m;
}

Bytes layer_activations(const ModelSpec& m, const Layout& l, const Workload& w) {
  return expand_step_program(m, l, w).dense_layer().saved;
}

}  // namespace

TEST_CASE("per-layer activations equal Korthikanti et al.'s formulas (Table 2)") {
  const ModelSpec m = gpt_like();
  Workload w;
  w.seq = 2048;
  w.global_batch = 8;
  w.flash_attention = false;
  const double s = double(w.seq), h = double(m.hidden), a = m.heads;
  for (int t : {1, 2, 4, 8}) {
    for (Count b : {1, 2}) {
      Layout l;
      l.tp = t;
      l.dp = 1;
      l.micro_batch = b;
      const double sbh = s * double(b) * h;
      CAPTURE(t);
      CAPTURE(b);
      // No SP, no recompute: sbh (10 + 24/t + 5as/(ht)).
      CHECK(layer_activations(m, l, w) == doctest::Approx(sbh * (10 + 24.0 / t + 5 * a * s / (h * t))).epsilon(1e-12));
      if (t > 1) {
        l.sp = true;
        // SP: sbh/t (34 + 5as/h).
        CHECK(layer_activations(m, l, w) == doctest::Approx(sbh / t * (34 + 5 * a * s / h)).epsilon(1e-12));
        // SP + selective recompute: 34 sbh / t.
        l.recompute = Recompute::Selective;
        CHECK(layer_activations(m, l, w) == doctest::Approx(sbh / t * 34).epsilon(1e-12));
        // SP + full recompute: the layer input, 2 sbh / t.
        l.recompute = Recompute::Full;
        CHECK(layer_activations(m, l, w) == doctest::Approx(2 * sbh / t).epsilon(1e-12));
        l.sp = false;
      }
      l.recompute = Recompute::Full;
      l.sp = false;
      CHECK(layer_activations(m, l, w) == doctest::Approx(2 * sbh).epsilon(1e-12));
    }
  }
}

TEST_CASE("model states follow the ZeRO paper's formulas (Rajbhandari et al. 2020, Figure 1)") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  w.dtype = Dtype::FP16;  // the paper's fp16 mixed precision: 2-byte weights and gradients
  const double psi = double(count_parameters(m).total);
  const double K = 12;  // fp32 master weights + Adam moments
  for (int n : {1, 2, 4, 8, 16, 64}) {
    for (int zero = 0; zero <= 3; ++zero) {
      Layout l;
      l.dp = n;
      l.zero = zero;
      const auto mem = predict_memory(m, hw, w, l, expand_step_program(m, l, w))[0];
      const double states = mem.weights + mem.gradients + mem.master_weights + mem.optimizer_states;
      double expected = 0;
      switch (zero) {
        case 0: expected = (2 + 2 + K) * psi; break;
        case 1: expected = 2 * psi + 2 * psi + K * psi / n; break;
        case 2: expected = 2 * psi + (2 + K) * psi / n; break;
        case 3: expected = (2 + 2 + K) * psi / n; break;
      }
      CAPTURE(n);
      CAPTURE(zero);
      // Shards are padded to whole parameters: at most one parameter per part off.
      CHECK(std::fabs(states - expected) <= 16.0);
    }
  }
}

TEST_CASE("parameters on the ranks of a layout add up to the model") {
  const ModelSpec m = load_model("llama3-70b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.dp = 2;
  const StepProgram prog = expand_step_program(m, l, w);
  Count sum = 0;
  for (const auto& st : prog.stages) sum += st.dense_params;
  // TP shards everything but the norms, which every TP rank keeps.
  const double norms = double(m.hidden) * (2.0 * m.layers + 1);
  CHECK(double(sum) * l.tp == doctest::Approx(double(count_parameters(m).total) + norms * (l.tp - 1)).epsilon(1e-9));
}

TEST_CASE("1F1B holds pp - i micro-batches on stage i, GPipe holds all of them") {
  Layout l;
  l.pp = 4;
  for (int i = 0; i < 4; ++i) CHECK(in_flight_micro_batches(l, 16, i) == 4 - i);
  CHECK(in_flight_micro_batches(l, 2, 0) == 2);
  l.schedule = Schedule::GPipe;
  CHECK(in_flight_micro_batches(l, 16, 0) == 16);
  l.schedule = Schedule::Interleaved;
  l.vpp = 2;
  // Megatron warm-up: (p - 1) * 2 + (v - 1) * p + 1 chunks = 11 chunks = 5.5 stage-equivalents.
  CHECK(in_flight_micro_batches(l, 16, 0) == doctest::Approx(5.5));
}

TEST_CASE("interleaved: the embedding's and the loss's chunks hold their own counts of micro-batches") {
  Layout l;
  l.pp = 4;
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  // Stage 0 runs 11 forwards before its first backward: chunk 0 for micro-batches 0-3, chunk 1 for
  // 0-3, chunk 0 for 4-6.
  CHECK(chunk_in_flight(l, 16, 0, 0) == 7);
  CHECK(chunk_in_flight(l, 16, 0, 1) == 4);
  // The last stage: chunk 0 for 0-3, then one micro-batch in the last chunk, where the loss lives.
  CHECK(chunk_in_flight(l, 16, 3, 0) == 4);
  CHECK(chunk_in_flight(l, 16, 3, 1) == 1);
  for (int st = 0; st < 4; ++st)
    CHECK(chunk_in_flight(l, 16, st, 0) + chunk_in_flight(l, 16, st, 1) == doctest::Approx(2 * in_flight_micro_batches(l, 16, st)));
  // Other schedules: every chunk is the stage.
  l.schedule = Schedule::OneFOneB;
  l.vpp = 1;
  CHECK(chunk_in_flight(l, 16, 3, 0) == 1);
  CHECK(chunk_in_flight(l, 16, 0, 0) == 4);
}

TEST_CASE("interleaved: the last stage's loss memory is one micro-batch's, not the stage's average") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.seq = 4096;
  w.global_batch = 32;
  Layout l;
  l.pp = 4;
  l.tp = 2;
  l.sp = true;
  const Prediction one = predict(m, hw, w, l);
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  const Prediction inter = predict(m, hw, w, l);
  // The last stage holds one micro-batch's loss under both schedules.
  CHECK(inter.stage_memory.back().logits == doctest::Approx(one.stage_memory.back().logits));
}

TEST_CASE("step time and throughput are consistent") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.seq = 8192;
  w.global_batch = 64;
  Layout l;
  l.dp = 8;
  l.zero = 1;
  const Prediction p = predict(m, hw, w, l);
  double sum = 0;
  for (const auto& [name, s] : p.time.components()) sum += s;
  CHECK(sum == doctest::Approx(p.step_time).epsilon(1e-9));
  // Compute by op class adds up to the step's compute (recompute included).
  double by_class = 0;
  for (const auto& [name, s] : p.compute_by_op_class) by_class += s;
  CHECK(by_class == doctest::Approx(p.time.compute).epsilon(1e-9));
  CHECK(p.compute_by_op_class.size() >= 4);
  CHECK(p.tokens_per_s_per_gpu == doctest::Approx(64.0 * 8192 / p.step_time / 8));
  CHECK(p.mfu > 0.2);
  CHECK(p.mfu < 0.9);
  // 6 N D: model FLOPs per token are about 6 x parameters (plus attention).
  const double six_nd = 6.0 * count_parameters(m).total * 64 * 8192;
  CHECK(step_flops(m, w, Recompute::None).model > six_nd * 0.9);
  CHECK(step_flops(m, w, Recompute::Full).hardware == doctest::Approx(step_flops(m, w, Recompute::None).model * 4 / 3));
}

TEST_CASE("more pipeline micro-batches shrink the bubble, recompute trades time for memory") {
  const ModelSpec m = load_model("llama3-70b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.seq = 4096;
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.dp = 2;
  w.global_batch = 8;
  const Prediction few = predict(m, hw, w, l);
  w.global_batch = 128;
  const Prediction many = predict(m, hw, w, l);
  CHECK(few.time.bubble / few.step_time > many.time.bubble / many.step_time);
  l.recompute = Recompute::Full;
  const Prediction full = predict(m, hw, w, l);
  CHECK(full.step_time > many.step_time);
  CHECK(full.peak_memory < many.peak_memory);
}

TEST_CASE("impossible layouts name the violated constraint") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  auto constraint = [&](Layout l, int gpus) -> std::string {
    try {
      validate_layout(m, l, w, gpus);
    } catch (const LayoutError& e) {
      return e.constraint();
    }
    return "";
  };
  Layout l;
  l.dp = 3;
  CHECK(constraint(l, 8) == "dp*tp*pp*cp = gpus");
  l = {};
  l.tp = 3;
  CHECK(constraint(l, 3) == "tp divides heads");
  l = {};
  l.dp = 8;
  l.micro_batch = 3;
  CHECK(constraint(l, 8) == "global batch divisible by dp*micro-batch");
  l = {};
  l.pp = 2;
  l.vpp = 3;
  l.schedule = Schedule::Interleaved;
  CHECK(constraint(l, 2) == "vpp divides layers per stage");
  l = {};
  l.ep = 2;
  CHECK(constraint(l, 1) == "ep and etp are 1 for a dense model");
  const ModelSpec moe = load_model("mixtral-8x7b");
  l = {};
  l.dp = 2;
  l.ep = 4;
  try {
    validate_layout(moe, l, w, 2);
    FAIL("expected a layout error");
  } catch (const LayoutError& e) {
    CHECK(std::string(e.constraint()) == "ep*etp divides tp*cp*dp");
  }
}

TEST_CASE("a GEMM takes at least the time to read its inputs and write its output once") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const double bandwidth = hw.memory_bandwidth * hw.memory_efficiency;
  for (Dtype d : {Dtype::BF16, Dtype::FP8}) {
    const OpPricer pricer(hw, Layout{}, d);
    // A skinny GEMM (a router's 1M tokens x 8 experts x 4096) is bound by reading its input.
    const double in = double(bytes_per_element(d)), out = d == Dtype::FP8 ? 2.0 : in;
    const double traffic = (1e6 * 4096 + 4096.0 * 8) * in + 1e6 * 8 * out;
    CHECK(pricer.gemm_time(1000000, 8, 4096, 1) >= traffic / bandwidth);
    // A large square GEMM stays bound by its FLOPs.
    const double flops = 2.0 * 8192 * 8192 * 8192;
    CHECK(pricer.gemm_time(8192, 8192, 8192, 1) > 3 * (3.0 * 8192 * 8192 * in) / bandwidth);
    CHECK(pricer.gemm_time(8192, 8192, 8192, 1) >= flops / hw.peak(d));
  }
}

TEST_CASE("a run fits, fits only by the allocator's retries, or runs out of memory, stage by stage") {
  HardwareProfile hw;
  hw.memory_capacity = 80 * kGiB;
  auto stage = [](int index, double live_gib, double fragmentation_gib, double outside_gib) {
    MemoryBreakdown m;
    m.stage = index;
    m.weights = Bytes(live_gib * kGiB);
    m.fragmentation = Bytes(fragmentation_gib * kGiB);
    m.outside_allocator = Bytes(outside_gib * kGiB);
    return m;
  };
  auto prediction = [](std::vector<MemoryBreakdown> stages) {
    Prediction p;
    for (const MemoryBreakdown& m : stages) p.peak_memory = std::max(p.peak_memory, m.total());
    p.stage_memory = std::move(stages);
    return p;
  };
  const Prediction fits = prediction({stage(0, 60, 10, 2), stage(1, 50, 5, 2)});
  CHECK(memory_fit(fits, hw) == MemoryFit::Fits);
  // Stage 0 holds 85 GiB with its cache but 72 live: the allocator frees its cache and retries.
  const Prediction retries = prediction({stage(0, 70, 13, 2), stage(1, 50, 5, 2)});
  CHECK(memory_needed_to_run(retries) == doctest::Approx(72 * kGiB));
  CHECK(memory_fit(retries, hw) == MemoryFit::AllocatorRetries);
  CHECK(to_string(memory_fit(retries, hw)) == "allocator_retries");
  // Stage 1's live tensors alone exceed the GPU, whatever stage 0 does.
  const Prediction oom = prediction({stage(0, 40, 1, 2), stage(1, 79, 1, 2)});
  CHECK(memory_needed_to_run(oom) == doctest::Approx(81 * kGiB));
  CHECK(memory_fit(oom, hw) == MemoryFit::OutOfMemory);
  CHECK(to_string(MemoryFit::OutOfMemory) == "out_of_memory");
}
