// Megatron's custom pipeline layout (models/pipeline_layout.hpp): the text's grammar, the split
// it gives every virtual stage and rank, and the layouts validate_layout refuses.
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include "common/error.hpp"
#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "models/pipeline_layout.hpp"

using namespace sixfold;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_pipeline_layout(text, "--pipeline-model-parallel-layout");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

ModelSpec layers(int n) {
  ModelSpec m = load_model("gpt-1.7b");
  m.layers = n;
  return m;
}
}  // namespace

TEST_CASE("pipeline layout: Megatron's DeepSeek-V3 example parses into 32 stages") {
  // Megatron-LM docs, "Custom Pipeline Model Parallel Layout": pp 16 x vpp 2.
  const auto stages = parse_pipeline_layout("Et*3|(tt|)*29,m|L", "x");
  REQUIRE(stages.size() == 32);
  CHECK(stages[0].embedding);
  CHECK(stages[0].layers == 3);
  for (size_t i = 1; i <= 29; ++i) CHECK(stages[i].layers == 2);
  CHECK(stages[30].mtp == 1);
  CHECK(stages[30].layers == 0);
  CHECK(stages[31].loss);
  CHECK(stages[31].layers == 0);
  int total = 0;
  for (const auto& s : stages) total += s.layers;
  CHECK(total == 61);
}

TEST_CASE("pipeline layout: spaces and commas are cosmetic, a trailing '|' closes the last stage") {
  const auto a = parse_pipeline_layout("E t t | t, t | t L", "x");
  const auto b = parse_pipeline_layout("Ett|tt|tL", "x");
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(a[i].layers == b[i].layers);
  CHECK(parse_pipeline_layout("(Ett|)*1(tt|)*2", "x").size() == 3);
  // Nested repetition.
  const auto n = parse_pipeline_layout("E|((t|)*2)*3L", "x");
  CHECK(n.size() == 8);
}

TEST_CASE("pipeline layout: bad text names the text, the position and what is allowed") {
  CHECK(error_of("Et*3|tx|L").find("'x' is not a layout symbol") != std::string::npos);
  CHECK(error_of("Et*3|tx|L").find("at character 7") != std::string::npos);
  CHECK(error_of("Et*3|(tt|*2|L").find("'(' without a matching ')'") != std::string::npos);
  CHECK(error_of("Ett)|L").find("')' without a matching '('") != std::string::npos);
  CHECK(error_of("Et*|L").find("'*' needs a count") != std::string::npos);
  CHECK(error_of("Et*0|L").find("at least 1") != std::string::npos);
  CHECK(error_of("Et*99999999|L").find("too many symbols") != std::string::npos);
  CHECK(error_of("E" + std::string(100000, '(') + "t" + std::string(100000, ')') + "L").find("nested deeper") !=
        std::string::npos);
  CHECK(error_of("EEt|L").find("embedding 'E' twice") != std::string::npos);
  CHECK(error_of("Et|tLL").find("loss 'L' twice") != std::string::npos);
  CHECK(error_of("Et|tx").find("--pipeline-model-parallel-layout") != std::string::npos);
}

TEST_CASE("pipeline layout: format_pipeline_layout writes runs of equal stages as groups and parses back") {
  std::vector<PipelineStagePart> parts(16);
  for (auto& p : parts) p.layers = 4;
  parts.front().embedding = true;
  parts.back().layers = 1;
  parts.back().loss = true;
  const std::string text = format_pipeline_layout(parts);
  CHECK(text == "Et*4|(t*4|)*14,tL");
  const auto back = parse_pipeline_layout(text, "x");
  REQUIRE(back.size() == parts.size());
  for (size_t i = 0; i < parts.size(); ++i) CHECK(back[i].layers == parts[i].layers);
}

TEST_CASE("pipeline layout: the front-loaded split of Megatron's DeepSeek-V3 recipes") {
  // 61 layers on 16 stages: Megatron-LM examples/moe_recipes' "Et*4|(tttt|)*14tmL" without the MTP.
  CHECK(front_loaded_pipeline_layout(61, 16) == "Et*4|(t*4|)*14,tL");
  // 61 on 32: two each until the last two stages, which take one and none.
  const auto s32 = parse_pipeline_layout(front_loaded_pipeline_layout(61, 32), "x");
  REQUIRE(s32.size() == 32);
  CHECK(s32[30].layers == 1);
  CHECK(s32[31].layers == 0);
  CHECK(s32[31].loss);
  // 61 on 8: 8 per stage, 5 on the last.
  const auto s8 = parse_pipeline_layout(front_loaded_pipeline_layout(61, 8), "x");
  CHECK(s8.back().layers == 5);
  // A split that would leave a stage before the last empty is not written.
  CHECK(front_loaded_pipeline_layout(10, 8).empty());
}

TEST_CASE("pipeline layout: virtual stages and ranks follow the text, stage i = chunk * pp + rank") {
  const ModelSpec m = layers(7);
  Layout l;
  l.pp = 2;
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  l.pipeline_layout = "Et*3|tt|tt|L";
  l.dp = 1;
  l.micro_batch = 1;
  CHECK(virtual_stage_layer_counts(m, l) == std::vector<int>{3, 2, 2, 0});
  CHECK(stage_layer_counts(m, l) == std::vector<int>{5, 2});  // rank 0: stages 0 and 2
  Workload w;
  w.global_batch = 4;
  CHECK_NOTHROW(validate_layout(m, l, w, 2));
}

TEST_CASE("pipeline layout: validate_layout refuses what Megatron or sixfold cannot run") {
  const ModelSpec m = layers(7);
  Layout l;
  l.pp = 2;
  l.vpp = 2;
  l.schedule = Schedule::Interleaved;
  l.micro_batch = 1;
  Workload w;
  w.global_batch = 4;
  auto constraint = [&](const std::string& text, const Workload& work) {
    Layout t = l;
    t.pipeline_layout = text;
    try {
      validate_layout(m, t, work, 2);
    } catch (const LayoutError& e) {
      return e.constraint();
    }
    return std::string();
  };
  CHECK(constraint("Et*3|tt|tt|L", w).empty());
  CHECK(constraint("Et*3|tt|ttL", w) == "a pipeline layout has pp x vpp stages");
  CHECK(constraint("Et*3|tt|t|L", w) == "a pipeline layout places every transformer layer once");
  CHECK(constraint("t*3|Ett|tt|L", w) == "a pipeline layout has the embedding 'E' in its first stage");
  CHECK(constraint("Et*3|ttL|t|t", w) == "a pipeline layout has the loss 'L' in its last stage");
  // sixfold builds the MTP layers on the last stage only, and only as many as --mtp-num-layers.
  CHECK(constraint("Et*3|tt|tt|mL", w) == "a pipeline layout has the MTP layers 'm' (--mtp-num-layers) in its last stage");
  Workload mtp = w;
  mtp.mtp_layers = 1;
  CHECK(constraint("Et*3|tt|tt|mL", mtp).empty());
  CHECK(constraint("Et*3|tt|ttm|L", mtp) == "a pipeline layout has the MTP layers 'm' (--mtp-num-layers) in its last stage");
  Workload titan = w;
  titan.framework = Framework::Torchtitan;
  CHECK(constraint("Et*3|tt|tt|L", titan) == "the custom pipeline layout is Megatron's");
  // The stage-count message says which vpp the layout fits.
  Layout t = l;
  t.vpp = 1;
  t.schedule = Schedule::OneFOneB;
  t.pipeline_layout = "Et*3|tt|tt|L";
  try {
    validate_layout(m, t, w, 2);
    FAIL("expected a LayoutError");
  } catch (const LayoutError& e) {
    CHECK(std::string(e.what()).find("vpp 2 fits it") != std::string::npos);
  }
}

TEST_CASE("pipeline layout: vpp and the interleaved schedule follow the layout's stage count") {
  Layout l;
  l.pp = 2;
  l.pipeline_layout = "Et*3|tt|tt|L";
  take_vpp_from_pipeline_layout(l);
  CHECK(l.vpp == 2);
  CHECK(l.schedule == Schedule::Interleaved);
  Layout one;
  one.pp = 2;
  one.pipeline_layout = "Et*4|ttL";
  take_vpp_from_pipeline_layout(one);
  CHECK(one.vpp == 1);
  CHECK(one.schedule == Schedule::OneFOneB);
}
