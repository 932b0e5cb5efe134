// Plan file round trip and the framework exports: flag and key names checked against the names
// those projects define (configs/framework_keys/), and refusals of layouts a framework cannot express.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "planner/exporters.hpp"
#include "planner/plan_file.hpp"
#include "simulator/cost_model.hpp"
#include "tests/planner/framework_names.hpp"

using namespace sixfold;

namespace {

// A built-in model on H100s, at seq 8192, with the default layout.
Scenario h100_scenario(const char* model, int gpus, Count global_batch) {
  Scenario s;
  s.model_name = model;
  s.model = load_model(model);
  s.hardware_name = "h100-sxm-80g";
  s.hardware = load_hardware("h100-sxm-80g");
  s.gpus = gpus;
  s.work.seq = 8192;
  s.work.global_batch = global_batch;
  return s;
}

// Llama3-8B trained by torchtitan in fp8 under FSDP on 8 H100s (full recompute).
Scenario torchtitan_fp8_fsdp() {
  Scenario s = h100_scenario("llama3-8b", 8, 64);
  s.work.dtype = Dtype::FP8;
  s.work.framework = Framework::Torchtitan;
  s.layout.dp = 8;
  s.layout.zero = 3;
  s.layout.recompute = Recompute::Full;
  return s;
}

Scenario llama_scenario() {
  Scenario s = h100_scenario("llama3-70b", 64, 128);
  s.layout.tp = 8; s.layout.pp = 4; s.layout.dp = 2; s.layout.sp = true; s.layout.zero = 1;
  s.layout.vpp = 5; s.layout.schedule = Schedule::Interleaved; s.layout.recompute = Recompute::Full;
  return s;
}

}  // namespace

TEST_CASE("plan file round trip: parse_scenario reads back the same scenario and predict gives the same numbers") {
  const Scenario s = llama_scenario();
  validate_layout(s.model, s.layout, s.work, s.gpus);
  const Prediction p = predict(s.model, s.hardware, s.work, s.layout);
  const std::string text = plan_yaml(s, p);
  const Scenario back = parse_scenario(parse_yaml(text, "plan.yaml"));
  CHECK(back.layout == s.layout);
  CHECK(back.gpus == s.gpus);
  CHECK(back.work.seq == s.work.seq);
  CHECK(back.work.global_batch == s.work.global_batch);
  CHECK(back.model_name == s.model_name);
  CHECK(back.hardware_name == s.hardware_name);
  const Prediction q = predict(back.model, back.hardware, back.work, back.layout);
  CHECK(q.step_time == p.step_time);
  CHECK(q.peak_memory == p.peak_memory);
  // Emitting the read-back plan gives the same text: the round trip is exact.
  CHECK(plan_yaml(back, q) == text);
  CHECK(text.find("schema_version: " + std::to_string(kPlanSchemaVersion)) != std::string::npos);
}

TEST_CASE("Megatron-LM flags are names megatron/training/arguments.py defines") {
  using sixfold::test::unknown_megatron_flags;
  Scenario s = llama_scenario();
  s.layout.dp_overlap = DpOverlap::Bucketed;
  const std::string text = export_megatron(s);
  int flags = 0;
  CHECK(unknown_megatron_flags(text, &flags).empty());
  CHECK(flags > 15);
  // Recompute modules and bf16 Adam moments, as Megatron names them.
  Scenario t = s;
  t.layout.recompute = Recompute::Selective;
  t.layout.recompute_modules = recompute_module::kCoreAttn | recompute_module::kLayernorm;
  t.work.bf16_adam_moments = true;
  const std::string more = export_megatron(t);
  CHECK(unknown_megatron_flags(more).empty());
  CHECK(more.find("--recompute-modules core_attn layernorm") != std::string::npos);
  CHECK(more.find("--exp-avg-sq-dtype bf16") != std::string::npos);
  CHECK(text.find("--tensor-model-parallel-size 8") != std::string::npos);
  CHECK(text.find("--num-layers-per-virtual-pipeline-stage 4") != std::string::npos);  // 80 / 4 stages / vpp 5
  CHECK(text.find("--recompute-method uniform") != std::string::npos);
  // DeepSeek-V3: every architecture field it was priced with, in Megatron's names.
  Scenario ds = s;
  ds.model = load_model("deepseek-v3");
  ds.layout = Layout{};
  ds.layout.pp = 4; ds.layout.ep = 8; ds.layout.dp = 16; ds.layout.zero = 1;
  ds.gpus = 64;
  ds.work.mtp_layers = 1;
  const std::string dtext = export_megatron(ds);
  CHECK(unknown_megatron_flags(dtext).empty());
  for (const char* expect : {"--multi-latent-attention", "--q-lora-rank 1536", "--kv-lora-rank 512", "--qk-head-dim 128",
                             "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--moe-layer-freq '[0]*3+[1]*58'",
                             "--moe-shared-expert-intermediate-size 2048", "--moe-router-enable-expert-bias",
                             "--mtp-num-layers 1", "--disable-bias-linear", "--hidden-dropout 0"})
    CHECK_MESSAGE(dtext.find(expect) != std::string::npos, expect);
  CHECK(dtext.find("--rotary-percent") == std::string::npos);  // MLA ropes its own part
  // ZeRO-3 is Megatron-FSDP's optim_grads_params; ZeRO-2 its optim_grads.
  s.layout.zero = 3;
  const std::string fsdp = export_megatron(s);
  CHECK(fsdp.find("--use-megatron-fsdp") != std::string::npos);
  CHECK(fsdp.find("--data-parallel-sharding-strategy optim_grads_params") != std::string::npos);
  s.layout.zero = 2;
  CHECK(export_megatron(s).find("--data-parallel-sharding-strategy optim_grads ") != std::string::npos);
  s.layout.zero = 1;
  s.layout.schedule = Schedule::ZeroBubble;
  s.layout.vpp = 1;
  CHECK_THROWS_AS(export_megatron(s), UsageError);
}

TEST_CASE("DeepSpeed config keys are names DeepSpeed's config defines, TP/PP layouts are refused") {
  Scenario s;
  s.model = load_model("pythia-6.9b");
  s.gpus = 8;
  s.work.seq = 2048;
  s.work.global_batch = 64;
  s.work.framework = Framework::DeepSpeed;  // priced as DeepSpeed runs it, as plan does for this format
  s.layout.dp = 8; s.layout.zero = 3; s.layout.micro_batch = 2;
  const std::string text = export_deepspeed(s);
  CHECK(sixfold::test::unknown_deepspeed_keys(text).empty());
  const auto j = nlohmann::json::parse(text);
  CHECK(j["train_batch_size"] == 64);
  CHECK(j["gradient_accumulation_steps"] == 4);
  CHECK(j["zero_optimization"]["stage"] == 3);
  // The bucket priced is the one written: DeepSpeed's default reduce_bucket_size, 5e8 elements.
  CHECK(j["zero_optimization"]["reduce_bucket_size"] == 500000000);
  // ZeRO-3's prefetch and live-parameter limits as the memory model prices them (DeepSpeed's
  // defaults), not the reduce bucket: 5e8 elements of prefetch would hold 10x the gathered
  // parameters sixfold counted.
  CHECK(j["zero_optimization"]["stage3_prefetch_bucket_size"] == 50000000);
  CHECK(j["zero_optimization"]["stage3_max_live_parameters"] == 1000000000);
  CHECK(j["zero_optimization"]["stage3_param_persistence_threshold"] == 100000);
  s.layout.tp = 2; s.layout.dp = 4;
  CHECK_THROWS_AS(export_deepspeed(s), UsageError);
}

TEST_CASE("torchtitan keys are names its JobConfig defines, ZeRO-1/2 are refused") {
  Scenario s = llama_scenario();
  s.layout.zero = 3;
  const std::string text = export_torchtitan(s);
  int keys = 0;
  CHECK(sixfold::test::unknown_torchtitan_keys(text, &keys).empty());
  CHECK(keys >= 10);
  CHECK(text.find("pipeline_parallel_schedule = \"Interleaved1F1B\"") != std::string::npos);
  CHECK(text.find("data_parallel_shard_degree = 2") != std::string::npos);
  // A pipeline takes the rank's whole step (128 sequences over dp 2) in micro-batches of the
  // layout's size; without one the local batch is the micro-batch and the rest accumulates.
  s.layout.micro_batch = 2;
  const std::string piped = export_torchtitan(s);
  CHECK(piped.find("local_batch_size = 64\n") != std::string::npos);
  CHECK(piped.find("pipeline_parallel_microbatch_size = 2\n") != std::string::npos);
  CHECK(piped.find("global_batch_size = 128\n") != std::string::npos);
  Scenario flat = s;
  flat.layout.pp = 1; flat.layout.vpp = 1; flat.layout.schedule = Schedule::OneFOneB; flat.layout.dp = 8;
  const std::string unpiped = export_torchtitan(flat);
  CHECK(unpiped.find("local_batch_size = 2\n") != std::string::npos);
  CHECK(unpiped.find("pipeline_parallel_microbatch_size") == std::string::npos);
  s.layout.zero = 1;
  CHECK_THROWS_AS(export_torchtitan(s), UsageError);
  CHECK_THROWS_AS(parse_export_format("nemo"), UsageError);
}

TEST_CASE("torchtitan: the pipeline split priced is written as its module list, even or not") {
  Scenario s = llama_scenario();  // 80 layers
  s.work.framework = Framework::Torchtitan;
  s.layout.zero = 3;
  s.layout.pp = 8; s.layout.tp = 8; s.layout.dp = 1;
  s.layout.vpp = 3;  // 10 layers a stage: virtual stages of 4, 3 and 3
  s.work.global_batch = 8;
  CHECK_NOTHROW(validate_layout(s.model, s.layout, s.work, s.gpus));
  // The parts in stage order (virtual stage c of rank r is part c x pp + r): rank 0 holds parts 0,
  // 8 and 16, of 4, 3 and 3 layers; the embedding opens part 0, the norm and head close part 23.
  const std::string text = export_torchtitan(s);
  CHECK(sixfold::test::unknown_torchtitan_keys(text).empty());
  CHECK(text.find("module_fqns_per_model_part = [\n  [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", "
                  "\"layers.3\"],\n  [\"layers.4\",") != std::string::npos);
  CHECK(text.find("\"layers.79\", \"norm\", \"output\"]\n]\n") != std::string::npos);
  const std::vector<int> counts = virtual_stage_layer_counts(s.model, s.layout);
  REQUIRE(counts.size() == 24);
  size_t from = text.find("module_fqns_per_model_part");
  for (size_t c = 0; c < counts.size(); ++c) {
    const size_t open = text.find("\n  [", from), close = text.find(']', open);
    REQUIRE(close != std::string::npos);
    const std::string part = text.substr(open, close - open);
    const long layers = std::count(part.begin(), part.end(), ',') + 1 - (c == 0) - 2 * (c + 1 == counts.size());
    CHECK_MESSAGE(layers == counts[c], "part " << c);
    from = close;
  }
  // A first/last-stage split (torchtitan has no such key) goes the same way.
  s.layout.vpp = 1; s.layout.schedule = Schedule::OneFOneB;
  s.layout.first_stage_layers = s.layout.last_stage_layers = 9;  // 9, 11 x 2, 10 x 4, 9
  CHECK_NOTHROW(validate_layout(s.model, s.layout, s.work, s.gpus));
  const std::string uneven = export_torchtitan(s);
  CHECK(uneven.find("\"layers.8\"],\n  [\"layers.9\",") != std::string::npos);
  CHECK(uneven.find("pipeline_parallel_layers_per_stage") == std::string::npos);
  s.layout.pp = 1; s.layout.dp = 8; s.layout.first_stage_layers = s.layout.last_stage_layers = 0;
  CHECK(export_torchtitan(s).find("module_fqns_per_model_part") == std::string::npos);
}

TEST_CASE("Megatron export: the embedding/loss pipeline split as its flags, virtual stages per rank instead of layers") {
  Scenario s = llama_scenario();
  s.model = load_model("llama3.1-405b");  // 126 layers
  s.model_name = "llama3.1-405b";
  s.gpus = 512;
  s.layout.tp = 8; s.layout.pp = 8; s.layout.vpp = 8; s.layout.dp = 8;
  s.layout.embedding_in_pipeline_split = s.layout.loss_in_pipeline_split = true;
  s.work.global_batch = 64;
  REQUIRE_NOTHROW(validate_layout(s.model, s.layout, s.work, s.gpus));
  const std::string text = export_megatron(s);
  CHECK(text.find("--account-for-embedding-in-pipeline-split") != std::string::npos);
  CHECK(text.find("--account-for-loss-in-pipeline-split") != std::string::npos);
  CHECK(text.find("--num-virtual-stages-per-pipeline-rank 8") != std::string::npos);
  CHECK(text.find("--num-layers-per-virtual-pipeline-stage") == std::string::npos);
  // The plan file keeps the split.
  const Scenario back = parse_scenario(parse_yaml(plan_yaml(s, predict(s.model, s.hardware, s.work, s.layout)), "plan.yaml"));
  CHECK(back.layout == s.layout);
}

TEST_CASE("Megatron export: a custom pipeline layout as its one flag, which sets the virtual stages, and torchtitan refuses it") {
  Scenario s = llama_scenario();
  s.model = load_model("deepseek-v3");  // 61 layers
  s.model_name = "deepseek-v3";
  s.gpus = 256;
  s.work.dtype = Dtype::FP8;
  s.work.global_batch = 512;
  s.layout = Layout{};
  s.layout.pp = 8; s.layout.ep = 32; s.layout.dp = 32; s.layout.zero = 1; s.layout.recompute = Recompute::Full;
  s.layout.pipeline_layout = "Et*4|(tttt|)*14,tL";
  take_vpp_from_pipeline_layout(s.layout);
  REQUIRE_NOTHROW(validate_layout(s.model, s.layout, s.work, s.gpus));
  const std::string text = export_megatron(s);
  CHECK(text.find("--pipeline-model-parallel-layout 'Et*4|(tttt|)*14,tL'") != std::string::npos);
  CHECK(text.find("--num-layers-per-virtual-pipeline-stage") == std::string::npos);
  CHECK(text.find("--num-virtual-stages-per-pipeline-rank") == std::string::npos);
  const Scenario back = parse_scenario(parse_yaml(plan_yaml(s, predict(s.model, s.hardware, s.work, s.layout)), "plan.yaml"));
  CHECK(back.layout == s.layout);
  Scenario titan = s;
  titan.layout.zero = 3;
  CHECK_THROWS_WITH_AS(export_torchtitan(titan), doctest::Contains("custom pipeline layout"), UsageError);
}

TEST_CASE("every built-in scenario predicts") {
  const auto names = builtin_scenario_names();
  CHECK(names.size() >= 12);
  for (const std::string& n : names) {
    INFO(n);
    const Scenario s = load_scenario(n);
    CHECK_NOTHROW(validate_layout(s.model, s.layout, s.work, s.gpus));
    const Prediction p = predict(s.model, s.hardware, s.work, s.layout);
    CHECK(p.step_time > 0);
    CHECK(p.peak_memory <= s.hardware.memory_capacity);
  }
}

TEST_CASE("Megatron export: a squared-ReLU model sets --squared-relu, not --swiglu") {
  Scenario s = llama_scenario();
  s.model = load_model("nemotron4-340b");
  s.model_name = "nemotron4-340b";
  s.gpus = 768;
  s.layout.tp = 8; s.layout.pp = 12; s.layout.dp = 8; s.layout.vpp = 8;
  s.work.seq = 4096;
  s.work.global_batch = 768;
  REQUIRE_NOTHROW(validate_layout(s.model, s.layout, s.work, s.gpus));
  const std::string text = export_megatron(s);
  CHECK(text.find("--squared-relu") != std::string::npos);
  CHECK(text.find("--swiglu") == std::string::npos);
}

TEST_CASE("Megatron fp8: --fp8-param-gather where the distributed optimizer allows fp8 primary weights") {
  Scenario s = h100_scenario("llama3-8b", 8, 64);
  s.work.dtype = Dtype::FP8;
  s.layout.dp = 8;
  s.layout.zero = 1;
  std::string text = export_megatron(s);
  CHECK(sixfold::test::unknown_megatron_flags(text).empty());
  CHECK(text.find("--fp8-format hybrid") != std::string::npos);
  CHECK(text.find("--fp8-param-gather") != std::string::npos);
  s.layout.zero = 0;  // Megatron refuses it without the distributed optimizer or Megatron-FSDP
  CHECK(export_megatron(s).find("--fp8-param-gather") == std::string::npos);
  s.work.dtype = Dtype::BF16;
  s.layout.zero = 1;
  CHECK(export_megatron(s).find("--fp8-param-gather") == std::string::npos);
}

TEST_CASE("FSDP float8 all-gather: the torchtitan export writes it with its precomputed scales, others refuse it") {
  Scenario s = torchtitan_fp8_fsdp();
  CHECK(export_torchtitan(s).find("enable_fsdp_float8_all_gather = false\n") != std::string::npos);
  // Exported off, the notes say how to price it on; a layout FSDP does not shard gets no such note.
  auto mentions_flag = [](const std::vector<std::string>& notes) {
    for (const std::string& n : notes)
      if (n.find("--fsdp-float8-all-gather") != std::string::npos) return true;
    return false;
  };
  CHECK(mentions_flag(export_notes(ExportFormat::Torchtitan, s)));
  Scenario unsharded = s;
  unsharded.layout.dp = 1;
  CHECK_FALSE(mentions_flag(export_notes(ExportFormat::Torchtitan, unsharded)));
  s.work.fsdp_float8_all_gather = true;
  CHECK_FALSE(mentions_flag(export_notes(ExportFormat::Torchtitan, s)));
  const std::string text = export_torchtitan(s);
  CHECK(sixfold::test::unknown_torchtitan_keys(text).empty());
  CHECK(text.find("enable_fsdp_float8_all_gather = true\n") != std::string::npos);
  CHECK(text.find("precompute_float8_dynamic_scale_for_fsdp = true\n") != std::string::npos);
  CHECK_THROWS_AS(export_megatron(s), UsageError);
  CHECK_THROWS_AS(export_deepspeed(s), UsageError);
  // The plan file keeps the flag under torchtitan's name.
  const Scenario back = parse_scenario(parse_yaml(plan_yaml(s, predict(s.model, s.hardware, s.work, s.layout)), "plan.yaml"));
  CHECK(back.work.fsdp_float8_all_gather);
}

TEST_CASE("float8 recipes: the torchtitan export names a rowwise recipe, writes none for tensorwise, others refuse it") {
  Scenario s = torchtitan_fp8_fsdp();
  // Tensorwise is what torchtitan runs without a recipe_name (and the only recipe it allows the
  // float8 all-gather with): nothing written.
  CHECK(export_torchtitan(s).find("recipe_name") == std::string::npos);
  for (Float8Recipe r : {Float8Recipe::Rowwise, Float8Recipe::RowwiseWithGwHp}) {
    s.work.float8_recipe = r;
    CAPTURE(to_string(r));
    const std::string text = export_torchtitan(s);
    CHECK(sixfold::test::unknown_torchtitan_keys(text).empty());
    CHECK(text.find("[quantize.linear.float8]\nrecipe_name = \"" + to_string(r) + "\"\nenable_fsdp_float8_all_gather = false\n") !=
          std::string::npos);
    // No note offering the float8 all-gather, which torchtitan refuses with a recipe.
    for (const std::string& n : export_notes(ExportFormat::Torchtitan, s)) CHECK(n.find("--fsdp-float8-all-gather") == std::string::npos);
    CHECK_THROWS_WITH_AS(export_megatron(s), doctest::Contains("float8 recipe"), UsageError);
    CHECK_THROWS_AS(export_deepspeed(s), UsageError);  // refuses fp8 itself
    const Scenario back = parse_scenario(parse_yaml(plan_yaml(s, predict(s.model, s.hardware, s.work, s.layout)), "plan.yaml"));
    CHECK(back.work.float8_recipe == r);
  }
}

TEST_CASE("the torchtitan export refuses tensor parallelism without sequence parallelism, which torchtitan has not") {
  Scenario s = h100_scenario("llama3-8b", 8, 64);
  s.work.framework = Framework::Torchtitan;
  s.layout.tp = 2;
  s.layout.dp = 4;
  s.layout.zero = 3;
  s.layout.sp = false;
  CHECK_THROWS_WITH_AS(export_torchtitan(s), doctest::Contains("without sequence parallelism"), UsageError);
  s.layout.sp = true;
  CHECK_NOTHROW(export_torchtitan(s));
}

TEST_CASE("hybrid sharding exports as each framework names it: HSDP degrees, distributed-optimizer instances, MiCS") {
  Scenario s = h100_scenario("llama3-8b", 32, 64);
  s.layout.dp = 32;
  s.layout.dp_shard = 8;
  s.layout.micro_batch = 2;
  s.layout.zero = 3;
  s.work.framework = Framework::Torchtitan;
  const std::string tt = export_torchtitan(s);
  CHECK(sixfold::test::unknown_torchtitan_keys(tt).empty());
  CHECK(tt.find("data_parallel_replicate_degree = 4\n") != std::string::npos);
  CHECK(tt.find("data_parallel_shard_degree = 8\n") != std::string::npos);
  s.work.framework = Framework::DeepSpeed;
  const std::string ds = export_deepspeed(s);
  CHECK(sixfold::test::unknown_deepspeed_keys(ds).empty());
  const auto j = nlohmann::json::parse(ds);
  CHECK(j["zero_optimization"]["mics_shard_size"] == 8);
  s.work.framework = Framework::Megatron;
  s.layout.zero = 1;
  const std::string mg = export_megatron(s);
  CHECK(sixfold::test::unknown_megatron_flags(mg).empty());
  CHECK(mg.find("--num-distributed-optimizer-instances 4") != std::string::npos);
  // Without hybrid sharding none of them is written.
  s.layout.dp_shard = 0;
  CHECK(export_megatron(s).find("--num-distributed-optimizer-instances") == std::string::npos);
  s.layout.zero = 3;
  CHECK(export_deepspeed(s).find("mics_shard_size") == std::string::npos);
  CHECK(export_torchtitan(s).find("data_parallel_shard_degree = 32\n") != std::string::npos);
}
