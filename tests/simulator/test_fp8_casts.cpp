// FP8 training casts each linear layer's input before its GEMM and the output gradient before
// the backward GEMMs (TransformerEngine's fused cast + transpose; torchao's amax and cast passes,
// which also recast weight and input): the step program carries those bytes on the GEMM ops and
// the pricer adds them as memory-bound time; bf16 has none, and attention's batched GEMMs and the
// router are not cast.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/kernel_tables.hpp"
#include "simulator/op_cost.hpp"

using namespace sixfold;

namespace {
StepProgram program(Dtype dtype, Framework framework = Framework::Megatron, int tp = 1) {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8 / tp;
  l.tp = tp;
  l.sp = tp > 1;
  Workload w;
  w.seq = 4096;
  w.global_batch = 8;
  w.dtype = dtype;
  w.framework = framework;
  validate_layout(m, l, w, 8);
  return expand_step_program(m, l, w);
}

// Each dense linear's forward GEMM with its dgrad (the backward op that carries its casts).
std::vector<std::pair<Op, Op>> linears(const StepProgram& p) {
  const LayerProgram& layer = p.dense_layer();
  std::vector<std::pair<Op, Op>> out;
  for (const Op& f : layer.forward) {
    if (f.kind != OpKind::Gemm || f.op_class != OpClass::Gemm) continue;
    for (size_t i = layer.recompute_ops; i < layer.backward.size(); ++i) {
      const Op& b = layer.backward[i];
      if (b.kind == OpKind::Gemm && b.name == f.name && !b.weight_grad) {
        out.push_back({f, b});
        break;
      }
    }
  }
  return out;
}
}  // namespace

TEST_CASE("fp8 GEMMs carry their input and output-gradient casts, bf16 GEMMs none") {
  const StepProgram fp8 = program(Dtype::FP8), bf16 = program(Dtype::BF16);
  int cast = 0;
  for (const Op& op : fp8.dense_layer().forward) {
    if (op.kind != OpKind::Gemm) continue;
    CAPTURE(op.name);
    if (op.op_class == OpClass::Gemm) {
      CHECK(op.cast_bytes == doctest::Approx(4.0 * double(op.m) * double(op.k) * double(op.batch)));
      ++cast;
    } else {
      CHECK(op.cast_bytes == 0);
    }
  }
  CHECK(cast >= 4);  // qkv, out, up, down
  int grad_casts = 0;
  for (const Op& op : fp8.dense_layer().backward)
    if (op.kind == OpKind::Gemm && op.cast_bytes > 0) {
      CHECK_FALSE(op.weight_grad);  // one cast per GEMM pair, priced with dgrad
      ++grad_casts;
    }
  CHECK(grad_casts == cast);
  for (const Op& op : bf16.dense_layer().forward) CHECK(op.cast_bytes == 0);
  for (const Op& op : bf16.dense_layer().backward) CHECK(op.cast_bytes == 0);

  // The pricer adds the cast as memory-bound time on top of the GEMM's own.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l;
  l.dp = 8;
  const OpPricer pricer(hw, l, Dtype::FP8);
  for (const Op& op : fp8.dense_layer().forward)
    if (op.cast_bytes > 0) {
      Op bare = op;
      bare.cast_bytes = 0;
      CHECK(pricer.time(op) == doctest::Approx(pricer.time(bare) + op.cast_bytes / (hw.memory_bandwidth * hw.memory_efficiency)));
    }
}

TEST_CASE("fp8 GEMMs from the measured table lose the input quantization TensorRT-LLM's Linear ran inside the measurement") {
  // The fp8 table times quantize_e4m3_per_tensor (amax, then cast: 5 bytes per input element,
  // two kernels) and the GEMM together; the step program prices training's casts itself.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l;
  const OpPricer fp8(hw, l, Dtype::FP8);
  const KernelTables& tables = *kernel_tables_for("h100-sxm-80g");
  for (Count s : {2048, 8192, 16384}) {
    const Seconds measured = *tables.gemm_time(Dtype::FP8, s, s, s);
    const Seconds quantize = 2 * kMinKernelTime + 5.0 * double(s) * double(s) / (hw.memory_bandwidth * hw.memory_efficiency);
    const Seconds floor = 2.0 * double(s) * double(s) * double(s) / hw.peak(Dtype::FP8);
    CAPTURE(s);
    // The profile's kernel_slowdown (kernels inside a training step) applies on top of the table.
    CHECK(fp8.gemm_time(s, s, s, 1) == doctest::Approx(std::max(measured - quantize, floor) * hw.kernel_slowdown));
    CHECK(fp8.gemm_time(s, s, s, 1) < measured * hw.kernel_slowdown);
    CHECK(fp8.gemm_time(s, s, s, 1) >= floor);
  }
  // bf16 measures F.linear alone: taken as measured.
  const OpPricer bf16(hw, l, Dtype::BF16);
  CHECK(bf16.gemm_time(8192, 8192, 8192, 1) ==
        doctest::Approx(*tables.gemm_time(Dtype::BF16, 8192, 8192, 8192) * hw.kernel_slowdown));
}

TEST_CASE("experts' grouped GEMMs are priced one expert at a time, a batched kernel as one GEMM of all its rows") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const OpPricer pricer(hw, Layout{}, Dtype::BF16);
  // 16 local experts of 2048 tokens each: each its own 2048 x 1536 x 2048 GEMM, less efficient than
  // one 32768-row GEMM sharing a single weight.
  const Seconds grouped = pricer.gemm_time(2048, 1536, 2048, 16, true);
  CHECK(grouped == doctest::Approx(16 * pricer.gemm_time(2048, 1536, 2048, 1)));
  CHECK(grouped > pricer.gemm_time(2048, 1536, 2048, 16, false));
  // The step program marks the experts' GEMMs (and their backward GEMMs) grouped, nothing else.
  const ModelSpec moe = load_model("qwen3-30b-a3b");
  Layout l;
  l.dp = 8;
  l.ep = 8;
  Workload w;
  w.seq = 4096;
  w.global_batch = 8;
  validate_layout(moe, l, w, 8);
  const StepProgram p = expand_step_program(moe, l, w);
  int grouped_ops = 0;
  for (const auto* ops : {&p.moe_layer().forward, &p.moe_layer().backward})
    for (const Op& op : *ops) {
      const std::string name = op.name;
      if (op.grouped) ++grouped_ops;
      if (op.kind == OpKind::Gemm) CHECK(op.grouped == (name == "expert_up" || name == "expert_down"));
    }
  CHECK(grouped_ops == 6);  // up and down, forward, and their two backward GEMMs each
}

TEST_CASE("torchao's fp8 casts (torchtitan): amax and cast of input and weight forward, gradient, weight and input backward") {
  // float8_linear.py matmul_with_hp_or_float8_args: 5 bytes an element a cast (amax read 2, cast
  // read 2 + write 1), the output gradient once for both layouts (6), the weights every time.
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    const auto pairs = linears(program(Dtype::FP8, Framework::Torchtitan, tp));
    REQUIRE(pairs.size() >= 4);
    const double h = 4096;
    for (const auto& [f, dgrad] : pairs) {
      CAPTURE(f.name);
      const double mk = double(f.m) * double(f.k), mn = double(f.m) * double(f.n), kn = double(f.k) * double(f.n);
      // Under TP the column-parallel inputs (the hidden width) are cast on their sequence shard
      // before the all-gather and kept in fp8: no input recast in the backward.
      const bool colwise = tp > 1 && double(f.k) == h;
      CHECK(f.cast_bytes == doctest::Approx(5 * (colwise ? mk / tp : mk) + 5 * kn));
      CHECK(dgrad.cast_bytes == doctest::Approx(6 * mn + 5 * kn + (colwise ? 0 : 5 * mk)));
    }
  }
  // More traffic than TransformerEngine's fused cast + transpose on the same layer.
  double te = 0, ao = 0;
  for (const auto& [f, b] : linears(program(Dtype::FP8))) te += f.cast_bytes + b.cast_bytes;
  for (const auto& [f, b] : linears(program(Dtype::FP8, Framework::Torchtitan))) ao += f.cast_bytes + b.cast_bytes;
  CHECK(ao > 1.5 * te);
}

TEST_CASE("an fp8 run's output head, router and attention GEMMs run in bf16: priced at the bf16 rate") {
  // Megatron-Core's output_layer is a plain ColumnParallelLinear (not a TransformerEngine module)
  // and torchtitan's float8 converter skips "output" (filter_fqns); neither converts the router or
  // attention's batched GEMMs.
  const StepProgram p = program(Dtype::FP8);
  const StageProgram& last = p.stages.back();
  int heads = 0;
  for (const auto* ops : {&last.edges->post_forward, &last.edges->post_backward})
    for (const Op& op : *ops)
      if (op.kind == OpKind::Gemm) {
        CAPTURE(op.name);
        CHECK(op.high_precision);
        ++heads;
      }
  CHECK(heads == 3);  // the head's forward, dgrad and wgrad
  for (const Op& op : p.dense_layer().forward)
    if (op.kind == OpKind::Gemm) CHECK(op.high_precision == (op.op_class != OpClass::Gemm));

  // The pricer reads the bf16 table for them (with the profile's kernel_slowdown), the fp8 table
  // for the converted linears, on a measured GPU and on one priced by its efficiency curve.
  const Count m = 8192, n = 16032, k = 4096;
  for (const char* gpu : {"h100-sxm-80g", "h100-96g-500w"}) {
    CAPTURE(gpu);
    const HardwareProfile hw = load_hardware(gpu);
    const Layout l;
    const OpPricer fp8(hw, l, Dtype::FP8), bf16(hw, l, Dtype::BF16);
    CHECK(fp8.gemm_time(m, n, k, 1, false, true) == doctest::Approx(bf16.gemm_time(m, n, k, 1)));
    CHECK(fp8.gemm_time(m, n, k, 1) < 0.8 * bf16.gemm_time(m, n, k, 1));
    Op head;
    head.kind = OpKind::Gemm;
    head.m = m, head.n = n, head.k = k;
    head.high_precision = true;
    CHECK(fp8.time(head) == doctest::Approx(bf16.time(head)));
  }
}
