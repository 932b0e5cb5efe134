// Exports carry what the architecture needs to run and load its checkpoint: the RoPE base and
// Llama 3.1's scaling, the norm epsilon (Megatron), the model name and flavor (torchtitan); and
// Megatron/DeepSpeed plans never recommend a schedule those frameworks do not have.
#include <doctest/doctest.h>

#include "models/hf_config.hpp"
#include "models/model_zoo.hpp"
#include "planner/exporters.hpp"
#include "planner/search_space.hpp"
#include "simulator/cost_model.hpp"

#include <algorithm>

using namespace sixfold;

namespace {
Scenario scenario(const std::string& model, int gpus, int tp, int pp, int zero) {
  Scenario s;
  s.model_name = model;
  s.model = load_model(model);
  s.hardware_name = "h100-sxm-80g";
  s.hardware = load_hardware("h100-sxm-80g");
  s.gpus = gpus;
  s.work.seq = 4096;
  s.work.global_batch = 256;
  s.layout.tp = tp;
  s.layout.sp = tp > 1;  // torchtitan's TP is sequence parallel (and Megatron's export takes either)
  s.layout.pp = pp;
  s.layout.zero = zero;
  s.layout.dp = gpus / (tp * pp);
  return s;
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
}  // namespace

TEST_CASE("Megatron flags carry the RoPE base, Llama 3.1's scaling and the norm epsilon") {
  const std::string l8 = export_megatron(scenario("llama3-8b", 8, 1, 1, 1));
  CHECK(has(l8, "--rotary-base 500000"));
  CHECK(has(l8, "--norm-epsilon 1e-05"));
  CHECK_FALSE(has(l8, "--use-rope-scaling"));
  const std::string l405 = export_megatron(scenario("llama3.1-405b", 512, 8, 8, 1));
  CHECK(has(l405, "--use-rope-scaling"));
  CHECK(has(l405, "--rope-scaling-factor 8"));
  const std::string qwen = export_megatron(scenario("qwen3-30b-a3b", 8, 1, 1, 1));
  CHECK(has(qwen, "--rotary-base 1000000"));
  CHECK(has(qwen, "--norm-epsilon 1e-06"));
  // GPT-style learned positions have no RoPE base to write.
  CHECK_FALSE(has(export_megatron(scenario("gpt3-175b", 64, 8, 8, 1)), "--rotary-base"));
}

TEST_CASE("torchtitan's TOML names the model and flavor, or says how to register one") {
  const std::string l70 = export_torchtitan(scenario("llama3-70b", 64, 8, 1, 3));
  CHECK(has(l70, "[model]\nname = \"llama3\"\nflavor = \"70B\""));
  const std::string other = export_torchtitan(scenario("pythia-6.9b", 8, 1, 1, 3));
  CHECK(has(other, "[model]\n# no registered torchtitan flavor"));
}

TEST_CASE("torchtitan's TOML trains an fp8 plan with torchao's Float8Linear, the FSDP gathers in bf16 as priced") {
  Scenario s = scenario("llama3-70b", 64, 8, 1, 3);
  CHECK_FALSE(has(export_torchtitan(s), "float8"));
  s.work.dtype = Dtype::FP8;
  const std::string fp8 = export_torchtitan(s);
  CHECK(has(fp8, "flavor = \"70B\"\nconverters = [\"quantize.linear.float8\"]\n\n[parallelism]"));
  CHECK(has(fp8, "[quantize.linear.float8]\nenable_fsdp_float8_all_gather = false\nfilter_fqns = [\"output\"]\n"));
}

TEST_CASE("a Hugging Face config's rope_theta, llama3 rope_scaling and rms_norm_eps are read") {
  const ModelSpec m = parse_hf_config(
      R"({"model_type":"llama","hidden_size":256,"intermediate_size":688,"num_hidden_layers":2,"num_attention_heads":4,)"
      R"("num_key_value_heads":2,"vocab_size":1000,"max_position_embeddings":256,"rms_norm_eps":1e-6,"rope_theta":500000.0,)"
      R"("rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,)"
      R"("original_max_position_embeddings":8192}})",
      "config.json", "tiny");
  CHECK(m.rope_theta == 500000);
  CHECK(m.rope_scaling_factor == 8);
  CHECK(m.norm_eps == doctest::Approx(1e-6));
}

TEST_CASE("no plan searches the one-stage zero-bubble schedule, only torchtitan's search a per-layer reduction") {
  for (Framework f : {Framework::Megatron, Framework::DeepSpeed, Framework::DeepSpeedLegacy, Framework::Torchtitan}) {
    SearchOptions o;
    restrict_to_framework(o, f);
    const bool zb = std::find(o.schedules.begin(), o.schedules.end(), Schedule::ZeroBubble) != o.schedules.end();
    const bool per_layer = std::find(o.dp_overlap.begin(), o.dp_overlap.end(), DpOverlap::PerLayer) != o.dp_overlap.end();
    CHECK_MESSAGE(!zb, to_string(f));  // ZB-H1: Megatron-LM and DeepSpeed lack it, torchtitan's are interleaved
    CHECK_MESSAGE(per_layer == (f == Framework::Torchtitan), to_string(f));
    const bool deepspeed = f == Framework::DeepSpeed || f == Framework::DeepSpeedLegacy;
    CHECK_MESSAGE((o.schedules == std::vector<Schedule>{Schedule::OneFOneB}) == deepspeed, to_string(f));
  }
  // What the search space keeps, the framework's exporter writes: the recommendation of a plain plan
  // (a tie between per-layer and bucketed reductions once broke toward per-layer) exports as is.
  for (Framework f : {Framework::Megatron, Framework::DeepSpeed}) {
    SearchOptions o;
    restrict_to_framework(o, f);
    for (DpOverlap d : o.dp_overlap) {
      Scenario s;
      s.model = load_model("llama3-8b");
      s.hardware = load_hardware("h100-sxm-80g");
      s.gpus = 8;
      s.work.framework = f;
      s.work.seq = 4096;
      s.work.global_batch = 64;
      s.layout.dp = 8;
      s.layout.zero = 1;
      s.layout.dp_overlap = d;
      CHECK_NOTHROW(export_plan(f == Framework::Megatron ? ExportFormat::Megatron : ExportFormat::DeepSpeed, s, Prediction{}));
    }
  }
}

TEST_CASE("DeepSpeed's pipeline engine: ZeRO stage 0 or 1, 1F1B only, gradients reduced after the backward") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  Layout l;
  l.dp = 8; l.pp = 2; l.zero = 1;
  l.dp_overlap = DpOverlap::None;
  for (Framework f : {Framework::DeepSpeed, Framework::DeepSpeedLegacy}) {
    w.framework = f;
    CHECK_NOTHROW(validate_layout(m, l, w, 16));
    CHECK(default_dp_overlap(f, 2) == DpOverlap::None);
    CHECK(default_dp_overlap(f, 1) == DpOverlap::Bucketed);
    Layout bucketed = l;
    bucketed.dp_overlap = DpOverlap::Bucketed;
    CHECK_THROWS_WITH_AS(validate_layout(m, bucketed, w, 16), doctest::Contains("dp-overlap none"), LayoutError);
    // The search offers a DeepSpeed pipeline no overlap to choose.
    SearchOptions so;
    restrict_to_framework(so, f);
    PruneCounts pruned;
    for (const Layout& e : enumerate_layouts(m, w, 16, 8, so, pruned))
      if (e.pp > 1 && e.dp * e.cp > 1) CHECK(e.dp_overlap == DpOverlap::None);
    Layout z2 = l;
    z2.zero = 2;
    CHECK_THROWS_WITH_AS(validate_layout(m, z2, w, 16), doctest::Contains("ZeRO stage 0 or 1"), LayoutError);
    Layout interleaved = l;
    interleaved.vpp = 2;
    interleaved.schedule = Schedule::Interleaved;
    CHECK_THROWS_WITH_AS(validate_layout(m, interleaved, w, 16), doctest::Contains("1F1B only"), LayoutError);
    Layout flat = z2;  // ZeRO-2/3 without a pipeline is the engine's ordinary data parallelism
    flat.pp = 1; flat.dp = 16;
    CHECK_NOTHROW(validate_layout(m, flat, w, 16));
    Layout ring = flat;  // no ring attention: DeepSpeed's sequence parallelism is Ulysses
    ring.dp = 8; ring.cp = 2;
    CHECK_THROWS_WITH_AS(validate_layout(m, ring, w, 16), doctest::Contains("ring attention"), LayoutError);
    SearchOptions o;
    restrict_to_framework(o, f);
    CHECK_FALSE(o.context_parallel);
  }
  w.framework = Framework::Megatron;  // Megatron pipelines under its distributed optimizer
  Layout overlapped = l;
  overlapped.dp_overlap = DpOverlap::Bucketed;
  CHECK_NOTHROW(validate_layout(m, overlapped, w, 16));
  CHECK(default_dp_overlap(Framework::Megatron, 2) == DpOverlap::Bucketed);
  Layout interleaved = l;
  interleaved.vpp = 2;
  interleaved.schedule = Schedule::Interleaved;
  CHECK_NOTHROW(validate_layout(m, interleaved, w, 16));
}
