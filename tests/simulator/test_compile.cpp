// torchtitan's training.compile (Workload::compile): what the compiled backward keeps, the compiled
// loss, and how a validation row's `compile` column and date choose them.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/fit/validation.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

namespace {
Workload torchtitan(bool compile) {
  Workload w;
  w.seq = 8192;
  w.global_batch = 16;
  w.framework = Framework::Torchtitan;
  w.compile = compile;
  return w;
}

Layout fsdp(Recompute r) {
  Layout l;
  l.dp = 8;
  l.zero = 3;
  l.micro_batch = 2;
  l.recompute = r;
  return l;
}
}  // namespace

TEST_CASE("compile: op-level checkpointing keeps only what the backward reads, the projections into the residual go") {
  const ModelSpec m = load_model("llama3-8b");
  const double T = 2 * 8192, h = double(m.hidden), a = 2;
  const LayerProgram eager = expand_step_program(m, fsdp(Recompute::SelectiveOp), torchtitan(false)).dense_layer();
  const LayerProgram compiled = expand_step_program(m, fsdp(Recompute::SelectiveOp), torchtitan(true)).dense_layer();
  // Eager, the policy's cache holds wq, wv, w1 and w2 (1st, 3rd, 5th, 7th matmul), attention's
  // output and log-sum-exp, and the layer input. Compiled, w2's output only enters the residual:
  // no backward reads it, so it is not saved (the 4th, wo, is recomputed either way).
  CHECK(eager.saved - compiled.saved == doctest::Approx(T * h * a));
  const double kv = double(m.kv_heads) * m.head_dim;
  const double compiled_expected = T * (h /*input*/ + h /*wq*/ + kv /*wv*/ + h /*attention out*/ + double(m.ffn) /*w1*/) * a +
                                   T * m.heads * 4;  // fp32 log-sum-exp
  CHECK(compiled.saved == doctest::Approx(compiled_expected));
  // The recompute is the policy's either way.
  CHECK(compiled.backward.size() == eager.backward.size());

  // Full recompute keeps the layer input only, compiled or not.
  const LayerProgram full_eager = expand_step_program(m, fsdp(Recompute::Full), torchtitan(false)).dense_layer();
  const LayerProgram full_compiled = expand_step_program(m, fsdp(Recompute::Full), torchtitan(true)).dense_layer();
  CHECK(full_compiled.saved == doctest::Approx(full_eager.saved));
}

TEST_CASE("compile: the loss is torch.compile'd F.cross_entropy, one fused pass over the bf16 logits") {
  const ModelSpec m = load_model("llama3-8b");
  CHECK(cross_entropy_of(torchtitan(false)) == CrossEntropy::TorchFp32);
  CHECK(cross_entropy_of(torchtitan(true)) == CrossEntropy::TorchCompiled);
  Workload stated = torchtitan(true);
  stated.cross_entropy = CrossEntropy::TorchFp32;  // a stated loss wins (a run from before 2025-04)
  CHECK(cross_entropy_of(stated) == CrossEntropy::TorchFp32);

  const double logits = 2.0 * 8192 * double(m.vocab);
  const StepProgram eager = expand_step_program(m, fsdp(Recompute::SelectiveOp), torchtitan(false));
  const StepProgram compiled = expand_step_program(m, fsdp(Recompute::SelectiveOp), torchtitan(true));
  CHECK(eager.stages[0].edges->logits_bytes == doctest::Approx(8 * logits));     // two fp32 gradients
  CHECK(compiled.stages[0].edges->logits_bytes == doctest::Approx(2 * logits));  // one bf16 gradient
  const HardwareProfile hw = load_hardware("h200-sxm-141g");
  const Prediction pe = predict(m, hw, torchtitan(false), fsdp(Recompute::SelectiveOp));
  const Prediction pc = predict(m, hw, torchtitan(true), fsdp(Recompute::SelectiveOp));
  CHECK(pc.memory.reserved() < pe.memory.reserved() - 15 * kGiB);
  CHECK(pc.time.step < pe.time.step);
}

TEST_CASE("compile is torchtitan's: another framework's workload is refused with the reason") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w = torchtitan(true);
  w.framework = Framework::Megatron;
  Layout l = fsdp(Recompute::Selective);
  l.zero = 1;
  try {
    validate_layout(m, l, w, 8);
    FAIL("compile with megatron was accepted");
  } catch (const LayoutError& e) {
    CHECK(std::string(e.what()).find("torchtitan") != std::string::npos);
  }
}

TEST_CASE("the compile column: read by codebase and date, unstated is off and counted, bad cells are errors") {
  // Blocks compiled in 2024-12; the loss stayed eager until bbb1b616e (2025-04).
  const RunSettings dec24 = run_settings(parse_run_facts("torchtitan", "2024-12", "flash", "1", "", "1"), 1, 3);
  CHECK(dec24.compile);
  CHECK(dec24.cross_entropy == CrossEntropy::TorchFp32);
  CHECK_FALSE(dec24.filled_compile);
  const RunSettings jun25 = run_settings(parse_run_facts("torchtitan", "2025-06", "flash", "1", "", "1"), 1, 3);
  CHECK(jun25.compile);
  CHECK(jun25.cross_entropy == CrossEntropy::Default);  // resolves to TorchCompiled with the workload
  const RunSettings eager = run_settings(parse_run_facts("torchtitan", "2025-06", "flash", "1", "", "0"), 1, 3);
  CHECK_FALSE(eager.compile);
  const RunSettings unstated = run_settings(parse_run_facts("torchtitan", "2025-06", "flash", "1", ""), 1, 3);
  CHECK_FALSE(unstated.compile);
  CHECK(unstated.filled_compile);
  CHECK_FALSE(run_settings(parse_run_facts("megatron-lm", "2025-06", "flash", "1", ""), 1, 1).filled_compile);
  CHECK_THROWS_WITH_AS(parse_run_facts("megatron-lm", "2025-06", "flash", "1", "", "1"),
                       doctest::Contains("column 'compile'"), Error);
  CHECK_THROWS_WITH_AS(parse_run_facts("torchtitan", "2025-06", "flash", "1", "", "yes"),
                       doctest::Contains("column 'compile': value 'yes'"), Error);
}

TEST_CASE("validate: a compiled torchtitan row is priced compiled, an unstated compile as the faster of off and on") {
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap";
  const std::string row =
      ",a,32,4096,14336,32,8,128256,8192,,,,h200-sxm-141g,32,8,32,1,1,1,1,1,0,3,2,64,selective,bf16,,,,10000,,48,"
      "torchtitan,2025-06,flash,1,";
  const ValidationReport rep =
      validate_runs(parse_csv(header + ",compile\nC1" + row + ",1\nC0" + row + ",0\nCE" + row + ",\n", "c.csv"), {});
  const ValidationReport none = validate_runs(parse_csv(header + "\nN" + row + "\n", "n.csv"), {});
  REQUIRE(rep.rows.size() == 3);
  REQUIRE(none.rows.size() == 1);
  const double compiled = rep.rows[0].predicted.at("peak_mem_gib"), eager = rep.rows[1].predicted.at("peak_mem_gib");
  CHECK(compiled < eager - 15);
  // Compiled, torchtitan fuses its norms, RoPE and SwiGLU: faster, so an unstated compile (an
  // empty cell, or a file in the original validation schema, which has no such column) is priced
  // compiled, and says so.
  const double compiled_tps = rep.rows[0].predicted.at("tokens_per_gpu_s");
  CHECK(compiled_tps > 1.05 * rep.rows[1].predicted.at("tokens_per_gpu_s"));
  for (const RowResult* r : {&rep.rows[2], &none.rows[0]}) {
    CHECK(r->predicted.at("tokens_per_gpu_s") == doctest::Approx(compiled_tps));
    CHECK(r->predicted.at("peak_mem_gib") == doctest::Approx(compiled));
  }
  auto filled = [](const RowResult& r) {
    for (const std::string& f : r.filled)
      if (f.rfind("compile=", 0) == 0) return f;
    return std::string();
  };
  CHECK(filled(rep.rows[0]).empty());
  CHECK(filled(rep.rows[1]).empty());
  CHECK(filled(rep.rows[2]) == "compile=on");
  CHECK(filled(none.rows[0]) == "compile=on");
}

TEST_CASE("validate: compile under framework other is PyTorch FSDP's, so a row without ZeRO-3 that says 1 is the file's error") {
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,compile\n";
  auto row = [](const char* zero, const char* compile) {
    return std::string("R,a,32,4096,11008,32,32,32000,4096,,,,a100-sxm-80g,16,8,16,1,1,1,1,1,0,") + zero +
           ",2,32,none,bf16,,,,3000,,,other,2024-05,flash,1,," + compile + "\n";
  };
  const ValidationReport ok = validate_runs(parse_csv(header + row("3", "1"), "ok.csv"), {});
  REQUIRE(ok.rows.size() == 1);
  CHECK(ok.rows[0].scored);
  CHECK(ok.rows[0].scenario.work.framework == Framework::Torchtitan);
  CHECK(ok.rows[0].scenario.work.compile);
  CHECK(std::find(ok.rows[0].filled.begin(), ok.rows[0].filled.end(), "framework=pytorch-fsdp") != ok.rows[0].filled.end());
  CHECK_THROWS_WITH_AS(validate_runs(parse_csv(header + row("1", "1"), "bad.csv"), {}),
                       doctest::Contains("bad.csv:2: column 'compile': value '1' with framework 'other'"), Error);
}
