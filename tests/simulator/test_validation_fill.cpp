// How validation reads a measured run's framework and fills what its source leaves unstated
// (data/validation/README.md: "fills the field the way a user would ... and says so").
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "common/csv.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/validation.hpp"

using namespace sixfold;

namespace {

const char* kHeader =
    "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,cp,ep,sp,"
    "zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,peak_mem_gib,notes,"
    "framework,framework_date,attention,dp_overlap,tp_overlap,compile\n";
constexpr int kColumns = 40;

// Rows are written up to `notes`; the run-fact columns after it may be left off (empty).
ValidationReport run(const std::string& rows) {
  std::string text = kHeader, line;
  for (char c : rows) {
    if (c != '\n') {
      line += c;
      continue;
    }
    int fields = 1;
    bool quoted = false;
    for (char d : line) {
      if (d == '"') quoted = !quoted;
      fields += d == ',' && !quoted;
    }
    text += line + std::string(std::max(0, kColumns - fields), ',') + "\n";
    line.clear();
  }
  return validate_runs(parse_csv(text, "test.csv"), {});
}

bool filled(const RowResult& row, const std::string& prefix) {
  return std::any_of(row.filled.begin(), row.filled.end(), [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("validation reads the framework, its date, attention and overlap from the columns") {
  const ValidationReport rep = run(
      "T1,a,32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0,3,2,16,selective,bf16,,,,1000,,,,torchtitan,2024-12,flash,1,\n"
      "D1,b,96,12288,49152,96,96,51200,2048,,,,a100-sxm-80g,384,8,384,1,1,1,1,1,0,3,4,1536,full,fp16,144,,,,,,,deepspeed,2021-04,,,\n"
      "D2,c,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,64,8,64,1,1,1,1,1,0,1,1,64,full,bf16,100,,,,,,,megatron-deepspeed,2022-02,fused-softmax,0,\n"
      "M1,d,24,2048,8192,16,16,131072,4096,,,,h100-sxm-80g,16,8,8,2,1,1,1,1,0,1,1,64,none,bf16,,400,,,,,,megatron-lm,2024-07,flash,1,1\n"
      "M2,e,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,16,8,2,8,1,1,1,1,0,0,1,64,none,fp16,100,,,,,,,megatron-lm,2021-04,,,\n");
  REQUIRE(rep.rows.size() == 5);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.work.framework == Framework::Torchtitan);
  CHECK(rep.rows[0].scenario.layout.recompute == Recompute::SelectiveOp);  // torchtitan's "selective"
  CHECK(rep.rows[1].scenario.work.framework == Framework::DeepSpeedLegacy);  // ZeRO-3 before PR #1188
  CHECK_FALSE(rep.rows[1].scenario.work.flash_attention);                  // before FlashAttention existed
  CHECK(filled(rep.rows[1], "attention=fused-softmax"));
  CHECK(rep.rows[2].scenario.work.framework == Framework::DeepSpeed);
  CHECK(rep.rows[2].scenario.layout.dp_overlap == DpOverlap::None);
  CHECK_FALSE(rep.rows[2].scenario.work.flash_attention);
  CHECK(rep.rows[3].scenario.work.framework == Framework::Megatron);
  // tp_overlap = 1 turns TP overlap on, with the sequence parallelism it needs.
  CHECK(rep.rows[3].scenario.layout.tp_overlap);
  CHECK(rep.rows[3].scenario.layout.sp);
  CHECK_FALSE(filled(rep.rows[3], "tp_overlap"));
  // Megatron-LM of 2021: local DDP (all-reduce after the backward) and the fused softmax, filled.
  CHECK(rep.rows[4].scenario.layout.dp_overlap == DpOverlap::None);
  CHECK_FALSE(rep.rows[4].scenario.work.flash_attention);
  CHECK(filled(rep.rows[4], "dp_overlap=off"));
  CHECK(filled(rep.rows[4], "tp_overlap=off"));
}

TEST_CASE("an unstated TP overlap: on for Megatron-Core from 2023-11 with TP > 1, as its published recipes run") {
  const std::string shape = ",24,2048,8192,16,16,131072,4096,,,,h100-sxm-80g,16,8,4,4,1,1,1,1,1,1,1,64,none,bf16,,400,,,,,,";
  const ValidationReport rep = run("P1,a" + shape + "megatron-lm,2024-07,flash,1,\n"   // unstated, 2024
                                   "P2,b" + shape + "megatron-lm,2023-06,flash,1,\n"   // unstated, before userbuffers
                                   "P3,c" + shape + "megatron-lm,2024-07,flash,1,0\n"  // stated off
                                   "P4,d" + shape + "torchtitan,2024-12,flash,1,\n");  // torchtitan: Async TP is opt-in
  REQUIRE(rep.rows.size() == 4);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.layout.tp_overlap);
  CHECK(filled(rep.rows[0], "tp_overlap=on"));
  CHECK_FALSE(rep.rows[1].scenario.layout.tp_overlap);
  CHECK(filled(rep.rows[1], "tp_overlap=off"));
  CHECK_FALSE(rep.rows[2].scenario.layout.tp_overlap);
  CHECK_FALSE(filled(rep.rows[2], "tp_overlap"));
  CHECK_FALSE(rep.rows[3].scenario.layout.tp_overlap);
  // Overlap makes the same row faster.
  CHECK(rep.rows[0].predicted.at("tflops_model") > rep.rows[2].predicted.at("tflops_model"));
}

TEST_CASE("a torchtitan row with tp > 1 runs sequence parallel, as torchtitan's TP plan always does, and says so") {
  // sp stated 0: Megatron prices it so; torchtitan has no tensor parallelism without SequenceParallel.
  const std::string shape = ",24,2048,8192,16,16,131072,4096,,,,h100-sxm-80g,16,8,4,4,1,1,1,1,0,3,1,64,full,bf16,,400,,,,,,";
  const ValidationReport rep = run("S1,a" + shape + "torchtitan,2024-12,flash,1,0\n"
                                   "S2,b" + shape + "megatron-lm,2024-07,flash,1,0\n");
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.layout.sp);
  CHECK(filled(rep.rows[0], "sp=on"));
  CHECK_FALSE(rep.rows[1].scenario.layout.sp);
  CHECK_FALSE(filled(rep.rows[1], "sp=on"));
}

TEST_CASE("the validator reads no free text: notes and source change nothing") {
  const std::string tail = ",32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,64,8,8,8,1,1,1,1,0,1,1,64,,bf16,,,,1000,,,";
  const ValidationReport rep = run(
      "N1,Megatron-DeepSpeed 2021 torchtitan" + tail + "DeepSpeed 2021 torchtitan Async TP TP-comm overlap on Interleaved 1F1B "
      "recompute=selective (mla_up_proj; layernorm) Megatron-Bridge,megatron-lm,2024-07,flash,1,\n"
      "N2,x" + tail + ",megatron-lm,2024-07,flash,1,\n");
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].predicted == rep.rows[1].predicted);
  CHECK(rep.rows[0].filled == rep.rows[1].filled);
  CHECK(rep.rows[0].scenario.layout == rep.rows[1].scenario.layout);
  CHECK(rep.rows[0].scenario.work.framework == rep.rows[1].scenario.work.framework);
}

TEST_CASE("a run-fact column outside its allowed values is an input error naming the file, line and column") {
  const std::string row = "X1,a,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,,";
  for (const auto& [facts, column] : {std::pair{"pytorch,,,,", "framework"}, {"megatron-lm,2021,,,", "framework_date"},
                                     {"megatron-lm,,flash2,,", "attention"}, {"megatron-lm,,,yes,", "dp_overlap"},
                                     {"megatron-lm,,,,2", "tp_overlap"}}) {
    try {
      run(row + facts + "\n");
      FAIL("accepted a bad " << column);
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find("test.csv:2: column '" + std::string(column) + "'") != std::string::npos, what);
    }
  }
}

TEST_CASE("a malformed count or metric cell is an input error naming the file, line and column") {
  const std::string head = "X1,a,";
  for (const auto& [row, column] :
       {std::pair{"30.5,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,,,,,,", "layers"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,-8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,,,,,,", "gpus"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,nan,,,,,,,,,,,", "tflops_hw"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,inf,,,,,,,", "iter_s"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,2,0,1,8,none,bf16,100,,,,,,,,,,,", "sp"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,4,1,8,none,bf16,100,,,,,,,,,,,", "zero"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,partial,bf16,100,,,,,,,,,,,", "recompute"},
        {"24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,int8,100,,,,,,,,,,,", "dtype"}}) {
    try {
      run(head + row + "\n");
      FAIL("accepted a bad " << column);
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find("test.csv:2: column '" + std::string(column) + "'") != std::string::npos, what);
    }
  }
}

TEST_CASE("torchtitan pipelines: the local batch splits as torchtitan did at the row's date, the global batch is dp x local") {
  // pipeline_parallel_microbatches unset: pp micro-batches (9dec370, 2024-12), then pp x stages per
  // rank (90567fc98, 2025-01), then micro-batches of one sequence (5e2033c75, 2025-04; and today).
  const std::string shape = "32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,";
  const ValidationReport rep = run(
      // 32 GPUs: dp 4 x pp 8, local batch 16.
      "P1,t," + shape + "32,8,4,1,8,1,1,1,0,3,16,,full,bf16,,,,100,,,,torchtitan,2024-12\n"
      // 16 GPUs: dp 4 x pp 4 x vpp 2, local batch 16.
      "P2,t," + shape + "16,8,4,1,4,2,1,1,0,3,16,,full,bf16,,,,100,,,,torchtitan,2024-12\n"
      "P3,t," + shape + "16,8,4,1,4,2,1,1,0,3,16,,full,bf16,,,,100,,,,torchtitan,2025-02\n"
      "P4,t," + shape + "16,8,4,1,4,2,1,1,0,3,16,,full,bf16,,,,100,,,,torchtitan,2025-06\n"
      "P5,t," + shape + "16,8,4,1,4,2,1,1,0,3,16,,full,bf16,,,,100,,,,torchtitan\n"
      // pp 4 x vpp 3 stages do not divide a local batch of 16: torchtitan refused it in 2025-02.
      "P6,t,30,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,16,8,4,1,4,3,1,1,0,3,16,,full,bf16,,,,100,,,,torchtitan,"
      "2025-02\n");
  REQUIRE(rep.rows.size() == 6);
  for (size_t i = 0; i < 5; ++i) REQUIRE_MESSAGE(rep.rows[i].scored, rep.rows[i].id << ": " << rep.rows[i].skip_reason);
  const RowResult& p1 = rep.rows[0];
  CHECK(p1.scenario.layout.micro_batch == 2);  // 16 sequences over pp 8
  CHECK(p1.scenario.work.global_batch == 4 * 16);
  CHECK(filled(p1, "pipeline_micro_batches=8"));
  CHECK(filled(p1, "global_batch=64"));
  const Count expected_micro_batch[] = {4, 2, 1, 1};  // pp; pp x vpp; one sequence (2025-06, undated)
  for (size_t i = 1; i < 5; ++i) {
    CAPTURE(rep.rows[i].id);
    CHECK(rep.rows[i].scenario.layout.vpp == 2);
    CHECK(rep.rows[i].scenario.layout.micro_batch == expected_micro_batch[i - 1]);
    CHECK(filled(rep.rows[i], "pipeline_micro_batches=" + std::to_string(16 / expected_micro_batch[i - 1])));
  }
  CHECK_FALSE(rep.rows[5].scored);
  CHECK(rep.rows[5].skip_reason.find("pp x vpp") != std::string::npos);
}

TEST_CASE("an unstated vpp is the fastest that fits, as the micro-batch, torchtitan's virtual stages may be uneven") {
  // 30 layers over pp 4: stages of 8, 8, 7, 7 layers; torchtitan splits them into virtual stages
  // of uneven sizes, which Megatron (equal virtual stages) cannot run.
  const ValidationReport rep = run(
      "I1,a,30,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,8,1,4,,1,1,0,3,8,,full,bf16,,,,100,,,,torchtitan\n"
      "I2,a,30,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,8,1,4,1,1,1,0,3,8,,full,bf16,,,,100,,,,torchtitan\n"
      "I3,b,29,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,32,8,8,1,4,2,1,1,0,1,1,64,full,bf16,,,,100,,,,megatron-lm\n");
  REQUIRE(rep.rows.size() == 3);
  const RowResult& filled_vpp = rep.rows[0];
  REQUIRE_MESSAGE(filled_vpp.scored, filled_vpp.skip_reason);
  CHECK(filled_vpp.scenario.layout.vpp > 1);
  CHECK(filled_vpp.scenario.layout.schedule == Schedule::Interleaved);
  CHECK(filled(filled_vpp, "vpp=" + std::to_string(filled_vpp.scenario.layout.vpp)));
  const RowResult& plain = rep.rows[1];
  REQUIRE_MESSAGE(plain.scored, plain.skip_reason);
  CHECK(plain.scenario.layout.vpp == 1);
  CHECK_FALSE(filled(plain, "vpp"));
  // The interleaved row holds more micro-batches in flight and has the smaller bubble.
  CHECK(filled_vpp.predicted.at("tokens_per_gpu_s") > plain.predicted.at("tokens_per_gpu_s"));
  // Megatron's uneven virtual stages (29 layers: no split, with or without the embedding and the
  // loss counted, gives 8 equal ones) run with a custom pipeline layout.
  REQUIRE_MESSAGE(rep.rows[2].scored, rep.rows[2].skip_reason);
  CHECK(filled(rep.rows[2], "pipeline_layout="));
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
  // 29 + 2 divide into 8 neither way: Megatron needs a custom layout, the one its DeepSeek-V3
  // recipes write (ceil(29 / 8) = 4 layers a stage, one on the last).
  REQUIRE_MESSAGE(rep.rows[2].scored, rep.rows[2].skip_reason);
  CHECK(rep.rows[2].scenario.layout.pipeline_layout == "Et*4|(t*4|)*6,tL");
  CHECK(filled(rep.rows[2], "pipeline_layout=Et*4|(t*4|)*6,tL"));
  CHECK_FALSE(rep.rows[2].scenario.layout.accounts_pipeline_split());
  CHECK_FALSE(filled(rep.rows[0], "pipeline_layout"));
}

TEST_CASE("a virtual pipeline no Megatron split fills is skipped, by name") {
  // 10 layers on 8 virtual stages: ceil(10 / 8) = 2 a stage leaves the sixth and seventh empty.
  const ValidationReport rep = run(
      "A4,NVIDIA/Megatron-Bridge recipe,10,4096,14336,32,8,128256,4096,,,,h100-sxm-80g,32,8,8,1,4,2,1,1,0,1,1,64,none,bf16,,500,,,,,\n");
  REQUIRE(rep.rows.size() == 1);
  CHECK_FALSE(rep.rows[0].scored);
  CHECK(rep.rows[0].skip_reason.find("vpp divides layers per stage") != std::string::npos);
}

TEST_CASE("model TFLOP/s in the source's count: Megatron-Bridge and 2025+ Megatron-LM halve causal attention") {
  // The same run reported by three sources: only the FLOP convention differs, so the predicted
  // TFLOP/s of the halving sources is lower by the attention's half share, and tokens/s is not.
  const std::string row = ",32,4096,14336,32,8,128256,8192,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0,1,1,64,none,bf16,,700,,5000,,,\n";
  // framework_date decides the convention (run_facts.cpp), the source's wording does not.
  std::string rows;
  for (const char* facts : {"megatron-lm,2024-07", "megatron-lm,2025-11", "megatron-lm,2026-08"})
    rows += std::string("C,x") + row.substr(0, row.size() - 1) + "," + facts + "\n";
  const ValidationReport rep = run(rows);
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

TEST_CASE("unstated dense FFN is 4 x hidden, unstated layouts and impossible batches are skipped, by name") {
  const ValidationReport rep = run(
      "F1,paper,24,2048,,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,\n"
      "F2,paper,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,,,,1,1,1,0,0,1,8,none,bf16,100,,,,,,\n"
      "F3,paper,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,,12,none,bf16,100,,,,,,\n"
      "F4,paper,24,2050,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,none,bf16,100,,,,,,\n");
  REQUIRE(rep.rows.size() == 4);
  REQUIRE_MESSAGE(rep.rows[0].scored, rep.rows[0].skip_reason);
  CHECK(rep.rows[0].scenario.model.ffn == 4 * 2048);
  CHECK_FALSE(rep.rows[1].scored);
  CHECK(rep.rows[1].skip_reason == "layout not stated (dp, tp, pp)");
  CHECK_FALSE(rep.rows[2].scored);
  CHECK(rep.rows[2].skip_reason == "layout invalid: global batch divisible by dp*micro-batch");
  // A width no whole number of heads gives was priced with hidden / heads rounded down.
  CHECK_FALSE(rep.rows[3].scored);
  CHECK(rep.rows[3].skip_reason == "hidden 2050 is not a multiple of heads 16 (the head width is hidden / heads)");
}

TEST_CASE("Megatron's selective recompute: the module set whose layout is fastest in memory, as for an unstated policy") {
  // DeepSeek-V3 on 2048 H800 with selective recompute: core attention alone does not fit, the
  // ladder's heavier sets (moe_act, layernorm, mla_up_proj) are tried until one does.
  const ValidationReport rep = run(
      "R1,a,61,7168,18432,128,,129280,4096,256,8,2048,h800-sxm-80g,2048,8,128,1,16,1,1,64,0,1,1,15360,selective,fp8,,,,1543,,,,deepseek-internal\n"
      "R2,b,24,2048,8192,16,16,50257,2048,,,,a100-sxm-80g,8,8,8,1,1,1,1,1,0,0,1,8,selective,bf16,100,,,,,,,megatron-lm\n");
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].predicted_to_fit);
  CHECK(rep.rows[0].scenario.layout.recompute_modules != 0);
  CHECK(filled(rep.rows[0], "recompute_modules="));
  // The fastest that fits is the set DeepSeek-V3's report names (3.2.3, 3.3.3): norms, MLA's
  // up-projections, the SwiGLU's output; not core attention. Its codebase keeps Adam's moments in
  // bf16 and the SwiGLU's input in fp8 (report 3.3.3), which the row inherits.
  namespace rm = recompute_module;
  CHECK(rep.rows[0].scenario.layout.recompute_modules == (rm::kLayernorm | rm::kMlaUpProj | rm::kMoeAct));
  CHECK(rep.rows[0].scenario.work.bf16_adam_moments);
  CHECK(rep.rows[0].scenario.work.fp8_activation_input_store);
  CHECK_FALSE(rep.rows[1].scenario.work.bf16_adam_moments);
  CHECK_FALSE(rep.rows[1].scenario.work.fp8_activation_input_store);
  // A small model fits with the default (core attention): nothing is filled.
  CHECK(rep.rows[1].scenario.layout.recompute_modules == 0);
  CHECK_FALSE(filled(rep.rows[1], "recompute_modules"));
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

TEST_CASE("an unstated recompute is one the codebase had at its date: no selective before 2022-05 or in DeepSpeed") {
  // A 175B model on 64 A100s needs some recompute; where selective existed it is the cheapest that
  // fits, elsewhere the whole layer is re-run.
  const ValidationReport rep = run(
      "M21,a,96,12288,49152,96,96,51200,2048,,,,a100-sxm-80g,64,8,1,8,8,1,1,1,0,0,1,64,,fp16,150,,,,,,,megatron-lm,2021-04,,,\n"
      "M22,b,96,12288,49152,96,96,51200,2048,,,,a100-sxm-80g,64,8,1,8,8,1,1,1,0,0,1,64,,fp16,150,,,,,,,megatron-lm,2022-05,,,\n"
      "DS1,c,96,12288,49152,96,96,51200,2048,,,,a100-sxm-80g,64,8,1,8,8,1,1,1,0,0,1,64,,fp16,150,,,,,,,megatron-deepspeed,2023-06,,,\n"
      "DS2,d,96,12288,49152,96,96,51200,2048,,,,a100-sxm-80g,64,8,1,8,8,1,1,1,0,0,1,64,,fp16,150,,,,,,,deepspeed,2023-06,fused-softmax,,\n");
  REQUIRE(rep.rows.size() == 4);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.layout.recompute == Recompute::Full);
  CHECK(rep.rows[1].scenario.layout.recompute == Recompute::Selective);
  CHECK(rep.rows[2].scenario.layout.recompute == Recompute::Selective);  // Megatron's model code
  CHECK(rep.rows[3].scenario.layout.recompute == Recompute::Full);       // the DeepSpeed engine's checkpointing
}

TEST_CASE("an unstated recompute is chosen with the rest: the fastest layout that fits, a heavier recompute where it lets a deeper interleave fit") {
  // Llama 3 405B on 8192 H100 (arXiv 2407.21783 Table 4: tp 8, pp 16, dp 64, 32 sequences per DP
  // rank), recompute, micro-batch and vpp not stated. With core attention recomputed only 1F1B
  // fits, its bubble 15 of 47 slots; full recompute fits an 8-way interleave and is faster, and
  // Megatron's block recompute of fewer layers per virtual stage faster still.
  const std::string shape = "126,16384,53248,128,8,128256,8192,,,,h100-sxm-80g,8192,8,64,8,16,,1,1,1,1,,2048,";
  const ValidationReport rep = run("U,a," + shape + ",bf16,,430,,,,,,meta-internal,2024-07,flash\n" +
                                   "S,a," + shape + "selective,bf16,,430,,,,,,meta-internal,2024-07,flash\n" +
                                   "F,a," + shape + "full,bf16,,430,,,,,,meta-internal,2024-07,flash\n");
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  for (const RowResult& row : rep.rows) CHECK(row.predicted_to_fit);
  const double unstated = rep.rows[0].predicted.at("tflops_model"), selective = rep.rows[1].predicted.at("tflops_model"),
               full = rep.rows[2].predicted.at("tflops_model");
  CHECK(unstated > std::max(selective, full));
  CHECK(full > selective);
  CHECK(rep.rows[0].scenario.layout.recompute == Recompute::Full);
  CHECK(rep.rows[0].scenario.layout.recompute_num_layers > 0);
  CHECK(rep.rows[2].scenario.layout.recompute_num_layers == 0);  // a stated "full" recomputes every layer
  CHECK(rep.rows[0].scenario.layout.vpp > 1);
  CHECK(rep.rows[1].scenario.layout.vpp == 1);
  CHECK(filled(rep.rows[0], "recompute=full"));
}

TEST_CASE("an unstated recompute may be Megatron's block recompute where it existed: the fewest layers that fit") {
  // Llama 3.1 405B's shape on 8192 H100 (tp 8, pp 16, dp 64): selective recompute does not fit at
  // any interleave, every layer recomputed does; block recompute of fewer layers per virtual stage
  // fits too and is faster. Before 2022-05 Megatron had no block method: every layer recomputes.
  const std::string row = ",a,126,16384,53248,128,8,128256,8192,,,,h100-sxm-80g,8192,8,64,8,16,,1,1,1,1,,2048,,bf16,,430,,,,,,";
  const ValidationReport rep = run("K1" + row + "megatron-lm,2024-07,flash\n" + "K2" + row + "megatron-lm,2021-04,flash\n" +
                                   "K3" + row + "deepspeed,2024-07,flash\n");
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& row_result : rep.rows) REQUIRE_MESSAGE(row_result.scored, row_result.id << ": " << row_result.skip_reason);
  const Layout& block = rep.rows[0].scenario.layout;
  CHECK(rep.rows[0].predicted_to_fit);
  CHECK(block.recompute == Recompute::Full);
  CHECK(block.recompute_num_layers > 0);
  CHECK(filled(rep.rows[0], "recompute=full (block, "));
  // One layer fewer recomputed per virtual stage no longer fits: the count is the fewest.
  Layout fewer = block;
  fewer.recompute_num_layers -= 1;
  if (fewer.recompute_num_layers > 0) {
    const Scenario& s = rep.rows[0].scenario;
    const Prediction p = predict(s.model, s.hardware, s.work, fewer);
    Bytes needed = 0;
    for (const MemoryBreakdown& m : p.stage_memory) needed = std::max(needed, m.allocated() + m.outside_allocator);
    CHECK(needed > s.hardware.memory_capacity);
  }
  // Every layer recomputed is slower than the block the row was filled with.
  Layout whole = block;
  whole.recompute_num_layers = 0;
  const Scenario& s = rep.rows[0].scenario;
  CHECK(predict(s.model, s.hardware, s.work, whole).step_time > predict(s.model, s.hardware, s.work, block).step_time);
  CHECK(rep.rows[1].scenario.layout.recompute == Recompute::Full);
  CHECK(rep.rows[1].scenario.layout.recompute_num_layers == 0);
  CHECK(rep.rows[2].scenario.layout.recompute_num_layers == 0);  // not DeepSpeed's
}

TEST_CASE("an unstated torchtitan recompute may checkpoint every k-th layer: the largest k that fits") {
  // Llama-3-8B on 8 H100, seq 2048, local batch 4, FSDP, eager: checkpointing every 4th layer is
  // faster than op-level checkpointing and fits with the allocator's cache; every 5th fits its live
  // tensors only (the allocator would retry), so 4 is the fill.
  const std::string row = ",a,32,4096,14336,32,8,128256,2048,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0,3,4,,";
  const ValidationReport rep = run("E1" + row + ",bf16,,,,1000,,,,torchtitan,2024-12,flash,1,0,0\n" +
                                   "E2" + row + "full,bf16,,,,1000,,,,torchtitan,2024-12,flash,1,0,0\n" +
                                   "E3" + row.substr(0, row.size() - 1) + "32,,bf16,,,,1000,,,,llm-foundry,2024-12,flash,1,0\n");
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& r : rep.rows) REQUIRE_MESSAGE(r.scored, r.id << ": " << r.skip_reason);
  const Layout& l = rep.rows[0].scenario.layout;
  CHECK(rep.rows[0].memory_fit == MemoryFit::Fits);
  CHECK(l.recompute == Recompute::Full);
  CHECK(l.recompute_every == 4);
  CHECK(filled(rep.rows[0], "recompute=full (every k-th layer, recompute_every=4)"));
  const Scenario& s = rep.rows[0].scenario;
  Layout lighter = l;
  lighter.recompute_every = 5;
  const Prediction p = predict(s.model, s.hardware, s.work, lighter);
  CHECK(memory_fit(p, s.hardware) == MemoryFit::AllocatorRetries);
  Layout op = l;
  op.recompute = Recompute::SelectiveOp;
  op.recompute_every = 0;
  CHECK(predict(s.model, s.hardware, s.work, op).step_time > predict(s.model, s.hardware, s.work, l).step_time);
  CHECK(rep.rows[1].scenario.layout.recompute_every == 0);  // a stated "full" is every layer
  CHECK(rep.rows[2].scenario.layout.recompute_every == 0);  // Composer has no every-k option
}

TEST_CASE("a row of Nemotron-4 340B's shape is priced with its squared-ReLU MLP, not a gated one") {
  // 4 x hidden with grouped KV heads would otherwise read as a Llama-style SwiGLU MLP (3 matrices).
  const ValidationReport rep = run(
      "N1,a,96,18432,73728,96,8,256000,4096,,,,h100-sxm-80g,6144,8,64,8,12,8,1,1,1,1,1,2304,selective,bf16,,,,,8.0,,,megatron-lm,2024-05,flash,1,\n");
  REQUIRE(rep.rows.size() == 1);
  REQUIRE_MESSAGE(rep.rows[0].scored, rep.rows[0].skip_reason);
  CHECK(rep.rows[0].scenario.model.activation == Activation::SquaredReLU);
  CHECK(filled(rep.rows[0], "model=nemotron4-340b"));
}

TEST_CASE("an unstated etp of a Megatron MoE row is Megatron-Core's default, the TP size, and a stated one is kept") {
  // Megatron-LM's arguments.py: expert_tensor_parallel_size defaults to tensor_model_parallel_size.
  std::string header = kHeader;
  header.pop_back();  // its newline
  const std::string moe = "16,4096,,32,8,32000,4096,8,2,14336,h100-sxm-80g,32,8,8,4,1,1,1,8,1,1,1,64,none,bf16,,300,,,,,";
  const std::string text = header + ",etp\n" +
                           "E1,a," + moe + ",megatron-lm,2024-12,,,,,\n"   // unstated: etp = tp = 4
                           "E2,b," + moe + ",megatron-lm,2024-12,,,,,1\n"  // stated 1
                           "E3,c," + moe + ",torchtitan,2025-06,,,,,\n";   // other codebases: 1
  const ValidationReport rep = validate_runs(parse_csv(text, "etp.csv"), {});
  REQUIRE(rep.rows.size() == 3);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.layout.etp == 4);
  CHECK(filled(rep.rows[0], "etp=4"));
  CHECK(rep.rows[1].scenario.layout.etp == 1);
  CHECK_FALSE(filled(rep.rows[1], "etp="));
  CHECK(rep.rows[2].scenario.layout.etp == 1);
  // Sharding each expert over 4 more ranks puts the EP group of 8 across 4 nodes: slower here.
  CHECK(rep.rows[0].predicted.at("tflops_model") < rep.rows[1].predicted.at("tflops_model"));
}

TEST_CASE("a malformed etp cell is an input error naming the file, line, column and value") {
  std::string header = kHeader;
  header.pop_back();
  const std::string moe = "16,4096,,32,8,32000,4096,8,2,14336,h100-sxm-80g,32,8,8,4,1,1,1,8,1,1,1,64,none,bf16,,300,,,,,";
  for (const char* bad : {"two", "0", "1.5"}) {
    CAPTURE(bad);
    const std::string text = header + ",etp\nE1,a," + moe + ",megatron-lm,2024-12,,,,," + bad + "\n";
    const std::string expected = std::string("etp.csv:2: column 'etp': value '") + bad + "'";
    CHECK_THROWS_WITH_AS(validate_runs(parse_csv(text, "etp.csv"), {}), doctest::Contains(expected.c_str()), Error);
  }
}

TEST_CASE("an unstated choice prefers a layout that fits with the allocator's cache to a faster one that fits only by its retries") {
  // Llama-2 13B under PyTorch FSDP on 128 A100 80GB, two sequences of 4096 a GPU, eager (fms-fsdp's
  // March 2024 row, "Selective AC"), recompute unstated: without recompute the live tensors fit
  // (78 GiB) but the allocator's reserve does not (93 GiB), so the run would free its cache and
  // retry; full recompute fits cleanly and is the fill.
  const std::string shape = "40,5120,13824,40,40,32000,4096,,,,a100-sxm-80g,128,8,128,1,1,1,1,1,0,3,2,256,";
  const ValidationReport rep = run("U,a," + shape + ",bf16,,,,1800,,,,other,2024-03,flash\n" +
                                   "N,a," + shape + "none,bf16,,,,1800,,,,other,2024-03,flash\n");
  REQUIRE(rep.rows.size() == 2);
  for (const RowResult& row : rep.rows) REQUIRE_MESSAGE(row.scored, row.id << ": " << row.skip_reason);
  CHECK(rep.rows[0].scenario.layout.recompute == Recompute::Full);
  CHECK(filled(rep.rows[0], "recompute=full"));
  CHECK(rep.rows[0].memory_fit == MemoryFit::Fits);
  // Stated, it is priced as stated, retries and all; it is faster as priced.
  CHECK(rep.rows[1].scenario.layout.recompute == Recompute::None);
  CHECK(rep.rows[1].memory_fit == MemoryFit::AllocatorRetries);
  CHECK(rep.rows[1].predicted.at("tokens_per_gpu_s") > rep.rows[0].predicted.at("tokens_per_gpu_s"));
}
