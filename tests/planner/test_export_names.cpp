// Every name an export writes is one its framework defines, at the version the committed lists
// state (configs/framework_keys/*.txt, extracted from the frameworks' sources by
// tools/extract_framework_keys.py): over the ranked layouts of plans for dense, GQA, MoE, MLA,
// fp8 and long-context models, so that a flag or key that only some layout or model writes is
// checked too. A layout a framework cannot express is refused (UsageError) and skipped here.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "planner/exporters.hpp"
#include "planner/planner.hpp"
#include "planner/search_space.hpp"
#include "tests/planner/framework_names.hpp"

using namespace sixfold;
using namespace sixfold::test;

namespace {

struct Case {
  const char* model;
  const char* hardware;
  int gpus;
  Count seq, global_batch;
  Dtype dtype = Dtype::BF16;
  bool fp8_store = false, bf16_moments = false;
  int mtp = 0;
};

}  // namespace

TEST_CASE("exports of every ranked layout of many plans write only names the frameworks define") {
  const std::vector<Case> cases = {
      {"llama3-8b", "h100-sxm-80g", 8, 4096, 64},
      {"llama3-70b", "h100-sxm-80g", 64, 4096, 256},
      {"llama3-70b", "h100-sxm-80g", 64, 4096, 256, Dtype::FP8},  // torchtitan: torchao's Float8Linear
      {"llama3.1-405b", "h100-sxm-80g", 512, 8192, 512},
      {"mixtral-8x7b", "h100-sxm-80g", 32, 4096, 128},
      {"qwen3-30b-a3b", "h100-sxm-80g", 16, 4096, 64},
      {"pythia-6.9b", "a100-sxm-80g", 8, 2048, 64, Dtype::FP16},
      {"deepseek-v3", "h800-sxm-80g", 256, 4096, 1024, Dtype::FP8, true, true, 1},
  };
  std::map<ExportFormat, int> written, refused;
  std::set<std::string> unknown;
  for (const Case& c : cases) {
    CAPTURE(c.model);
    PlanRequest rq;
    rq.model = load_model(c.model);
    rq.hardware = load_hardware(c.hardware);
    rq.gpus = c.gpus;
    rq.work.seq = c.seq;
    rq.work.global_batch = c.global_batch;
    rq.work.dtype = c.dtype;
    rq.work.fp8_activation_input_store = c.fp8_store;
    rq.work.bf16_adam_moments = c.bf16_moments;
    rq.work.mtp_layers = c.mtp;
    rq.threads = 2;
    const PlanResult res = plan(rq);
    REQUIRE(res.feasible());
    Scenario s;
    s.model_name = c.model;
    s.model = rq.model;
    s.hardware_name = c.hardware;
    s.hardware = rq.hardware;
    s.gpus = c.gpus;
    s.work = rq.work;
    for (size_t i = 0; i < res.ranked.size() && i < 400; ++i) {
      s.layout = res.ranked[i].layout;
      for (ExportFormat f : {ExportFormat::Megatron, ExportFormat::DeepSpeed, ExportFormat::Torchtitan}) {
        std::string text;
        try {
          text = export_plan(f, s, Prediction{});
        } catch (const UsageError&) {
          ++refused[f];
          continue;
        }
        ++written[f];
        const auto bad = f == ExportFormat::Megatron    ? unknown_megatron_flags(text)
                         : f == ExportFormat::DeepSpeed ? unknown_deepspeed_keys(text)
                                                        : unknown_torchtitan_keys(text);
        for (const auto& name : bad) unknown.insert(to_string(f) + " " + name + " (" + c.model + ")");
      }
    }
  }
  for (const auto& u : unknown) FAIL_CHECK("not a name of the framework: " << u);
  // Each framework's export was written often enough to mean something.
  CHECK(written[ExportFormat::Megatron] > 500);
  CHECK(written[ExportFormat::DeepSpeed] > 20);
  CHECK(written[ExportFormat::Torchtitan] > 100);
  MESSAGE("exports written: megatron " << written[ExportFormat::Megatron] << ", deepspeed "
                                        << written[ExportFormat::DeepSpeed] << ", torchtitan "
                                        << written[ExportFormat::Torchtitan] << "; refused megatron "
                                        << refused[ExportFormat::Megatron] << ", deepspeed "
                                        << refused[ExportFormat::DeepSpeed] << ", torchtitan "
                                        << refused[ExportFormat::Torchtitan]);
}

TEST_CASE("what the export cannot say is said as a note: DeepSpeed full recompute, Megatron's fp8 SwiGLU store") {
  Scenario s;
  s.model = load_model("llama3-8b");
  s.gpus = 8;
  s.work.seq = 4096;
  s.work.global_batch = 64;
  s.layout.dp = 8;
  s.layout.zero = 2;
  s.layout.dp_overlap = DpOverlap::Bucketed;
  s.layout.recompute = Recompute::Full;
  const auto notes = export_notes(ExportFormat::DeepSpeed, s);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("deepspeed.checkpointing.checkpoint") != std::string::npos);
  CHECK(notes[0].find("gradient_checkpointing_enable") != std::string::npos);
  s.layout.recompute = Recompute::None;
  CHECK(export_notes(ExportFormat::DeepSpeed, s).empty());
  s.work.fp8_activation_input_store = true;
  const std::string flags = export_megatron(s);
  CHECK(flags.find("# set TransformerConfig.activation_func_fp8_input_store = True") != std::string::npos);
  CHECK(unknown_megatron_flags(flags).empty());
}
