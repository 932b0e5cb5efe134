// torchao's float8 recipes under torchtitan (Workload::float8_recipe, its float8 recipe_name):
// the rowwise recipes cast what both backward GEMMs read along each axis, rescale the backward
// GEMMs' outputs, run plain (bf16) tensor-parallel gathers that async TP cannot fuse, and
// rowwise_with_gw_hp runs the weight gradient in bf16. Each effect is checked against the
// tensorwise recipe on the same layout; the column and the options refuse what torchtitan refuses.
#include <doctest/doctest.h>

#include <string>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/fit/validation.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

namespace {
Workload torchtitan_fp8(Float8Recipe recipe) {
  Workload w;
  w.seq = 8192;
  w.global_batch = 16;
  w.dtype = Dtype::FP8;
  w.framework = Framework::Torchtitan;
  w.float8_recipe = recipe;
  return w;
}

Layout tp_layout(int tp) {
  Layout l;
  l.dp = 8 / tp;
  l.tp = tp;
  l.sp = tp > 1;
  l.zero = 3;
  l.recompute = Recompute::Full;
  return l;
}

StepProgram program(Float8Recipe recipe, int tp = 1) {
  const ModelSpec m = load_model("llama3-8b");
  const Layout l = tp_layout(tp);
  const Workload w = torchtitan_fp8(recipe);
  validate_layout(m, l, w, 8);
  return expand_step_program(m, l, w);
}

// The layer's linear GEMMs, each with its dgrad and wgrad (outside the recomputed forward).
struct Linear {
  Op forward, dgrad, wgrad;
};
std::vector<Linear> linears(const StepProgram& p) {
  const LayerProgram& layer = p.dense_layer();
  std::vector<Linear> out;
  for (const Op& f : layer.forward) {
    if (f.kind != OpKind::Gemm || f.op_class != OpClass::Gemm) continue;
    Linear lin{f, {}, {}};
    for (size_t i = layer.recompute_ops; i < layer.backward.size(); ++i) {
      const Op& b = layer.backward[i];
      if (b.kind != OpKind::Gemm || std::string(b.name) != f.name) continue;
      (b.weight_grad ? lin.wgrad : lin.dgrad) = b;
    }
    out.push_back(lin);
  }
  return out;
}
}  // namespace

TEST_CASE("float8 recipes: rowwise casts twice what both backward GEMMs read, and rescales their outputs") {
  const auto tensorwise = linears(program(Float8Recipe::Tensorwise));
  const auto rowwise = linears(program(Float8Recipe::Rowwise));
  const auto gw_hp = linears(program(Float8Recipe::RowwiseWithGwHp));
  REQUIRE(tensorwise.size() >= 4);
  REQUIRE(rowwise.size() == tensorwise.size());
  REQUIRE(gw_hp.size() == tensorwise.size());
  for (size_t i = 0; i < rowwise.size(); ++i) {
    const Op& f = rowwise[i].forward;
    CAPTURE(f.name);
    const double mk = double(f.m) * double(f.k), mn = double(f.m) * double(f.n), kn = double(f.k) * double(f.n);
    // Forward: input and weight, one amax and one cast each (5 bytes an element), like tensorwise.
    CHECK(f.cast_bytes == doctest::Approx(5 * mk + 5 * kn));
    CHECK(f.cast_bytes == doctest::Approx(tensorwise[i].forward.cast_bytes));
    // Backward: the output gradient along each axis, the weight and the input again, and the
    // unit-scale cuBLAS outputs of both backward GEMMs multiplied by their scales (read + write 2).
    CHECK(rowwise[i].dgrad.cast_bytes == doctest::Approx(10 * mn + 5 * kn + 5 * mk + 4 * (mk + kn)));
    CHECK(rowwise[i].dgrad.cast_bytes > tensorwise[i].dgrad.cast_bytes);
    // rowwise_with_gw_hp: the output gradient once, the weight (tensorwise) for the input
    // gradient, its rescale; the weight gradient in bf16 on the saved bf16 tensors.
    CHECK(gw_hp[i].dgrad.cast_bytes == doctest::Approx(5 * mn + 5 * kn + 4 * mk));
    CHECK(gw_hp[i].wgrad.high_precision);
    CHECK_FALSE(gw_hp[i].dgrad.high_precision);
    CHECK_FALSE(gw_hp[i].forward.high_precision);
    CHECK_FALSE(rowwise[i].wgrad.high_precision);
    CHECK_FALSE(tensorwise[i].wgrad.high_precision);
  }
}

TEST_CASE("float8 recipes: rowwise gathers the TP input in bf16 and keeps it so, and async TP fuses only its reduce-scatters") {
  const StepProgram t = program(Float8Recipe::Tensorwise, 2), r = program(Float8Recipe::Rowwise, 2);
  const double h = 4096;
  // Float8ColwiseParallel (tensorwise) keeps the gathered input in fp8; plain ColwiseParallel in bf16.
  const auto lt = linears(t), lr = linears(r);
  for (size_t i = 0; i < lt.size(); ++i) {
    if (double(lt[i].forward.k) != h) continue;  // a column-parallel GEMM reads the full hidden width
    CAPTURE(lt[i].forward.name);
    CHECK(lr[i].forward.saved == doctest::Approx(2 * lt[i].forward.saved));
    // Tensorwise casts the input on its sequence shard, before the gather; rowwise after it.
    CHECK(lr[i].forward.cast_bytes > lt[i].forward.cast_bytes);
  }
  // The forward's SP all-gathers: hidable under async TP with tensorwise, not with rowwise; the
  // reduce-scatters that are their backward stay hidable with both.
  auto count = [](const std::vector<Op>& ops, bool backward, Collective c, bool hidable) {
    int n = 0;
    for (const Op& op : ops)
      if (op.group == Group::TP && op.collective == c && op.backward == backward && op.tp_overlappable == hidable) ++n;
    return n;
  };
  const LayerProgram &lt_layer = t.dense_layer(), &lr_layer = r.dense_layer();
  CHECK(count(lt_layer.forward, false, Collective::AllGather, true) == 2);
  CHECK(count(lr_layer.forward, false, Collective::AllGather, false) == 2);
  CHECK(count(lr_layer.backward, true, Collective::ReduceScatter, true) ==
        count(lt_layer.backward, true, Collective::ReduceScatter, true));
  // The backward all-gathers of the output gradient (the forward reduce-scatters' backward).
  CHECK(count(lt_layer.backward, true, Collective::AllGather, true) == 2);
  CHECK(count(lr_layer.backward, true, Collective::AllGather, false) == 2);

  // Tensorwise's gathers move fp8 (Float8ColwiseParallel casts before the forward gather,
  // Float8RowwiseParallel the output gradient before the backward's); rowwise's move bf16; the
  // reduce-scatters move bf16 gradients and partial sums either way.
  const double bf16_message = 8192.0 * 4096 * 2;  // tokens (seq 8192, micro-batch 1) x hidden x 2 bytes
  for (const auto* layer : {&lt_layer, &lr_layer})
    for (const auto* ops : {&layer->forward, &layer->backward})
      for (const Op& op : *ops) {
        if (op.group != Group::TP || op.kind != OpKind::Collective) continue;
        CAPTURE(op.name);
        const bool fp8 = layer == &lt_layer && op.collective == Collective::AllGather;
        CHECK(op.message == doctest::Approx(fp8 ? bf16_message / 2 : bf16_message));
      }

  // Priced: rowwise costs more than tensorwise, more again under async TP where tensorwise hides
  // its gathers; bf16 GEMMs make rowwise_with_gw_hp slower still than rowwise on the same layout.
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l = tp_layout(2);
  auto step = [&](Float8Recipe recipe, bool async) {
    Layout x = l;
    x.tp_overlap = async;
    const Workload w = torchtitan_fp8(recipe);
    return predict(m, hw, w, x).step_time;
  };
  CHECK(step(Float8Recipe::Rowwise, false) > step(Float8Recipe::Tensorwise, false));
  CHECK(step(Float8Recipe::Rowwise, true) / step(Float8Recipe::Tensorwise, true) >
        step(Float8Recipe::Rowwise, false) / step(Float8Recipe::Tensorwise, false));
  CHECK(step(Float8Recipe::RowwiseWithGwHp, false) > step(Float8Recipe::Rowwise, false));
}

TEST_CASE("float8 recipes are torchtitan's fp8 recipes: other frameworks, bf16 and the float8 all-gather are refused") {
  const ModelSpec m = load_model("llama3-8b");
  const Layout l = tp_layout(1);
  Workload megatron = torchtitan_fp8(Float8Recipe::Rowwise);
  megatron.framework = Framework::Megatron;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, megatron, 8), doctest::Contains("--float8-recipe rowwise with framework megatron"),
                       LayoutError);
  Workload bf16 = torchtitan_fp8(Float8Recipe::RowwiseWithGwHp);
  bf16.dtype = Dtype::BF16;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, bf16, 8), doctest::Contains("needs fp8 training"), LayoutError);
  Workload gather = torchtitan_fp8(Float8Recipe::Rowwise);
  gather.fsdp_float8_all_gather = true;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, gather, 8), doctest::Contains("tensorwise recipe only"), LayoutError);
  CHECK_FALSE(fsdp_float8_gathers_apply(torchtitan_fp8(Float8Recipe::Rowwise), l));
  CHECK(fsdp_float8_gathers_apply(torchtitan_fp8(Float8Recipe::Tensorwise), l));
  CHECK(parse_float8_recipe("rowwise_with_gw_hp") == Float8Recipe::RowwiseWithGwHp);
  CHECK_THROWS_WITH_AS(parse_float8_recipe("blockwise"), doctest::Contains("tensorwise"), UsageError);
}

TEST_CASE("the float8_recipe column: read for torchtitan fp8 rows, unstated is tensorwise and counted, bad cells are errors") {
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,compile,fsdp_float8_all_gather,float8_recipe";
  const std::string row =
      ",a,32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,16,8,8,2,1,1,1,1,1,3,2,16,full,fp8,,,,5000,,,"
      "torchtitan,2025-06,flash,1,0,1,,";
  const ValidationReport rep = validate_runs(
      parse_csv(header + "\nR" + row + "rowwise\nT" + row + "tensorwise\nE" + row + "\n", "f.csv"), {});
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& r : rep.rows) REQUIRE_MESSAGE(r.scored, r.id << ": " << r.skip_reason);
  CHECK(rep.rows[0].scenario.work.float8_recipe == Float8Recipe::Rowwise);
  CHECK(rep.rows[1].scenario.work.float8_recipe == Float8Recipe::Tensorwise);
  CHECK(rep.rows[2].scenario.work.float8_recipe == Float8Recipe::Tensorwise);
  CHECK(rep.rows[0].predicted.at("tokens_per_gpu_s") < rep.rows[1].predicted.at("tokens_per_gpu_s"));
  CHECK(rep.rows[2].predicted.at("tokens_per_gpu_s") == doctest::Approx(rep.rows[1].predicted.at("tokens_per_gpu_s")));
  auto filled = [](const RowResult& r) {
    for (const std::string& f : r.filled)
      if (f.rfind("float8_recipe=", 0) == 0) return f;
    return std::string();
  };
  CHECK(filled(rep.rows[0]).empty());
  CHECK(filled(rep.rows[1]).empty());
  CHECK(filled(rep.rows[2]) == "float8_recipe=tensorwise");
  // Another codebase, bf16, the float8 all-gather with a rowwise recipe, an unknown name: the
  // file's error, naming the column and value.
  CHECK_THROWS_WITH_AS(parse_run_facts("megatron-lm", "2025-06", "flash", "1", "", "", "", "", "", "rowwise"),
                       doctest::Contains("column 'float8_recipe': value 'rowwise' with framework 'megatron-lm'"), Error);
  std::string bf16 = row;
  bf16.replace(bf16.find(",fp8,"), 5, ",bf16,");
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + "\nB1" + bf16 + "rowwise\n", "b.csv"), {}),
                       doctest::Contains("column 'float8_recipe': value 'rowwise' with dtype 'bf16'"), Error);
  std::string gathered = row;
  gathered.replace(gathered.rfind(",,"), 2, ",1,");
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + "\nB2" + gathered + "rowwise\n", "g.csv"), {}),
                       doctest::Contains("with fsdp_float8_all_gather 1"), Error);
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + "\nB3" + row + "blockwise\n", "n.csv"), {}),
                       doctest::Contains("column 'float8_recipe': value 'blockwise' is not tensorwise, rowwise"), Error);
}
