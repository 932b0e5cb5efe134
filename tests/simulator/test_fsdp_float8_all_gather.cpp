// torchao's FSDP float8 all-gather (Workload::fsdp_float8_all_gather, torchtitan's
// enable_fsdp_float8_all_gather): the linear weights are gathered in fp8 (1 byte an element), held
// so while gathered, and reach their GEMMs already cast. Each effect is checked against the same
// layout with the flag off, and where the flag can change nothing (no FSDP sharding) nothing changes.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/framework_memory.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/fit/validation.hpp"
#include "common/csv.hpp"

using namespace sixfold;

namespace {
Workload fp8_torchtitan(bool float8_gather) {
  Workload w;
  w.seq = 8192;
  w.global_batch = 64;
  w.dtype = Dtype::FP8;
  w.framework = Framework::Torchtitan;
  w.fsdp_float8_all_gather = float8_gather;
  return w;
}

Layout fsdp(int dp, int pp = 1) {
  Layout l;
  l.dp = dp;
  l.pp = pp;
  l.zero = 3;
  l.recompute = Recompute::Full;
  return l;
}

// Bytes one pass of ZeRO-3 gathers moves over the dense group: one collective's message times
// the gathers of a pass.
double gathered_bytes(const ModelSpec& m, const Workload& w, const Layout& l, const StepProgram& p) {
  const DpOps d = dp_ops(m, w, l, p.stages[0], 1);
  for (const DpOp& o : d.ops)
    if (o.role == DpRole::Zero3Gather && !o.expert) return o.op.message * d.gathers;
  return 0;
}
}  // namespace

TEST_CASE("FSDP float8 all-gather: the linear weights travel in fp8, the rest in bf16") {
  const ModelSpec m = load_model("llama3-8b");
  const Layout l = fsdp(8);
  const StepProgram off = expand_step_program(m, l, fp8_torchtitan(false));
  const StepProgram on = expand_step_program(m, l, fp8_torchtitan(true));
  const StageProgram& st = on.stages[0];
  // The linear weights: q, k, v, o and the three SwiGLU matrices of every layer (8B: 218M a layer).
  const Count per_layer = 4096LL * (4096 + 2 * 1024) + 4096LL * 4096 + 3 * 4096LL * 14336;
  CHECK(on.dense_layer().linear_weight_params == per_layer);
  CHECK(st.linear_weight_params == 32 * per_layer);
  CHECK(st.dense_params > st.linear_weight_params);  // norms, embedding and output head stay bf16
  const double bf16 = gathered_bytes(m, fp8_torchtitan(false), l, off);
  const double fp8 = gathered_bytes(m, fp8_torchtitan(true), l, on);
  CHECK(bf16 == doctest::Approx(2.0 * double(st.dense_params)));
  CHECK(fp8 == doctest::Approx(2.0 * double(st.dense_params - st.linear_weight_params) + double(st.linear_weight_params)));
  CHECK(bf16 - fp8 == doctest::Approx(double(st.linear_weight_params)));
}

TEST_CASE("FSDP float8 all-gather: no weight cast in the forward, a transpose copy in the backward") {
  const ModelSpec m = load_model("llama3-8b");
  const Layout l = fsdp(8);
  const StepProgram off = expand_step_program(m, l, fp8_torchtitan(false));
  const StepProgram on = expand_step_program(m, l, fp8_torchtitan(true));
  const auto& f_off = off.dense_layer().forward;
  const auto& f_on = on.dense_layer().forward;
  REQUIRE(f_off.size() == f_on.size());
  int linears = 0;
  for (size_t i = 0; i < f_on.size(); ++i) {
    const Op& a = f_off[i];
    const Op& b = f_on[i];
    CAPTURE(a.name);
    if (a.kind != OpKind::Gemm || a.op_class != OpClass::Gemm) {
      CHECK(a.cast_bytes == b.cast_bytes);
      continue;
    }
    ++linears;
    const double kn = double(a.k) * double(a.n);
    // torchao's amax + scaled cast of the weight (5 bytes an element) is gone from the forward;
    // the backward's 5-byte recast becomes preprocess_addmm's 2-byte column-major copy.
    CHECK(a.cast_bytes - b.cast_bytes == doctest::Approx(5.0 * kn));
    CHECK(a.backward_cast_bytes - b.backward_cast_bytes == doctest::Approx(3.0 * kn));
  }
  CHECK(linears >= 4);
  // Priced: the step is faster and its DP communication shorter.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Prediction p_off = predict(m, hw, fp8_torchtitan(false), l);
  const Prediction p_on = predict(m, hw, fp8_torchtitan(true), l);
  CHECK(p_on.step_time < p_off.step_time);
  CHECK(p_on.time.dp_comm < p_off.time.dp_comm);
}

TEST_CASE("FSDP float8 all-gather: gathered weights held in fp8, kept ones too under a pipeline") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  {
    // Without PP: the current and the prefetched block gathered.
    const Layout l = fsdp(8);
    const Prediction off = predict(m, hw, fp8_torchtitan(false), l);
    const Prediction on = predict(m, hw, fp8_torchtitan(true), l);
    const Count linear = expand_step_program(m, l, fp8_torchtitan(true)).dense_layer().linear_weight_params;
    CHECK(off.memory.gathered_parameters - on.memory.gathered_parameters == doctest::Approx(2.0 * double(linear)));
    CHECK(on.memory.weights == off.memory.weights);
  }
  {
    // Under PP torchtitan keeps every block gathered: the stage's linear weights at 1 byte.
    const Layout l = fsdp(4, 2);
    const Workload w_on = fp8_torchtitan(true);
    const StepProgram p = expand_step_program(m, l, w_on);
    const Prediction off = predict(m, hw, fp8_torchtitan(false), l);
    const Prediction on = predict(m, hw, w_on, l);
    CHECK(off.stage_memory[0].weights - on.stage_memory[0].weights ==
          doctest::Approx(double(p.stages[0].linear_weight_params)));
  }
}

TEST_CASE("FSDP float8 all-gather changes nothing where FSDP does not shard, and only torchtitan fp8 takes it") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout ddp = fsdp(8);
  ddp.zero = 0;
  const Layout one = fsdp(1);
  for (const Layout& l : {ddp, one}) {
    CAPTURE(describe(l));
    CHECK_FALSE(fsdp_float8_gathers(fp8_torchtitan(true), l));
    const Prediction a = predict(m, hw, fp8_torchtitan(false), l);
    const Prediction b = predict(m, hw, fp8_torchtitan(true), l);
    CHECK(a.step_time == b.step_time);
    CHECK(a.memory.total() == b.memory.total());
  }
  CHECK(fsdp_float8_gathers(fp8_torchtitan(true), fsdp(8)));
  Workload megatron = fp8_torchtitan(true);
  megatron.framework = Framework::Megatron;
  CHECK_THROWS_AS(validate_layout(m, fsdp(8), megatron, 8), LayoutError);
  Workload bf16 = fp8_torchtitan(true);
  bf16.dtype = Dtype::BF16;
  CHECK_THROWS_AS(validate_layout(m, fsdp(8), bf16, 8), LayoutError);
}

TEST_CASE("the fsdp_float8_all_gather column: read for torchtitan fp8 rows, unstated is off and counted, bad cells are errors") {
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,compile,fsdp_float8_all_gather";
  const std::string row =
      ",a,32,4096,14336,32,8,128256,8192,,,,h200-sxm-141g,32,8,32,1,1,1,1,1,0,3,2,64,selective,fp8,,,,10000,,48,"
      "torchtitan,2025-06,flash,1,,1,";
  const ValidationReport rep =
      validate_runs(parse_csv(header + "\nF1" + row + "1\nF0" + row + "0\nFE" + row + "\n", "f.csv"), {});
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& r : rep.rows) REQUIRE_MESSAGE(r.scored, r.id << ": " << r.skip_reason);
  CHECK(rep.rows[0].scenario.work.fsdp_float8_all_gather);
  CHECK_FALSE(rep.rows[1].scenario.work.fsdp_float8_all_gather);
  CHECK_FALSE(rep.rows[2].scenario.work.fsdp_float8_all_gather);
  CHECK(rep.rows[0].predicted.at("tokens_per_gpu_s") > rep.rows[1].predicted.at("tokens_per_gpu_s"));
  CHECK(rep.rows[0].predicted.at("peak_mem_gib") < rep.rows[1].predicted.at("peak_mem_gib"));
  CHECK(rep.rows[2].predicted.at("tokens_per_gpu_s") == doctest::Approx(rep.rows[1].predicted.at("tokens_per_gpu_s")));
  auto filled = [](const RowResult& r) {
    for (const std::string& f : r.filled)
      if (f.rfind("fsdp_float8_all_gather=", 0) == 0) return f;
    return std::string();
  };
  CHECK(filled(rep.rows[0]).empty());
  CHECK(filled(rep.rows[1]).empty());
  CHECK(filled(rep.rows[2]) == "fsdp_float8_all_gather=off");
  // Not torchtitan's, or not fp8: the file's error, naming the column.
  CHECK_THROWS_WITH_AS(parse_run_facts("megatron-lm", "2025-06", "flash", "1", "", "", "", "", "1"),
                       doctest::Contains("column 'fsdp_float8_all_gather'"), Error);
  std::string bf16 = row;
  bf16.replace(bf16.find(",fp8,"), 5, ",bf16,");
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + "\nB1" + bf16 + "1\n", "b.csv"), {}),
                       doctest::Contains("column 'fsdp_float8_all_gather': value '1' with dtype 'bf16'"), Error);
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + "\nB2" + row + "yes\n", "y.csv"), {}),
                       doctest::Contains("column 'fsdp_float8_all_gather': value 'yes'"), Error);
}

TEST_CASE("the float8 columns under framework other: PyTorch FSDP's torchao (zero 3), a row without ZeRO-3 is the file's error") {
  // OLMo-core and other FSDP2 codebases train fp8 with torchao's Float8Linear and its float8
  // all-gather, as torchtitan does; under framework 'other' those rows are priced as PyTorch FSDP.
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,compile,fsdp_float8_all_gather,float8_recipe";
  auto row = [](const char* id, const char* zero, const char* gather, const char* recipe) {
    const std::string compile = std::string(zero) == "3" ? "1" : "";
    return std::string("\n") + id + ",a,32,4096,11008,32,32,100352,4096,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0," + zero +
           ",2,1024,none,fp8,,,,13000,,,other,2024-11,flash,1,," + compile + "," + gather + "," + recipe;
  };
  const ValidationReport rep = validate_runs(
      parse_csv(header + row("G1", "3", "1", "tensorwise") + row("G0", "3", "0", "") + "\n", "o.csv"), {});
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& r : rep.rows) REQUIRE_MESSAGE(r.scored, r.id << ": " << r.skip_reason);
  CHECK(rep.rows[0].scenario.work.framework == Framework::Torchtitan);
  CHECK(rep.rows[0].scenario.work.fsdp_float8_all_gather);
  CHECK_FALSE(rep.rows[1].scenario.work.fsdp_float8_all_gather);
  CHECK(rep.rows[0].predicted.at("tokens_per_gpu_s") > rep.rows[1].predicted.at("tokens_per_gpu_s"));
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + row("Z1", "1", "1", "") + "\n", "z.csv"), {}),
                       doctest::Contains("z.csv:2: column 'fsdp_float8_all_gather': value '1' with framework 'other'"),
                       Error);
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + row("Z2", "1", "", "rowwise") + "\n", "r.csv"), {}),
                       doctest::Contains("r.csv:2: column 'float8_recipe': value 'rowwise' with framework 'other'"),
                       Error);
  CHECK_THROWS_WITH_AS(parse_run_facts("deepspeed", "2024-11", "flash", "1", "", "", "", "", "1"),
                       doctest::Contains("column 'fsdp_float8_all_gather': value '1' with framework 'deepspeed'"), Error);
}
