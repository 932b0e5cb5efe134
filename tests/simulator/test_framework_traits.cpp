// Where frameworks differ (models/layout.hpp FrameworkTraits) and how collective latency grows
// with the group: each behaviour priced against the framework that lacks it.
#include <doctest/doctest.h>


#include <string>
#include <string_view>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "simulator/collective_cost.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/framework_memory.hpp"
#include "simulator/op_cost.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/overlap_rules.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/step_simulator.hpp"
#include "simulator/fit/run_facts.hpp"

using namespace sixfold;

namespace {
// Data parallelism alone, with a ZeRO stage.
Layout data_parallel(int dp, int zero, Count micro_batch = 1, Recompute recompute = Recompute::None) {
  Layout l;
  l.dp = dp;
  l.zero = zero;
  l.micro_batch = micro_batch;
  l.recompute = recompute;
  return l;
}

Workload work(Count seq, Count batch, Framework f) {
  Workload w;
  w.seq = seq;
  w.global_batch = batch;
  w.framework = f;
  return w;
}
}  // namespace

TEST_CASE("framework names parse, and an unknown one lists the allowed names") {
  CHECK(parse_framework("torchtitan") == Framework::Torchtitan);
  CHECK(to_string(parse_framework("deepspeed")) == "deepspeed");
  CHECK_THROWS_WITH_AS(parse_framework("jax"), doctest::Contains("allowed: megatron, deepspeed, deepspeed-legacy, torchtitan"), UsageError);
}

TEST_CASE("a row of no named codebase shards parameters with PyTorch FSDP, eager unless stated, and runs Megatron's way otherwise") {
  for (const char* unnamed : {"", "other", "unknown"}) {
    CAPTURE(unnamed);
    const RunSettings fsdp = run_settings(parse_run_facts(unnamed, "2024-03", "flash", "1", ""), 1, 3);
    CHECK(fsdp.framework == Framework::Torchtitan);
    CHECK_FALSE(fsdp.compile);
    CHECK_FALSE(fsdp.filled_compile);  // PyTorch's default, not torchtitan's published benchmarks'
    CHECK(fsdp.attention_kernel == framework_traits(Framework::Torchtitan).attention_kernel);
    for (int zero : {0, 1, 2})
      CHECK(run_settings(parse_run_facts(unnamed, "2024-03", "flash", "1", ""), 1, zero).framework ==
            Framework::Megatron);
  }
  // The compile column says when it ran compiled; the eager loss stays (fms-fsdp computes it outside
  // the compiled model).
  const RunSettings compiled = run_settings(parse_run_facts("other", "2024-05", "flash", "1", "", "1"), 1, 3);
  CHECK(compiled.compile);
  CHECK(compiled.cross_entropy == CrossEntropy::TorchFp32);
  // Named codebases keep their own code path: Megatron-LM with ZeRO-3 (its FSDP) is Megatron.
  CHECK(run_settings(parse_run_facts("megatron-lm", "2025-06", "flash", "1", ""), 1, 3).framework == Framework::Megatron);
}

TEST_CASE("unfused cross-entropy holds two more fp32 gradients of the logits than Megatron's fused loss") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = data_parallel(8, 3);
  const Workload fused = work(8192, 8, Framework::Megatron);
  const Workload unfused = work(8192, 8, Framework::Torchtitan);
  const Prediction a = predict(m, hw, fused, l), b = predict(m, hw, unfused, l);
  const double elements = 8192.0 * double(m.vocab);
  // Fused: low-precision logits (2 bytes); unfused: fp32 gradient in and out (8 bytes). The eager
  // final RMSNorm before the head keeps fp32 x and its bf16 output, 4 bytes an element more than
  // the fused norm's bf16 input (test_eager_composites.cpp).
  const double final_norm = 4.0 * 8192.0 * double(m.hidden);
  CHECK(b.memory.logits - a.memory.logits == doctest::Approx(elements * (8 - 2) + final_norm).epsilon(1e-9));
  // FSDP2 keeps no 16-bit shard: its shards are the fp32 parameters (the master weights).
  CHECK(b.memory.weights == 0);
  CHECK(b.memory.master_weights == a.memory.master_weights);
}

TEST_CASE("cross-node ring latency grows with the group, all-reduce falls back to the tree") {
  GroupPlacement small{16, true, 8}, large{1536, true, 8};
  const Seconds ag_small = ring_latency(Collective::AllGather, small);
  const Seconds ag_large = ring_latency(Collective::AllGather, large);
  // NCCL's model: 8.4 us + 3.4 us per NVLink hop + 14 us per network hop.
  CHECK(ag_small == doctest::Approx(8.4e-6 + 14 * 3.4e-6 + 1 * 14e-6));
  CHECK(ag_large == doctest::Approx(8.4e-6 + 1344 * 3.4e-6 + 191 * 14e-6));
  CHECK(ring_latency(Collective::AllReduce, large) < 2 * ag_large / 10);  // the tree's log2 hops
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  CHECK(collective_time(Collective::AllGather, 1e6, large, hw) > ag_large);
  CHECK(collective_time(Collective::AllGather, 1e6, small, hw) < collective_time(Collective::AllGather, 1e6, large, hw));
}

TEST_CASE("DeepSpeed's per-tensor ZeRO-3 gathers cost more than FSDP's per-layer ones at scale") {
  const ModelSpec m = load_model("gpt3-175b");
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  Layout l = data_parallel(1536, 3, 1, Recompute::Full);
  const Prediction fsdp = predict(m, hw, work(2048, 1536, Framework::Torchtitan), l);
  const Prediction ds = predict(m, hw, work(2048, 1536, Framework::DeepSpeed), l);
  CHECK(ds.time.dp_comm > fsdp.time.dp_comm);
  CHECK(ds.step_time > fsdp.step_time);
  // On one node the latency is small either way: the two agree within 5%.
  l.dp = 8;
  const Prediction fsdp8 = predict(m, hw, work(2048, 8, Framework::Torchtitan), l);
  const Prediction ds8 = predict(m, hw, work(2048, 8, Framework::DeepSpeed), l);
  CHECK(ds8.step_time == doctest::Approx(fsdp8.step_time).epsilon(0.05));
}

TEST_CASE("Megatron overlaps the distributed optimizer's parameter gather, DeepSpeed exposes it") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l = data_parallel(64, 1);
  const Prediction meg = predict(m, hw, work(8192, 64, Framework::Megatron), l);
  const Prediction ds = predict(m, hw, work(8192, 64, Framework::DeepSpeed), l);
  CHECK(meg.time.dp_comm < ds.time.dp_comm);
  l.dp_overlap = DpOverlap::None;  // without DP overlap Megatron gathers after the step too
  Workload meg_w = work(8192, 64, Framework::Megatron), ds_w = work(8192, 64, Framework::DeepSpeed);
  meg_w.dtype = ds_w.dtype = Dtype::FP16;  // both keep fp16 gradients (Megatron's fp32 ones are bf16's)
  const Prediction meg_none = predict(m, hw, meg_w, l);
  const Prediction ds_none = predict(m, hw, ds_w, l);
  CHECK(meg_none.time.dp_comm == doctest::Approx(ds_none.time.dp_comm));
}

TEST_CASE("bf16 gradients are kept in fp32 by Megatron and torchtitan, not by DeepSpeed, and fp16 ones by none but torchtitan") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w = work(4096, 8, Framework::Megatron);
  CHECK(state_bytes(w).gradient == 4);
  w.dtype = Dtype::FP8;
  CHECK(state_bytes(w).gradient == 4);
  w.dtype = Dtype::FP16;
  CHECK(state_bytes(w).gradient == 2);
  w.framework = Framework::Torchtitan;
  CHECK(state_bytes(w).gradient == 4);
  w.framework = Framework::DeepSpeed;
  w.dtype = Dtype::BF16;
  CHECK(state_bytes(w).gradient == 2);
  // ZeRO-1 keeps the whole fp32 gradient on every rank: 4 bytes per parameter of the stage.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = data_parallel(8, 1);
  const Prediction p = predict(m, hw, work(4096, 8, Framework::Megatron), l);
  CHECK(p.memory.gradients == doctest::Approx(4.0 * double(count_parameters(m).total)).epsilon(1e-6));
}

TEST_CASE("torchtitan keeps FSDP parameters gathered under pipelining") {
  const ModelSpec m = load_model("llama3-70b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l;
  l.dp = 4;
  l.tp = 8;
  l.sp = true;
  l.pp = 4;
  l.zero = 3;
  l.micro_batch = 1;
  l.recompute = Recompute::Full;
  const Prediction tt = predict(m, hw, work(8192, 32, Framework::Torchtitan), l);
  const Prediction meg = predict(m, hw, work(8192, 32, Framework::Megatron), l);
  // Unsharded: dp times the sharded weights and gradients (to the ceil of the shard).
  CHECK(tt.stage_memory[0].weights == doctest::Approx(4 * meg.stage_memory[0].weights).epsilon(1e-6));
  // Gradients accumulate unsharded in fp32 (Megatron keeps fp32 ones too, sharded): dp times.
  CHECK(tt.stage_memory[0].gradients == doctest::Approx(4 * meg.stage_memory[0].gradients).epsilon(1e-6));
  // One gather per step instead of one per micro-batch (8 micro-batches here).
  CHECK(tt.time.dp_comm < meg.time.dp_comm);
  // Without pipelining torchtitan reshards as usual.
  l.pp = 1;
  l.dp = 16;
  const Prediction tt1 = predict(m, hw, work(8192, 32, Framework::Torchtitan), l);
  const Prediction meg1 = predict(m, hw, work(8192, 32, Framework::Megatron), l);
  CHECK(tt1.memory.weights == 0);  // the fp32 shards only (FSDP2's MixedPrecisionPolicy casts in the all-gather)
  CHECK(tt1.memory.master_weights == meg1.memory.master_weights);
}

TEST_CASE("torchtitan's pipeline keeps a receive buffer per micro-batch, and before 2025-10 every output of its last stage") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l;
  l.dp = 2;
  l.pp = 4;
  l.zero = 3;
  l.micro_batch = 1;
  l.recompute = Recompute::Full;
  Workload w = work(4096, 16, Framework::Torchtitan);  // 8 micro-batches per pipeline
  const StepProgram prog = expand_step_program(m, l, w);
  REQUIRE(prog.micro_batches == 8);
  const double message = 4096.0 * 4096 * 2;  // one micro-batch's bf16 activation at a stage boundary
  const Prediction p = predict(m, hw, w, l);
  // 1F1B holds 4, 3, 2, 1 micro-batches in flight on stages 0-3; their input buffers are their
  // activations. Stage 0 receives no input, the last stage no gradient.
  CHECK(p.stage_memory[0].communication_buffers == doctest::Approx(8 * message));
  CHECK(p.stage_memory[1].communication_buffers == doctest::Approx((8 - 3 + 8) * message));
  CHECK(p.stage_memory[3].communication_buffers == doctest::Approx((8 - 1) * message));
  // Megatron receives into a fresh tensor per transfer: no such buffers.
  const Prediction meg = predict(m, hw, work(4096, 16, Framework::Megatron), l);
  for (const MemoryBreakdown& s : meg.stage_memory) CHECK(s.communication_buffers == 0);

  // torchtitan before 2025-10: the last stage holds all 8 micro-batches' bf16 logits through the
  // backward, and at the end of step() their concatenation besides.
  w.pp_keeps_stage_outputs = true;
  const Prediction old = predict(m, hw, w, l);
  const double outputs = 8.0 * 4096 * 128256 * 2;
  CHECK(old.stage_memory[3].logits - p.stage_memory[3].logits == doctest::Approx(outputs));
  CHECK(old.stage_memory[3].optimizer_step == doctest::Approx(2 * outputs + 7 * message));
  CHECK(old.stage_memory[3].peak_moment == PeakMoment::OptimizerStep);
  CHECK(old.stage_memory[0].total() == doctest::Approx(p.stage_memory[0].total()));  // other stages unchanged
}

TEST_CASE("torchtitan's all-gather ring attention holds every rank's K and V in its backward, Megatron's P2P ring does not") {
  const ModelSpec m = load_model("llama3-70b");  // 64 heads, 8 KV heads, head dim 128
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  // The same 8192 tokens per rank at every cp: only the gathered K and V can grow with it.
  const auto layout = [](int cp) {
    Layout l;
    l.tp = 8;
    l.sp = true;
    l.pp = 2;  // stage 0 holds no logits: its peak is a layer's backward
    l.cp = cp;
    l.micro_batch = 1;
    l.recompute = Recompute::Full;
    return l;
  };
  const auto program = [&](int cp, Framework f) { return expand_step_program(m, layout(cp), work(8192 * cp, 8, f)); };
  for (int cp : {1, 2, 4, 8}) CHECK(program(cp, Framework::Megatron).dense_layer().attention_workspace == 0);
  CHECK(program(1, Framework::Torchtitan).dense_layer().attention_workspace == 0);
  const Bytes w4 = program(4, Framework::Torchtitan).dense_layer().attention_workspace;
  const Bytes w8 = program(8, Framework::Torchtitan).dense_layer().attention_workspace;
  // Four more ranks' bf16 K and V, as wide as Q (repeat_kv): 8 heads on this rank, not 1 KV head.
  CHECK(w8 - w4 == doctest::Approx(4.0 * 8192 * 8 * (128 + 128) * 2));
  // The cp-independent rest (fp32 accumulators and ring gradients) is a few times the local K, V.
  const double local_kv = 8192.0 * 8 * 256 * 2;
  CHECK(w4 - 4 * local_kv > 4 * local_kv);
  // The memory model adds it to the layer backward's working set, in both models.
  const Workload w = work(8192 * 8, 8, Framework::Torchtitan);
  const Prediction p = predict(m, hw, w, layout(8));
  const StepProgram prog = expand_step_program(m, layout(8), w);
  CHECK(p.stage_memory[0].workspace == doctest::Approx(prog.dense_layer().recompute_workspace + w8));
}

TEST_CASE("the simulator schedules the same framework traffic as the closed form prices") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  struct Case {
    const char* model;
    Framework framework;
    int dp, tp, pp, zero;
  };
  for (const Case& c : {Case{"llama3-70b", Framework::Torchtitan, 4, 8, 4, 3}, Case{"llama3-8b", Framework::DeepSpeed, 64, 1, 1, 3},
                        Case{"llama3-8b", Framework::Megatron, 64, 1, 1, 1}, Case{"llama3-70b", Framework::Megatron, 8, 8, 4, 1}}) {
    CAPTURE(c.model);
    CAPTURE(to_string(c.framework));
    const ModelSpec m = load_model(c.model);
    Layout l;
    l.dp = c.dp;
    l.tp = c.tp;
    l.sp = c.tp > 1;
    l.pp = c.pp;
    l.zero = c.zero;
    l.recompute = Recompute::Full;
    const Workload w = work(8192, 8 * c.dp, c.framework);
    const Prediction closed = predict(m, hw, w, l);
    const SimulationResult sim = simulate_step(m, hw, w, l);
    CHECK(sim.step_time == doctest::Approx(closed.step_time).epsilon(0.03));
  }
}

TEST_CASE("legacy DeepSpeed's synchronous ZeRO-3 exposes every gather and reduction, in both models") {
  const ModelSpec m = load_model("gpt3-175b");
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  Layout l = data_parallel(384, 3, 4, Recompute::Full);
  const Prediction legacy = predict(m, hw, work(2048, 1536, Framework::DeepSpeedLegacy), l);
  const Prediction current = predict(m, hw, work(2048, 1536, Framework::DeepSpeed), l);
  CHECK(legacy.step_time > current.step_time);
  // Forward gathers, backward gathers twice (the recomputed forward gathers again), reductions.
  const StepProgram prog = expand_step_program(m, l, work(2048, 1536, Framework::DeepSpeedLegacy));
  const DpTraffic dp = dp_traffic(m, hw, work(2048, 1536, Framework::DeepSpeedLegacy), l, prog.stages[0]);
  CHECK(dp.synchronous);
  CHECK(dp.backward_gather_passes == 2);
  CHECK(dp.gathers == 96 * 4);  // QKV, projection, two MLP weights per layer; biases and norms stay
  CHECK(legacy.time.dp_comm == doctest::Approx(3 * dp.gather_pass + dp.reductions_time()).epsilon(1e-9));
  const SimulationResult sim = simulate_step(m, hw, work(2048, 1536, Framework::DeepSpeedLegacy), l);
  CHECK(sim.step_time == doctest::Approx(legacy.step_time).epsilon(0.01));
  CHECK(sim.breakdown.dp_comm == doctest::Approx(legacy.time.dp_comm).epsilon(0.01));
  // The timeline shows it: gathers and reductions on the DP stream, none during compute.
  const SimulationResult traced = simulate_step(m, hw, work(2048, 1536, Framework::DeepSpeedLegacy), l,
                                                expand_step_program(m, l, work(2048, 1536, Framework::DeepSpeedLegacy)), true);
  int gathers = 0;
  for (const Task& d : traced.tasks) {
    if (d.stream != Stream::DP) continue;
    gathers += d.kind == TaskKind::ParamGather;
    for (const Task& c : traced.tasks)
      if (c.stream == Stream::Compute && c.rank == d.rank) CHECK((d.end <= c.start + 1e-9 || d.start >= c.end - 1e-9));
  }
  CHECK(gathers >= 2);
  // Selective recompute re-runs no weights: no second backward gather.
  l.recompute = Recompute::Selective;
  CHECK(dp_traffic(m, hw, work(2048, 1536, Framework::DeepSpeedLegacy), l, prog.stages[0]).backward_gather_passes == 1);
}

TEST_CASE("legacy DeepSpeed's list collectives pay a copy per rank: their cost grows with the group") {
  const ModelSpec m = load_model("gpt3-175b");
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  auto extra_of = [&](int dp, Framework f) {
    const Layout l = data_parallel(dp, 3, 1, Recompute::Full);
    const StepProgram prog = expand_step_program(m, l, work(2048, 1536, f));
    const DpOps ops = dp_ops(m, work(2048, 1536, f), l, prog.stages[0], 1);
    Seconds gather_extra = -1, reduce_extra = -1;
    for (const DpOp& o : ops.ops) {
      if (o.role == DpRole::Zero3Gather) {
        gather_extra = list_collective_extra(o, hw);
        if (o.list_collective) {
          // One host-launched copy per rank, and the zero fill, copy out of NCCL's buffer on the GPU.
          CHECK(gather_extra == doctest::Approx(dp * kListCollectiveHostPerRank +
                                                3 * o.op.message / (hw.memory_bandwidth * hw.memory_efficiency)));
          // dp_op_time prices it on top of the collective.
          CHECK(dp_op_time(o, l, hw) > gather_extra);
        }
      }
      if (o.role == DpRole::Reduction) reduce_extra = list_collective_extra(o, hw);
    }
    return std::pair(gather_extra, reduce_extra);
  };
  const auto [g384, r384] = extra_of(384, Framework::DeepSpeedLegacy);
  const auto [g1536, r1536] = extra_of(1536, Framework::DeepSpeedLegacy);
  CHECK(g384 > 0);
  CHECK(r384 > 0);
  CHECK(g1536 - g384 == doctest::Approx((1536 - 384) * kListCollectiveHostPerRank));
  CHECK(r1536 > r384);
  // DeepSpeed since mid-2021 gathers into one flat tensor, FSDP too: no copies.
  CHECK(extra_of(1536, Framework::DeepSpeed).first == 0);
  CHECK(extra_of(1536, Framework::Torchtitan).first == 0);
}

TEST_CASE("the DP bucket is the framework's unless the layout sets one") {
  Layout l;
  l.dp = 48;
  Workload w = work(4096, 48, Framework::Megatron);
  // Megatron-Core: max(40M, 1M x dp) elements of its fp32 gradient.
  CHECK(gradient_bucket_bytes(l, w) == doctest::Approx(4.0 * 48e6));
  l.dp = 8;
  CHECK(gradient_bucket_bytes(l, w) == doctest::Approx(4.0 * 40e6));
  w.framework = Framework::DeepSpeed;
  CHECK(gradient_bucket_bytes(l, w) == doctest::Approx(2.0 * 5e8));
  w.framework = Framework::Torchtitan;
  CHECK(gradient_bucket_bytes(l, w) == doctest::Approx(25.0 * kMiB));
  l.bucket_bytes = 4 * kMiB;
  CHECK(gradient_bucket_bytes(l, w) == doctest::Approx(4.0 * kMiB));
}

TEST_CASE("FSDP's ZeRO-2 (SHARD_GRAD_OP) reduce-scatters each layer's gradient, DeepSpeed and Megatron bucket it") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = data_parallel(512, 2, 1);
  auto traffic = [&](Framework f) {
    const Workload w = work(2048, 512, f);
    const StepProgram prog = expand_step_program(m, l, w);
    return std::pair(dp_traffic(m, hw, w, l, prog.stages[0]), prog.stages[0].layers);
  };
  const auto [fsdp, layers] = traffic(Framework::Torchtitan);
  CHECK(layers == 32);
  CHECK(fsdp.reductions == layers);
  CHECK(fsdp.reduce_every_micro_batch);
  // The same framework's DDP (ZeRO-0) keeps its 25 MiB buckets: hundreds of them for 8B in fp32.
  {
    const Layout ddp = data_parallel(512, 0, 1);
    const Workload w = work(2048, 512, Framework::Torchtitan);
    CHECK(dp_traffic(m, hw, w, ddp, expand_step_program(m, ddp, w).stages[0]).reductions > 10 * layers);
  }
  const auto [megatron, unused] = traffic(Framework::Megatron);
  CHECK(megatron.reductions != layers);
  // One collective per layer pays the ring latency of 512 ranks 32 times, not once per bucket:
  // the step is faster than with DDP's buckets of the same bytes.
  Layout bucketed = l;
  bucketed.dp_overlap = DpOverlap::Bucketed;
  const Prediction per_layer = predict(m, hw, work(2048, 512, Framework::Torchtitan), bucketed);
  Workload deepspeed = work(2048, 512, Framework::DeepSpeed);
  bucketed.bucket_bytes = 25 * kMiB;  // DeepSpeed with torch DDP's bucket size: reductions in buckets
  const Prediction buckets = predict(m, hw, deepspeed, bucketed);
  CHECK(per_layer.time.dp_comm < buckets.time.dp_comm);
}

TEST_CASE("fp8 GEMM inputs: TransformerEngine keeps the fp8 cast, torchao the bf16 input unless TP gathered it in fp8") {
  const ModelSpec m = load_model("llama3-8b");
  auto saved = [&](Framework f, int tp, const char* op_name) {
    Layout l;
    l.tp = tp;
    l.sp = tp > 1;
    Workload w = work(4096, 8, f);
    w.dtype = Dtype::FP8;
    const StepProgram p = expand_step_program(m, l, w);
    for (const Op& op : p.dense_layer().forward)
      if (std::string(op.name) == op_name) return op.saved;
    for (const Op& op : p.stages.back().edges->post_forward)
      if (std::string(op.name) == op_name) return op.saved;
    FAIL("no op " << op_name);
    return 0.0;
  };
  const double T = 4096, h = double(m.hidden);
  CHECK(saved(Framework::Megatron, 1, "qkv_proj") == doctest::Approx(T * h * 1));
  CHECK(saved(Framework::Torchtitan, 1, "qkv_proj") == doctest::Approx(T * h * 2));
  CHECK(saved(Framework::Torchtitan, 2, "qkv_proj") == doctest::Approx(T * h * 1));  // gathered in fp8, kept whole
  CHECK(saved(Framework::Torchtitan, 2, "out_proj") == 2 * saved(Framework::Megatron, 2, "out_proj"));
  // The output layer runs in bf16 in both.
  CHECK(saved(Framework::Megatron, 1, "lm_head") == doctest::Approx(T * h * 2));
}

TEST_CASE("--grad-reduce-in-bf16 keeps Megatron's gradient buffer and its reduction in bf16 (Megatron, bf16 or fp8 only)") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = data_parallel(8, 1);
  Workload w = work(4096, 8, Framework::Megatron);
  const Prediction fp32 = predict(m, hw, w, l);
  const StepProgram program = expand_step_program(m, l, w);
  const DpTraffic fp32_traffic = dp_traffic(m, hw, w, l, program.stages.front());
  w.grad_reduce_in_bf16 = true;
  CHECK(state_bytes(w).gradient == 2);
  const Prediction bf16 = predict(m, hw, w, l);
  CHECK(bf16.memory.gradients == doctest::Approx(fp32.memory.gradients / 2));
  // The reduce-scatter of each bucket moves half the bytes: bandwidth-bound, about half the time.
  const DpTraffic bf16_traffic = dp_traffic(m, hw, w, l, program.stages.front());
  CHECK(bf16_traffic.full_reduction < 0.6 * fp32_traffic.full_reduction);
  CHECK(bf16.time.dp_comm <= fp32.time.dp_comm);
  CHECK_NOTHROW(validate_workload(m, w));
  w.dtype = Dtype::FP32;
  CHECK_THROWS_WITH_AS(validate_workload(m, w), doctest::Contains("needs bf16 or fp8 training"), LayoutError);
  w.dtype = Dtype::BF16;
  w.framework = Framework::DeepSpeed;
  CHECK_THROWS_WITH_AS(validate_workload(m, w), doctest::Contains("--grad-reduce-in-bf16 with framework"), LayoutError);
  // A validation row says so in its grad_reduce_dtype column: Megatron's, and FSDP's reduce dtype
  // (torchtitan, or an unnamed codebase).
  CHECK(run_settings(parse_run_facts("megatron-lm", "2024-12", "", "", "", "", "", "", "", "", "bf16"), 1, 1).grad_reduce_in_bf16);
  CHECK_FALSE(run_settings(parse_run_facts("megatron-lm", "2024-12", "", "", "", "", "", "", "", "", ""), 1, 1).grad_reduce_in_bf16);
  CHECK(run_settings(parse_run_facts("other", "2024-03", "", "", "", "", "", "", "", "", "bf16"), 1, 3).grad_reduce_in_bf16);
  CHECK_THROWS_WITH(parse_run_facts("deepspeed", "2024-12", "", "", "", "", "", "", "", "", "bf16"),
                    doctest::Contains("column 'grad_reduce_dtype': value 'bf16' with framework 'deepspeed'"));
  CHECK_THROWS_WITH(parse_run_facts("megatron-lm", "2024-12", "", "", "", "", "", "", "", "", "fp16"),
                    doctest::Contains("is not fp32, bf16 or empty"));
}

TEST_CASE("bf16 Adam moments halve the optimizer state and its step traffic") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = data_parallel(8, 1);
  Workload w = work(4096, 8, Framework::Megatron);
  const Prediction fp32 = predict(m, hw, w, l);
  w.bf16_adam_moments = true;
  CHECK(state_bytes(w).optimizer == 4);
  const Prediction bf16 = predict(m, hw, w, l);
  CHECK(bf16.memory.optimizer_states == doctest::Approx(fp32.memory.optimizer_states / 2));
  CHECK(bf16.time.optimizer < fp32.time.optimizer);
  CHECK(parse_adam_moments("bf16"));
  CHECK_THROWS_WITH_AS(parse_adam_moments("fp8"), doctest::Contains("allowed: fp32, bf16"), UsageError);
}

namespace {
// Bytes one forward op named `name` of the MoE layer keeps for the backward.
double moe_saved(const ModelSpec& m, const Layout& l, const Workload& w, const char* name) {
  const StepProgram p = expand_step_program(m, l, w);
  for (const Op& op : p.moe_layer().forward)
    if (std::string(op.name) == name) return op.saved;
  FAIL("no op " << name);
  return 0.0;
}
}  // namespace

TEST_CASE("routing weights: Megatron weights inside the SwiGLU, DeepSpeed and torchtitan keep the weighted expert outputs") {
  const ModelSpec m = load_model("mixtral-8x7b");
  Layout l;
  l.dp = 8;
  l.ep = 8;
  const double T = 4096, k = m.moe.top_k, h = double(m.hidden), f = double(m.moe.expert_ffn);
  for (Framework fw : {Framework::DeepSpeed, Framework::Torchtitan}) {
    const Workload w = work(4096, 8, fw);
    CHECK(moe_saved(m, l, w, "moe_unpermute") == doctest::Approx(T * k * h * 2 + T * k * 4));
    // Gate and up; eager torchtitan's silu-then-mul also keeps silu's output (test_eager_composites.cpp).
    const double tensors = fw == Framework::Torchtitan ? 3 : 2;
    CHECK(moe_saved(m, l, w, "expert_act") == doctest::Approx(T * k * f * 2 * tensors));
  }
  const Workload w = work(4096, 8, Framework::Megatron);
  CHECK(moe_saved(m, l, w, "moe_unpermute") == 0);
  CHECK(moe_saved(m, l, w, "expert_act") == doctest::Approx(T * k * f * 2 * 2 + T * k * 4));  // + the probabilities
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  CHECK(predict(m, hw, w, l).memory.moe_activations < predict(m, hw, work(4096, 8, Framework::DeepSpeed), l).memory.moe_activations);
}

TEST_CASE("--activation-func-fp8-input-store keeps the SwiGLU input in fp8, dense and expert (Megatron only, SwiGLU only)") {
  const ModelSpec moe = load_model("mixtral-8x7b");
  Layout l;
  l.dp = 8;
  l.ep = 8;
  Workload w = work(4096, 8, Framework::Megatron);
  const double bf16_act = moe_saved(moe, l, w, "expert_act");
  const StepProgram dense_before = expand_step_program(load_model("llama3-8b"), Layout{}, w);
  w.fp8_activation_input_store = true;
  CHECK_NOTHROW(validate_layout(moe, l, w, 8));
  const double T = 4096, k = moe.moe.top_k, f = double(moe.moe.expert_ffn);
  CHECK(moe_saved(moe, l, w, "expert_act") == doctest::Approx(bf16_act - T * k * f * 2));  // 2f values, 1 byte each
  const StepProgram dense_after = expand_step_program(load_model("llama3-8b"), Layout{}, w);
  CHECK(dense_after.dense_layer().saved < dense_before.dense_layer().saved);
  CHECK_THROWS_WITH_AS(validate_layout(load_model("gpt3-175b"), Layout{}, w, 1), doctest::Contains("needs SwiGLU"), LayoutError);
  w.framework = Framework::Torchtitan;
  CHECK_THROWS_WITH_AS(validate_layout(moe, l, w, 8), doctest::Contains("Megatron's"), LayoutError);
}

TEST_CASE("TP overlap hides each collective behind the GEMM it is fused with, not behind the whole layer") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.tp = 8;
  l.sp = true;
  l.tp_overlap = true;
  const Workload w = work(2048, 1, Framework::Megatron);
  const StepProgram p = expand_step_program(m, l, w);
  const auto& ops = p.dense_layer().forward;
  bool pairwise_differs = false;
  for (double link : {40e9, 80e9, 160e9, 320e9, 640e9}) {
    HardwareProfile hw = load_hardware("h100-sxm-80g");
    ClusterOverrides o;
    o.intra_node_bandwidth = link;
    apply_overrides(hw, o);
    const OpPricer pricer(hw, l, w.dtype);
    const OpListCost cost = price_op_list(ops, 0, pricer, true);
    Seconds gemms = 0, expected = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::Gemm) gemms += pricer.time(ops[i]);
      if (ops[i].group != Group::TP) continue;
      const size_t partner = ops[i].collective == Collective::AllGather ? i + 1 : i - 1;
      const Seconds g = ops[partner].kind == OpKind::Gemm ? pricer.time(ops[partner]) : 0;
      // Pipelined in chunks (Op::overlap_chunks): the GEMM's first (all-gather) or last
      // (reduce-scatter) chunk has nothing to hide; Megatron's last reduce-scatter chunk follows
      // the GEMM.
      const int n = ops[i].overlap_chunks;
      const double share = n >= 2 ? double(n - 1) / n : 1.0;
      const Seconds c = pricer.time(ops[i]);
      expected += c - std::min(ops[i].overlap_tail ? c * share : c, g * share);
    }
    // What is hidden is not free: the GEMMs under it lose overlap_slowdown of its time, and the
    // longer GEMMs hide that much more of what was exposed.
    const Seconds hiding = overlap::hiding_cost(cost.tp_raw, expected, hw.overlap_slowdown);
    expected = hiding + std::max(0.0, expected - hiding);
    CAPTURE(link);
    CHECK(hw.overlap_slowdown > 0);
    CHECK(cost.tp_exposed == doctest::Approx(expected));
    // Never less than hiding behind every GEMM of the layer would leave.
    CHECK(cost.tp_exposed >= std::max(0.0, cost.tp_raw - gemms) - 1e-12);
    pairwise_differs = pairwise_differs || cost.tp_exposed > std::max(0.0, cost.tp_raw - gemms) + 1e-9;
    CHECK(price_op_list(ops, 0, pricer, false).tp_exposed == doctest::Approx(cost.tp_raw));
  }
  CHECK(pairwise_differs);
}

TEST_CASE("async TP fuses a reduce-scatter with one matmul: torchtitan's backward reduce-scatter of a block's input stays exposed") {
  // torch/_inductor/fx_passes/micro_pipeline_tp.py fuse_matmul_reduce_scatter needs the
  // reduce-scatter's input to be one matmul's output. The gradient of a block's all-gathered
  // input is the sum of what wq, wk and wv (w1 and w3) send back: not a matmul, so not fused.
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 1;
  l.tp = 8;
  l.sp = true;
  l.tp_overlap = true;
  auto block_entries = [&](Framework fw) {
    const LayerProgram layer = expand_step_program(m, l, work(8192, 1, fw)).dense_layer();
    int forward_hidable = 0, backward_hidable = 0, backward_entries = 0;
    for (const Op& op : layer.forward)
      if (op.group == Group::TP && op.collective == Collective::AllGather && op.tp_overlappable) ++forward_hidable;
    for (const Op& op : layer.backward) {
      const std::string_view name = op.name;
      if (!op.backward || (name != "attn_allgather" && name != "mlp_allgather")) continue;
      CHECK(op.collective == Collective::ReduceScatter);
      ++backward_entries;
      if (op.tp_overlappable) ++backward_hidable;
    }
    CHECK(forward_hidable == 2);
    CHECK(backward_entries == 2);
    return backward_hidable;
  };
  CHECK(block_entries(Framework::Torchtitan) == 0);
  CHECK(block_entries(Framework::Megatron) == 2);  // TransformerEngine overlaps the fused QKV / FC1 dgrad's

  // So async TP hides less of torchtitan's TP time than of Megatron's on the same layer.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const LayerProgram tt = expand_step_program(m, l, work(8192, 1, Framework::Torchtitan)).dense_layer();
  const OpListCost cost = price_op_list(tt.backward, tt.recompute_ops, OpPricer(hw, l, Dtype::BF16), true);
  double entries = 0;
  for (const Op& op : tt.backward)
    if (op.backward && op.group == Group::TP && op.collective == Collective::ReduceScatter && !op.tp_overlappable)
      entries += OpPricer(hw, l, Dtype::BF16).time(op);
  CHECK(entries > 0);
  CHECK(cost.tp_exposed >= entries);
}

namespace {
Op test_gemm(Count m, Count n, Count k) {
  Op op;
  op.name = "gemm";
  op.kind = OpKind::Gemm;
  op.op_class = OpClass::Gemm;
  op.m = m, op.n = n, op.k = k;
  op.flops = 2.0 * double(m) * double(n) * double(k);
  return op;
}
Op test_tp_collective(Collective c, Bytes message, int chunks, bool tail = false, bool local_sum = false) {
  Op op = collective_op("tp", Group::TP, c, message, 8);
  op.tp_overlappable = true;
  op.overlap_chunks = chunks;
  op.overlap_tail = tail;
  op.overlap_local_sum = local_sum;
  return op;
}
// An H100 pricing for tp 8 with SP, the hiding cost set to 0 to see the chunk rule alone.
struct ChunkRig {
  static HardwareProfile without_hiding_cost() {
    HardwareProfile hw = load_hardware("h100-sxm-80g");
    hw.overlap_slowdown = 0;
    return hw;
  }
  static Layout tp8_sp() {
    Layout l;
    l.tp = 8;
    l.sp = true;
    return l;
  }
  const HardwareProfile hw = without_hiding_cost();
  const Layout layout = tp8_sp();
  const OpPricer pricer{hw, layout, Dtype::BF16};
};
}  // namespace

TEST_CASE("TP overlap pipelines a collective with its GEMM in chunks: at most (n-1)/n of the GEMM hides it") {
  // TransformerEngine's ring exchange and PyTorch's _pipelined_all_gather_and_consume multiply the
  // local shard first, while nothing has arrived.
  const ChunkRig rig;
  const OpPricer& pricer = rig.pricer;
  const Op big_gather = test_tp_collective(Collective::AllGather, 4e9, 8);   // longer than the GEMM
  const Op small_gather = test_tp_collective(Collective::AllGather, 4e6, 8);  // shorter
  const Op g = test_gemm(8192, 4096, 4096);
  const Seconds G = pricer.time(g);
  REQUIRE(pricer.time(big_gather) > G);
  REQUIRE(pricer.time(small_gather) < G / 8);
  // Communication-bound: the transfer less 7/8 of the GEMM is exposed; unchunked, less all of it.
  const OpListCost chunked = price_op_list({big_gather, g}, 0, pricer, true);
  CHECK(chunked.tp_exposed == doctest::Approx(pricer.time(big_gather) - G * 7.0 / 8.0));
  Op bulk = big_gather;
  bulk.overlap_chunks = 0;
  CHECK(price_op_list({bulk, g}, 0, pricer, true).tp_exposed == doctest::Approx(pricer.time(big_gather) - G));
  // Compute-bound: the gather hides entirely.
  CHECK(price_op_list({small_gather, g}, 0, pricer, true).tp_exposed == doctest::Approx(0.0));
  // Without overlap every second of it is exposed.
  CHECK(price_op_list({big_gather, g}, 0, pricer, false).tp_exposed == doctest::Approx(pricer.time(big_gather)));
}

TEST_CASE("a fused reduce-scatter: TransformerEngine's last chunk follows the GEMM, PyTorch's async TP sums the partials after") {
  const ChunkRig rig;
  const OpPricer& pricer = rig.pricer;
  const Op g = test_gemm(65536, 4096, 4096);
  const Seconds G = pricer.time(g);
  const Bytes message = 65536.0 * 4096 * 2;
  // TransformerEngine's "pipeline" method: 4 chunks, each reduce-scattered when its GEMM chunk ends.
  const Op te = test_tp_collective(Collective::ReduceScatter, message, 4, true);
  const Seconds C = pricer.time(te);
  REQUIRE(C < G);
  CHECK(price_op_list({g, te}, 0, pricer, true).tp_exposed == doctest::Approx(C / 4));
  // PyTorch: 8 chunks, its own last, then one pass over the 8 partials of its shard.
  const Op torch_rs = test_tp_collective(Collective::ReduceScatter, message, 8, false, true);
  Op sum;
  sum.kind = OpKind::Memory;
  sum.bytes = message * (1.0 + 1.0 / 8);
  const OpListCost t = price_op_list({g, torch_rs}, 0, pricer, true);
  CHECK(t.tp_exposed == doctest::Approx(pricer.time(sum)));
  CHECK(pricer.time(sum) > 0);
  // The sum exists only where the overlap fused them; vanilla TP pays NCCL's reduce-scatter alone.
  CHECK(price_op_list({g, torch_rs}, 0, pricer, false).tp_exposed == doctest::Approx(C));
  // A reduce-scatter with no GEMM before it (the embedding's) is not fused: no chunks, no sum.
  Op lookup;
  lookup.kind = OpKind::Memory;
  lookup.bytes = 1e6;
  CHECK(price_op_list({lookup, torch_rs}, 0, pricer, true).tp_exposed == doctest::Approx(C));
}

TEST_CASE("the step program marks each framework's TP overlap chunks: Megatron's 4-way reduce-scatter, torch's tp-way with a sum") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l = ChunkRig::tp8_sp();
  l.tp_overlap = true;
  for (Framework fw : {Framework::Megatron, Framework::Torchtitan}) {
    CAPTURE(to_string(fw));
    const LayerProgram layer = expand_step_program(m, l, work(8192, 1, fw)).dense_layer();
    int gathers = 0, scatters = 0;
    for (const Op& op : layer.forward) {
      if (op.group != Group::TP) continue;
      if (op.collective == Collective::AllGather) {
        ++gathers;
        CHECK(op.overlap_chunks == 8);
      } else {
        ++scatters;
        CHECK(op.overlap_chunks == (fw == Framework::Megatron ? 4 : 8));
        CHECK(op.overlap_tail == (fw == Framework::Megatron));
        CHECK(op.overlap_local_sum == (fw == Framework::Torchtitan));
      }
    }
    CHECK(gathers == 2);
    CHECK(scatters == 2);
    // Backward: the output gradient's all-gather feeds the input-gradient GEMM in tp chunks; the
    // input gradient's reduce-scatter runs unchunked beside the weight gradient's GEMM, and
    // Megatron's re-gather of the saved shard (TransformerEngine's bulk all-gather) beside the
    // input-gradient GEMM.
    int regathers = 0;
    for (const Op& op : layer.backward) {
      if (op.group != Group::TP || !op.backward) continue;
      const bool regather = std::string_view(op.name).ends_with("_regather");
      regathers += regather;
      CHECK(op.overlap_chunks == (op.collective == Collective::AllGather && !regather ? 8 : 0));
      CHECK_FALSE(op.overlap_tail);
      CHECK_FALSE(op.overlap_local_sum);
    }
    CHECK(regathers == (fw == Framework::Megatron ? 2 : 0));
  }
}

TEST_CASE("under SP Megatron gathers each column-parallel GEMM's saved input again before its input gradient, torchtitan keeps it gathered") {
  const ModelSpec m = load_model("llama3-8b");
  const Layout l = ChunkRig::tp8_sp();
  for (Framework fw : {Framework::Megatron, Framework::Torchtitan}) {
    CAPTURE(to_string(fw));
    const StepProgram prog = expand_step_program(m, l, work(8192, 1, fw));
    const LayerProgram& layer = prog.dense_layer();
    const bool megatron = fw == Framework::Megatron;
    // The re-gather is what makes the smaller saved input possible: memory and time agree.
    for (const char* gemm : {"qkv_proj", "mlp_up"}) {
      CAPTURE(gemm);
      Bytes gathered_msg = 0;
      for (const Op& op : layer.forward)
        if (op.group == Group::TP && op.collective == Collective::AllGather) gathered_msg = op.message;
      REQUIRE(gathered_msg > 0);
      size_t dgrad = layer.backward.size();
      for (size_t i = 0; i < layer.backward.size(); ++i)
        if (std::string_view(layer.backward[i].name) == gemm && !layer.backward[i].weight_grad) dgrad = i;
      REQUIRE(dgrad < layer.backward.size());
      REQUIRE(dgrad > 0);
      const Op& before = layer.backward[dgrad - 1];
      const bool regather = before.group == Group::TP && std::string_view(before.name).ends_with("_regather");
      CHECK(regather == megatron);
      if (regather) {
        CHECK(before.collective == Collective::AllGather);
        CHECK(before.message == gathered_msg);  // bf16 input, like the forward's gather
        CHECK(before.backward);
        CHECK(before.tp_overlappable);
      }
    }
    // The output head's GEMM likewise, on the last stage.
    int head_regathers = 0;
    for (const Op& op : prog.stages.back().edges->post_backward)
      head_regathers += std::string_view(op.name) == "head_regather";
    CHECK(head_regathers == (megatron ? 1 : 0));
  }
}

TEST_CASE("DeepSpeed's bf16 at ZeRO stage 0 runs the BF16_Optimizer: an fp32 gradient per parameter, added to every micro-batch, all-reduced in fp32") {
  const ModelSpec m = load_model("gpt-18b");
  Layout l = data_parallel(4, 0, 1, Recompute::Full);
  l.pp = 2;
  Workload w = work(2048, 64, Framework::DeepSpeed);
  w.dtype = Dtype::BF16;
  auto accumulate = [](const std::vector<Op>& ops) -> const Op* {
    for (const Op& op : ops)
      if (std::string_view(op.name) == "grad_accumulate_fp32") return &op;
    return nullptr;
  };
  REQUIRE(bf16_optimizer_runs(w, l));
  const StepProgram prog = expand_step_program(m, l, w);
  // Each layer's backward ends with the cast and add over its parameters: 18 bytes each.
  const Op* layer = accumulate(prog.dense_layer().backward);
  REQUIRE(layer);
  CHECK(layer->bytes == doctest::Approx(18.0 * double(prog.dense_layer().dense_params)));
  CHECK(layer->kernels == 2 * (weight_matrices_per_layer(m, l, false) + 4 + 4));  // GPT: LayerNorms and biases
  // The embedding's gradient on the first stage, the head's on the last, every micro-batch too.
  CHECK(accumulate(prog.stages.front().edges->pre_backward));
  CHECK(accumulate(prog.stages.back().edges->post_backward));
  // The reduction is an all-reduce of fp32 gradients.
  const DpOps dp = dp_ops(m, w, l, prog.stages[0], prog.micro_batches);
  const Op& reduce = dp.ops.front().op;
  CHECK(std::string_view(reduce.name) == "grad_reduce");
  CHECK(reduce.collective == Collective::AllReduce);
  CHECK(reduce.message * dp.reductions == doctest::Approx(4.0 * double(prog.stages[0].dense_params)));

  // Not at ZeRO stage 1 (DeepSpeed's ZeRO optimizer), unless a pipeline of 2022-04..2023-05, which ran
  // bf16 at stage 0 only; not with fp16 (FP16_Optimizer), before the optimizer existed, or for Megatron.
  Layout zero1 = l;
  zero1.zero = 1;
  Workload then = w;
  then.pipeline_bf16_stage0_only = true;
  CHECK(bf16_optimizer_runs(then, zero1));
  Workload fp16 = w;
  fp16.dtype = Dtype::FP16;
  Workload before = w;
  before.bf16_optimizer = false;
  Workload megatron = w;
  megatron.framework = Framework::Megatron;
  for (const auto& [wk, lay] : {std::pair{w, zero1}, std::pair{fp16, l}, std::pair{before, l}, std::pair{megatron, l}}) {
    CHECK_FALSE(bf16_optimizer_runs(wk, lay));
    CHECK_FALSE(accumulate(expand_step_program(m, lay, wk).dense_layer().backward));
  }
  // Program parts are not shared between stage 0 and stage 2 layouts of the same shape.
  Layout zero2 = l;
  zero2.zero = 2;
  CHECK_FALSE(same_program_parts(l, zero2, w));
  CHECK(same_program_parts(l, zero2, megatron));
  // The pass costs time: the same layout is slower with it.
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  CHECK(predict(m, hw, w, l).step_time > predict(m, hw, before, l).step_time);
  // Memory: bf16 and fp32 gradients whole (6 bytes a parameter), fp32 weights and moments
  // partitioned over dp at stage 0, as the 2022 pipelines' "ZeRO-1" rows were.
  const Prediction z0 = predict(m, hw, w, l), z1 = predict(m, hw, then, zero1);
  const double params = double(prog.stages[0].dense_params);
  CHECK(z0.stage_memory[0].gradients == doctest::Approx(6.0 * params));
  CHECK(z0.stage_memory[0].master_weights == doctest::Approx(z1.stage_memory[0].master_weights));
  CHECK(z0.stage_memory[0].master_weights == doctest::Approx(4.0 * params / 4).epsilon(1e-6));
}

TEST_CASE("a DeepSpeed row dated before the BF16_Optimizer (DeepSpeed #1801, 2022-04) is priced without it") {
  auto runs = [](const std::string& codebase, const std::string& date) {
    return run_settings(parse_run_facts(codebase, date, "fused-softmax", "0", ""), 12, 1).bf16_optimizer;
  };
  CHECK_FALSE(runs("megatron-deepspeed", "2022-01"));
  CHECK(runs("megatron-deepspeed", "2022-05"));
  CHECK(runs("megatron-deepspeed", ""));  // undated: as DeepSpeed runs today
  CHECK_FALSE(runs("deepspeed", "2021-10"));
  // A bf16 ZeRO-1 pipeline between #1801 and #3399 (2023-05) ran at stage 0, through the optimizer.
  auto stage0_only = [](const std::string& date, int pp) {
    return run_settings(parse_run_facts("megatron-deepspeed", date, "", "", ""), pp, 1).pipeline_bf16_stage0_only;
  };
  CHECK(stage0_only("2022-06", 12));
  CHECK_FALSE(stage0_only("2022-06", 1));
  CHECK_FALSE(stage0_only("2023-06", 12));
  CHECK_FALSE(stage0_only("", 12));
}

TEST_CASE("torchtitan's TP collectives copy their tensor along the sequence dim unless async TP fuses them (Megatron's never)") {
  // PyTorch's functional all_gather_tensor / reduce_scatter_tensor cat chunks when the dim is not
  // 0, as torchtitan's Shard(1) of [b, s, h] is; Megatron's [s, b, h] gathers dim 0. Async TP's
  // fused ops take the dim themselves; it leaves unfused the backward reduce-scatter of a block's
  // input (a sum of matmuls) and, with the rowwise fp8 recipe, the all-gathers into matmuls.
  const ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 8;
  auto copies = [&](Framework f, bool async, Float8Recipe recipe = Float8Recipe::Tensorwise) {
    w.framework = f;
    w.dtype = recipe == Float8Recipe::Tensorwise ? Dtype::BF16 : Dtype::FP8;
    w.float8_recipe = recipe;
    Layout l;
    l.dp = 2;
    l.tp = 4;
    l.sp = true;
    l.tp_overlap = async;
    validate_layout(m, l, w, 8);
    const StepProgram p = expand_step_program(m, l, w);
    double forward = 0, backward = 0;
    for (const Op& op : p.dense_layer().forward)
      if (std::string_view(op.name) == "sp_dim1_copy") forward += op.bytes;
    for (size_t i = p.dense_layer().recompute_ops; i < p.dense_layer().backward.size(); ++i)
      if (std::string_view(p.dense_layer().backward[i].name) == "sp_dim1_copy") backward += p.dense_layer().backward[i].bytes;
    return std::pair{forward, backward};
  };
  // Two gathers and two reduce-scatters a layer, each a read and a write of the full [b, s, h] (bf16).
  const double full = 4096.0 * 4096 * 2;
  const auto [f, b] = copies(Framework::Torchtitan, false);
  CHECK(f == doctest::Approx(4 * 2 * full));
  CHECK(b == doctest::Approx(4 * 2 * full));
  // Async TP: only the backward's two input-gradient reduce-scatters copy.
  const auto [af, ab] = copies(Framework::Torchtitan, true);
  CHECK(af == 0);
  CHECK(ab == doctest::Approx(2 * 2 * full));
  // Rowwise fp8 under async TP: the forward's two gathers (bf16) and, in the backward, the
  // input-gradient reduce-scatters and the output-gradient gathers.
  const auto [rf, rb] = copies(Framework::Torchtitan, true, Float8Recipe::Rowwise);
  CHECK(rf == doctest::Approx(2 * 2 * full));
  CHECK(rb == doctest::Approx(4 * 2 * full));
  CHECK(copies(Framework::Megatron, false).first == 0);
  CHECK(copies(Framework::Megatron, false).second == 0);

  // A copy only the backward makes stands in the forward list between the all-gather and its GEMM:
  // it runs nothing there and parts no pair.
  w.framework = Framework::Torchtitan;
  w.dtype = Dtype::BF16;
  w.float8_recipe = Float8Recipe::Tensorwise;
  Layout l;
  l.dp = 2;
  l.tp = 4;
  l.sp = true;
  l.tp_overlap = true;
  const StepProgram p = expand_step_program(m, l, w);
  std::vector<Op> without;
  for (const Op& op : p.dense_layer().forward)
    if (std::string_view(op.name) != "sp_dim1_copy") without.push_back(op);
  REQUIRE(without.size() < p.dense_layer().forward.size());
  const HardwareProfile hw = load_hardware("h100-sxm-80g");  // the pricer keeps a reference
  const OpPricer pricer(hw, l, w.dtype);
  const OpListCost with_copies = price_op_list(p.dense_layer().forward, 0, pricer, true);
  const OpListCost plain = price_op_list(without, 0, pricer, true);
  CHECK(with_copies.tp_exposed == doctest::Approx(plain.tp_exposed));
  CHECK(with_copies.compute == doctest::Approx(plain.compute));
  CHECK(with_copies.tp_exposed < with_copies.tp_raw);
}

TEST_CASE("FSDP's bf16 reduce dtype (torchtitan's mixed_precision_reduce): the reduce-scatter moves bf16, the shards stay fp32") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  const Layout l = data_parallel(64, 3, 2, Recompute::Full);
  Workload w = work(4096, 128, Framework::Torchtitan);
  const StepProgram program = expand_step_program(m, l, w);
  const Prediction fp32 = predict(m, hw, w, l);
  const DpOps fp32_ops = dp_ops(m, w, l, program.stages.front(), 1);
  w.grad_reduce_in_bf16 = true;
  CHECK_NOTHROW(validate_workload(m, w));
  CHECK(state_bytes(w).gradient == 4);  // FSDP2's shards are the fp32 parameters' gradients
  CHECK(reduce_bytes_per_gradient(w) == 2);
  const Prediction bf16 = predict(m, hw, w, l);
  const DpOps bf16_ops = dp_ops(m, w, l, program.stages.front(), 1);
  CHECK(bf16.memory.gradients == doctest::Approx(fp32.memory.gradients));
  // The block's reduce-scatter input is a bf16 copy, not an fp32 one.
  Workload fp32_w = w;
  fp32_w.grad_reduce_in_bf16 = false;
  const double params = double(framework_stage_memory(m, w, l, program, program.stages.front()).layer_gradient) /
                        (2.0 + 2.0);  // a block's bf16 gradient and its bf16 reduce-scatter input
  CHECK(framework_stage_memory(m, fp32_w, l, program, program.stages.front()).layer_gradient ==
        doctest::Approx(params * (2.0 + 4.0)));
  for (size_t i = 0; i < fp32_ops.ops.size(); ++i) {
    CAPTURE(fp32_ops.ops[i].op.name);
    if (fp32_ops.ops[i].role == DpRole::Reduction)
      CHECK(bf16_ops.ops[i].op.message == doctest::Approx(fp32_ops.ops[i].op.message / 2));
    else
      CHECK(bf16_ops.ops[i].op.message == doctest::Approx(fp32_ops.ops[i].op.message));
  }
  CHECK(bf16_ops.ops.back().op.bytes == doctest::Approx(fp32_ops.ops.back().op.bytes));  // the optimizer reads fp32
}
