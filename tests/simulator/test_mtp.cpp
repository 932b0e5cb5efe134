// Multi-token prediction (Megatron's --mtp-num-layers; DeepSeek-V3 trains one depth): what each
// depth adds to the last pipeline stage, to the step's FLOPs and to nothing else.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

namespace {
Workload work(int mtp) {
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  w.mtp_layers = mtp;
  return w;
}
}  // namespace

TEST_CASE("an MTP depth adds a layer, the projection, the norms and an embedding copy to the last stage only") {
  const ModelSpec m = load_model("deepseek-v3");
  Layout l;
  l.pp = 4;
  l.ep = 8;
  l.dp = 8;
  const StepProgram base = expand_step_program(m, l, work(0));
  const StepProgram mtp = expand_step_program(m, l, work(1));
  const Count h = m.hidden, vocab = m.vocab;
  for (int s = 0; s + 1 < l.pp; ++s) {
    CHECK(mtp.stages[s].dense_params == base.stages[s].dense_params);
    CHECK(mtp.stages[s].edges->post_forward.size() == base.stages[s].edges->post_forward.size());
  }
  const StageProgram& a = base.stages.back();
  const StageProgram& b = mtp.stages.back();
  const Count norms = 3 * h;  // RMSNorm: enorm, hnorm, the final norm
  CHECK(b.dense_params - a.dense_params == base.moe_layer().dense_params + 2 * h * h + norms + vocab * h);
  CHECK(b.expert_params - a.expert_params == base.moe_layer().expert_params);
  // It keeps one more layer's activations and a second fp32 softmax of the logits.
  CHECK(b.edges->post_saved - a.edges->post_saved >= base.moe_layer().saved + Count(4096) * vocab * 4);
  CHECK(b.edges->post_backward.size() > a.edges->post_backward.size() + base.moe_layer().backward.size());
}

TEST_CASE("MTP adds its FLOPs to the model's and slows the last stage, two depths add twice") {
  const ModelSpec m = load_model("deepseek-v3");
  const HardwareProfile hw = load_hardware("h800-sxm-80g");
  Layout l;
  l.pp = 4;
  l.ep = 8;
  l.dp = 8;
  const StepFlops f0 = step_flops(m, work(0), Recompute::None);
  const StepFlops f1 = step_flops(m, work(1), Recompute::None);
  const StepFlops f2 = step_flops(m, work(2), Recompute::None);
  CHECK(f1.model > f0.model);
  CHECK(f2.model - f0.model == doctest::Approx(2 * (f1.model - f0.model)));
  // One MoE layer of 37B active over 61 layers, plus the head: a few percent of the step.
  CHECK((f1.model - f0.model) / f0.model == doctest::Approx(0.04).epsilon(0.5));
  const Prediction p0 = predict(m, hw, work(0), l);
  const Prediction p1 = predict(m, hw, work(1), l);
  CHECK(p1.stage_time.back().forward > p0.stage_time.back().forward);
  CHECK(p1.stage_time.front().forward == doctest::Approx(p0.stage_time.front().forward));
  // Megatron's; not for torchtitan or DeepSpeed.
  Workload w = work(1);
  w.framework = Framework::Torchtitan;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, w, 32), doctest::Contains("Megatron's"), LayoutError);
}
