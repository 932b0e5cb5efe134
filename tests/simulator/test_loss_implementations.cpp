// The loss as each implementation runs it (CrossEntropy, models/layout.hpp): the logits copies it
// holds and the traffic it moves, and Composer's training-metric passes after each backward.
#include <doctest/doctest.h>

#include <string>

#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/memory_model.hpp"

using namespace sixfold;

namespace {
Workload work(CrossEntropy ce, int metric_passes = 0) {
  Workload w;
  w.seq = 2048;
  w.global_batch = 64;
  w.framework = Framework::Torchtitan;
  w.cross_entropy = ce;
  w.train_metric_passes = metric_passes;
  return w;
}

Layout layout() {
  Layout l;
  l.dp = 8;
  l.zero = 3;
  l.micro_batch = 8;
  return l;
}

const Op* find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops)
    if (name == op.name) return &op;
  return nullptr;
}
}  // namespace

TEST_CASE("cross-entropy: each implementation holds its own logits copies and moves its own bytes") {
  const ModelSpec m = load_model("llama3-8b");
  const Count T = 8 * 2048;
  const double logits = double(T) * double(m.vocab);
  auto program = [&](CrossEntropy ce) { return expand_step_program(m, layout(), work(ce)); };
  const StepProgram torch = program(CrossEntropy::TorchFp32), megatron = program(CrossEntropy::MegatronFp32),
                    flash = program(CrossEntropy::FlashAttnFused), framework = program(CrossEntropy::Default);
  // torchtitan's own is F.cross_entropy.
  CHECK(framework.stages[0].edges->logits_bytes == torch.stages[0].edges->logits_bytes);
  // Saved for the backward: the fp32 softmax / log-softmax (4 B), or flash-attn's bf16 logits (2 B)
  // and one fp32 log-sum-exp per token.
  CHECK(find(torch.stages[0].edges->post_forward, "cross_entropy")->saved == doctest::Approx(4 * logits));
  CHECK(find(megatron.stages[0].edges->post_forward, "cross_entropy")->saved == doctest::Approx(4 * logits));
  CHECK(find(flash.stages[0].edges->post_forward, "cross_entropy")->saved == doctest::Approx(2 * logits + 4.0 * T));
  // Transient at the loss's backward: two fp32 gradients (torch), one low-precision copy otherwise.
  CHECK(torch.stages[0].edges->logits_bytes == doctest::Approx(8 * logits));
  CHECK(megatron.stages[0].edges->logits_bytes == doctest::Approx(2 * logits));
  CHECK(flash.stages[0].edges->logits_bytes == doctest::Approx(2 * logits));
  // Traffic: one pass over the bf16 logits forward, read and write backward (flash-attn); Megatron's
  // multi-kernel fp32 loss 38 and 22 bytes per logit; ATen's F.cross_entropy, whose log-softmax is
  // one three-pass kernel, 22 forward (cast 2 + 4, log-softmax 12 + 4) and 26 backward (zero-filled
  // gradient 4, log-softmax backward 12 + 4, cast back 4 + 2).
  CHECK(find(flash.stages[0].edges->post_forward, "cross_entropy")->bytes == doctest::Approx(2 * logits));
  CHECK(find(flash.stages[0].edges->post_backward, "cross_entropy")->bytes == doctest::Approx(4 * logits));
  CHECK(find(megatron.stages[0].edges->post_forward, "cross_entropy")->bytes == doctest::Approx(38 * logits));
  CHECK(find(megatron.stages[0].edges->post_backward, "cross_entropy")->bytes == doctest::Approx(22 * logits));
  CHECK(find(torch.stages[0].edges->post_forward, "cross_entropy")->bytes == doctest::Approx(22 * logits));
  CHECK(find(torch.stages[0].edges->post_backward, "cross_entropy")->bytes == doctest::Approx(26 * logits));
  // So the fused loss needs less memory and less time.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Prediction pt = predict(m, hw, work(CrossEntropy::TorchFp32), layout());
  const Prediction pf = predict(m, hw, work(CrossEntropy::FlashAttnFused), layout());
  CHECK(pf.memory.total() < pt.memory.total());
  CHECK(pf.time.step < pt.time.step);
}

TEST_CASE("cross-entropy: under TP the torch loss is DTensor's loss_parallel, one more fp32 copy of the shard") {
  // torch/distributed/tensor/parallel/loss.py: the fused backward computes
  // (zeros_like(x) + exp(x)) * grad next to the saved log-softmax: three fp32 transients of the
  // vocabulary shard where the aten loss has two. torchtitan turns it on whenever tp > 1.
  const ModelSpec m = load_model("llama3-8b");
  Layout tp = layout();
  tp.dp = 4;
  tp.tp = 2;
  tp.sp = true;
  const StepProgram p = expand_step_program(m, tp, work(CrossEntropy::Default));
  const double T = 8 * 2048, shard = double(m.vocab / 2);
  CHECK(p.stages[0].edges->logits_bytes == doctest::Approx(12 * T * shard));
  // Megatron's vocab-parallel loss keeps its one low-precision copy under TP.
  const StepProgram meg = expand_step_program(m, tp, work(CrossEntropy::MegatronFp32));
  CHECK(meg.stages[0].edges->logits_bytes == doctest::Approx(2 * T * shard));
  // loss_parallel runs max, subtract, exp, sum and log as separate DTensor ops, Megatron's traffic.
  CHECK(find(p.stages[0].edges->post_forward, "cross_entropy")->bytes == doctest::Approx(38 * T * shard));
  CHECK(find(p.stages[0].edges->post_backward, "cross_entropy")->bytes == doctest::Approx(22 * T * shard));
}

TEST_CASE("training-metric passes: cross-entropy forwards over the logits after the backward, no gradient, no saved bytes") {
  const ModelSpec m = load_model("llama3-8b");
  const double logits = double(8 * 2048) * double(m.vocab);
  const StepProgram none = expand_step_program(m, layout(), work(CrossEntropy::FlashAttnFused, 0));
  const StepProgram two = expand_step_program(m, layout(), work(CrossEntropy::FlashAttnFused, 2));
  CHECK(find(none.stages[0].edges->post_backward, "train_metrics") == nullptr);
  const Op* metrics = find(two.stages[0].edges->post_backward, "train_metrics");
  REQUIRE(metrics != nullptr);
  // Each pass is torch.nn.CrossEntropyLoss under autocast: ATen's loss forward, 22 bytes a logit.
  CHECK(metrics->bytes == doctest::Approx(2 * 22 * logits));
  CHECK(metrics->saved == 0);
  CHECK(two.stages[0].edges->post_forward.size() == none.stages[0].edges->post_forward.size());
  const HardwareProfile hw = load_hardware("a100-sxm-80g");
  const Prediction p0 = predict(m, hw, work(CrossEntropy::FlashAttnFused, 0), layout());
  const Prediction p2 = predict(m, hw, work(CrossEntropy::FlashAttnFused, 2), layout());
  CHECK(p2.time.step > p0.time.step);
  CHECK(p2.memory.total() == doctest::Approx(p0.memory.total()));
}

TEST_CASE("llm-foundry rows: flash-attn's fused loss and Composer's two training-metric passes, from the codebase table") {
  const RunSettings lf = run_settings(parse_run_facts("llm-foundry", "2023-10", "flash", "1", ""), 1, 3);
  CHECK(lf.framework == Framework::Torchtitan);
  CHECK(lf.cross_entropy == CrossEntropy::FlashAttnFused);
  CHECK(lf.train_metric_passes == 2);
  const RunSettings tt = run_settings(parse_run_facts("torchtitan", "2024-12", "flash", "1", ""), 1, 3);
  CHECK(tt.cross_entropy == CrossEntropy::Default);
  CHECK(tt.train_metric_passes == 0);
}
