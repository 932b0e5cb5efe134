// How validation reads a measured run's framework and fills what its source leaves unstated
// (../shared/validation/README.md: "fills the field the way a user would ... and says so").
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "common/csv.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/validation.hpp"

using namespace sixfold;

namespace {

const char* kHeader =
    "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,cp,ep,sp,"
    "zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,peak_mem_gib,notes\n";

ValidationReport run(const std::string& rows) { return validate_runs(parse_csv(std::string(kHeader) + rows, "test.csv"), {}); }

bool filled(const RowResult& row, const std::string& prefix) {
  return std::any_of(row.filled.begin(), row.filled.end(), [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("validation reads the framework from the source and notes") {
  const ValidationReport rep = run(
      "T1,pytorch/torchtitan benchmarks,32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0,3,2,16,selective,bf16,,,,1000,,,FSDP2\n"
      "D1,Narayanan et al. 2021 Table 2,96,12288,49152,96,96,51200,2048,,,,a100-sxm-80g,384,8,384,1,1,1,1,1,0,3,4,1536,full,fp16,144,,,,,,zero=ZeRO-3 (DeepSpeed)\n"
      "D2,bigscience 2022,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,64,8,64,1,1,1,1,1,0,1,1,64,full,bf16,100,,,,,,DeepSpeed ZeRO-1\n"
      "M1,NVIDIA/Megatron-LM README,24,2048,8192,16,16,131072,4096,,,,h100-sxm-80g,16,8,8,2,1,1,1,1,0,1,1,64,none,bf16,,400,,,,,DP/TP/PP-comm overlap on\n");
  REQUIRE(rep.rows.size() == 4);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.work.framework == Framework::Torchtitan);
  CHECK(rep.rows[0].scenario.layout.recompute == Recompute::SelectiveOp);  // torchtitan's "selective"
  CHECK(rep.rows[1].scenario.work.framework == Framework::DeepSpeedLegacy);
  CHECK(rep.rows[2].scenario.work.framework == Framework::DeepSpeed);
  CHECK(rep.rows[3].scenario.work.framework == Framework::Megatron);
  // "TP-comm overlap on" turns TP overlap on, with the sequence parallelism it needs.
  CHECK(rep.rows[3].scenario.layout.tp_overlap);
  CHECK(rep.rows[3].scenario.layout.sp);
  CHECK(filled(rep.rows[3], "tp_overlap"));
}

TEST_CASE("torchtitan pipelines: the local batch splits into one micro-batch per stage, the global batch is dp x local") {
  const ValidationReport rep = run(
      "P1,pytorch/torchtitan benchmarks,32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,4,1,8,1,1,1,0,3,16,,full,bf16,,,,100,,,\n");
  const RowResult& row = rep.rows.at(0);
  REQUIRE_MESSAGE(row.scored, row.skip_reason);
  CHECK(row.scenario.layout.micro_batch == 2);      // 16 sequences over 8 stages
  CHECK(row.scenario.work.global_batch == 4 * 16);  // dp x local batch
  CHECK(filled(row, "pipeline_micro_batches=8"));
  CHECK(filled(row, "global_batch=64"));
}

TEST_CASE("torchtitan's Interleaved 1F1B without a stage count: two stages per rank, split as evenly as it goes") {
  // 30 layers over pp 4: stages of 8, 8, 7, 7 layers; torchtitan splits them into 8 virtual stages of
  // 4 or 3 layers, which Megatron (equal virtual stages) cannot run.
  const ValidationReport rep = run(
      "I1,pytorch/torchtitan benchmarks · Table 5: Interleaved 1F1B,30,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,8,1,4,1,1,1,0,3,8,,full,bf16,,,,100,,,\n"
      "I2,pytorch/torchtitan benchmarks · Table 5: 1F1B,30,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,8,1,4,1,1,1,0,3,8,,full,bf16,,,,100,,,\n"
      "I3,NVIDIA/Megatron-LM README · Interleaved 1F1B,29,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,8,1,4,2,1,1,0,1,1,64,full,bf16,,,,100,,,\n");
  REQUIRE(rep.rows.size() == 3);
  const RowResult& interleaved = rep.rows[0];
  REQUIRE_MESSAGE(interleaved.scored, interleaved.skip_reason);
  CHECK(interleaved.scenario.layout.vpp == 2);
  CHECK(interleaved.scenario.layout.schedule == Schedule::Interleaved);
  CHECK(filled(interleaved, "vpp=2"));
  const RowResult& plain = rep.rows[1];
  REQUIRE_MESSAGE(plain.scored, plain.skip_reason);
  CHECK(plain.scenario.layout.vpp == 1);
  CHECK_FALSE(filled(plain, "vpp"));
  // The interleaved row holds more micro-batches in flight and has the smaller bubble.
  CHECK(interleaved.predicted.at("tokens_per_gpu_s") > plain.predicted.at("tokens_per_gpu_s"));
  // Megatron's uneven virtual stages (29 layers: no split, with or without the embedding and the
  // loss counted, gives 8 equal ones) stay an impossible layout, by name.
  CHECK_FALSE(rep.rows[2].scored);
  CHECK(rep.rows[2].skip_reason.find("vpp divides layers per stage") != std::string::npos);
}

TEST_CASE("Megatron's virtual pipeline that the layers do not divide: the embedding and the loss in the split") {
  // 30 layers on pp 4 x vpp 2 = 8 virtual stages: only 32 units (with the embedding and the loss)
  // divide, which is how Megatron runs it. 32 layers divide evenly and need no accounting.
  const ValidationReport rep = run(
      "A1,NVIDIA/Megatron-Bridge recipe,30,4096,14336,32,8,128256,4096,,,,h100-sxm-80g,32,8,8,1,4,2,1,1,0,1,1,64,none,bf16,,500,,,,,\n"
      "A2,NVIDIA/Megatron-Bridge recipe,32,4096,14336,32,8,128256,4096,,,,h100-sxm-80g,32,8,8,1,4,2,1,1,0,1,1,64,none,bf16,,500,,,,,\n"
      "A3,NVIDIA/Megatron-Bridge recipe,29,4096,14336,32,8,128256,4096,,,,h100-sxm-80g,32,8,8,1,4,2,1,1,0,1,1,64,none,bf16,,500,,,,,\n");
  REQUIRE(rep.rows.size() == 3);
  REQUIRE_MESSAGE(rep.rows[0].scored, rep.rows[0].skip_reason);
  CHECK(rep.rows[0].scenario.layout.embedding_in_pipeline_split);
  CHECK(rep.rows[0].scenario.layout.loss_in_pipeline_split);
  CHECK(filled(rep.rows[0], "pipeline_split"));
  REQUIRE_MESSAGE(rep.rows[1].scored, rep.rows[1].skip_reason);
  CHECK_FALSE(rep.rows[1].scenario.layout.accounts_pipeline_split());
  CHECK_FALSE(filled(rep.rows[1], "pipeline_split"));
  CHECK_FALSE(rep.rows[2].scored);  // 29 + 2 divide into 8 neither way
}

TEST_CASE("model TFLOP/s in the source's count: Megatron-Bridge and 2025+ Megatron-LM halve causal attention") {
  // The same run reported by three sources: only the FLOP convention differs, so the predicted
  // TFLOP/s of the halving sources is lower by the attention's half share, and tokens/s is not.
  const std::string row = ",32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0,1,1,64,none,bf16,,700,,5000,,,\n";
  const ValidationReport rep = run("C1,NVIDIA/Megatron-LM README (2024-07)" + row + "C2,NVIDIA-NeMo/Megatron-Bridge performance summary" + row +
                                   "C3,NVIDIA/Megatron-LM dev branch recipes (2026)" + row);
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& r : rep.rows) REQUIRE_MESSAGE(r.scored, r.skip_reason);
  const Scenario& s = rep.rows[0].scenario;
  const StepFlops f = step_flops(s.model, s.work, s.layout.recompute);
  CHECK(f.causal_model < f.model);
  CHECK(rep.rows[1].predicted.at("tflops_model") ==
        doctest::Approx(rep.rows[0].predicted.at("tflops_model") * f.causal_model / f.model));
  CHECK(rep.rows[2].predicted.at("tflops_model") == doctest::Approx(rep.rows[1].predicted.at("tflops_model")));
  CHECK(rep.rows[1].predicted.at("tokens_per_gpu_s") == doctest::Approx(rep.rows[0].predicted.at("tokens_per_gpu_s")));
  CHECK_FALSE(filled(rep.rows[0], "model_flops"));
  CHECK(filled(rep.rows[1], "model_flops"));
}

TEST_CASE("unstated dense FFN is 4 x hidden; unstated layouts and impossible batches are skipped, by name") {
  const ValidationReport rep = run(
      "F1,paper,24,2048,,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,\n"
      "F2,paper,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,,,,1,1,1,0,0,1,8,none,bf16,100,,,,,,\n"
      "F3,paper,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,,12,none,bf16,100,,,,,,\n");
  REQUIRE(rep.rows.size() == 3);
  REQUIRE_MESSAGE(rep.rows[0].scored, rep.rows[0].skip_reason);
  CHECK(rep.rows[0].scenario.model.ffn == 4 * 2048);
  CHECK_FALSE(rep.rows[1].scored);
  CHECK(rep.rows[1].skip_reason == "layout not stated (dp, tp, pp)");
  CHECK_FALSE(rep.rows[2].scored);
  CHECK(rep.rows[2].skip_reason == "layout invalid: global batch divisible by dp*micro-batch");
}

TEST_CASE("Megatron recompute modules are read from the recompute field of the notes, and only those the model has") {
  const ValidationReport rep = run(
      "R1,NVIDIA/Megatron-Bridge,24,2048,,16,4,151936,4096,64,8,768,h100-sxm-80g,8,8,8,1,1,1,1,8,0,1,1,64,selective,bf16,,300,,,,,"
      "\"raw: recompute=selective (moe_act, layernorm); zero=distributed optimizer; moe=64 top-8\"\n"
      "R2,DeepSeek-AI 2024,24,2048,,16,16,129280,4096,64,8,768,h100-sxm-80g,8,8,8,1,1,1,1,8,0,1,1,64,selective,bf16,,300,,,,,"
      "raw: recompute=selective: RMSNorm + MLA up-projection recompute; moe=64\n");
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.layout.recompute_modules == (recompute_module::kMoeAct | recompute_module::kLayernorm));
  // The CSV has no MLA fields: the up-projection module is dropped, RMSNorm read as layernorm.
  CHECK(rep.rows[1].scenario.layout.recompute_modules == recompute_module::kLayernorm);
}

TEST_CASE("a row with a built-in model's shape gets its whole architecture") {
  const ValidationReport rep = run(
      "Z1,DeepSeek-AI 2024,61,7168,18432,128,,129280,4096,256,8,2048,h800-sxm-80g,2048,8,128,1,16,1,1,64,0,1,1,15360,selective,fp8,,,,1543,,,\n"
      "Z2,paper,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,\n");
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  const ModelSpec& ds = rep.rows[0].scenario.model;
  CHECK(ds.name == "deepseek-v3");
  CHECK(ds.mla.enabled);
  CHECK(ds.moe.first_k_dense == 3);
  CHECK(filled(rep.rows[0], "model=deepseek-v3"));
  CHECK(rep.rows[1].scenario.model.name == "row Z2");  // no built-in model of that shape
  CHECK_FALSE(filled(rep.rows[1], "model="));
}
