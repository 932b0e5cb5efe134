// Peers as test oracles: DeepSpeed's memory estimators and Megatron-LM's theoretical memory,
// re-expressed from their published code, against sixfold's memory model where the assumptions are
// the same; every remaining difference is asserted with its reason.
//
//   DeepSpeed  deepspeedai/DeepSpeed @ edaa7221 (2026-08): estimate_zero2_model_states_mem_needs
//              (deepspeed/runtime/zero/stage_1_and_2.py) and estimate_zero3_model_states_mem_needs
//              (deepspeed/runtime/zero/stage3.py), offload off.
//   Megatron   NVIDIA/Megatron-LM @ d98e8a64 (2026-08): megatron/training/theoretical_memory_usage.py,
//              compute_weight_and_optimizer_memory and compute_activation_memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/framework_memory.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {

// DeepSpeed, offload off: gpu_mem = 2P + 18P/N ("2 = params_16bit, 18 = 2_grads_16bit +
// 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit").
double deepspeed_zero2(double params, double gpus) { return 2 * params + std::floor(18 * params / gpus); }
// DeepSpeed, offload off: gpu_mem = 4 x largest_layer_params + 18P/N.
double deepspeed_zero3(double params, double largest, double gpus) { return 4 * largest + std::floor(18 * params / gpus); }

struct Run {
  ModelSpec model;
  Layout layout;
  Workload work;
  StepProgram program;
  std::vector<MemoryBreakdown> stages;
};

Run deepspeed_run(const char* model, int gpus, int zero) {
  Run r;
  r.model = load_model(model);
  r.layout.dp = gpus;
  r.layout.zero = zero;
  r.layout.recompute = Recompute::Full;
  r.work.seq = 4096;
  r.work.global_batch = gpus;
  r.work.framework = Framework::DeepSpeed;
  r.program = expand_step_program(r.model, r.layout, r.work);
  r.stages = predict_memory(r.model, load_hardware("h100-sxm-80g"), r.work, r.layout, r.program);
  return r;
}

}  // namespace

TEST_CASE("oracle: DeepSpeed ZeRO-2 model states equal estimate_zero2_model_states_mem_needs") {
  for (const char* model : {"llama3-8b", "llama3-70b"})
    for (int gpus : {8, 64, 512}) {
      CAPTURE(model);
      CAPTURE(gpus);
      const Run r = deepspeed_run(model, gpus, 2);
      const double params = double(count_parameters(r.model).total);
      REQUIRE(double(r.program.stages[0].dense_params) == params);
      const MemoryBreakdown& m = r.stages[0];
      // Same assumptions: 16-bit weights whole, 16-bit gradient partition, fp32 master partition,
      // Adam's fp32 moments, and step()'s fp32 copy of the gradient partition. Only the shard's
      // padding to equal sizes (ceil) differs, under a byte per rank and state.
      const double sixfold = m.model_states() + m.optimizer_step;
      CHECK(sixfold == doctest::Approx(deepspeed_zero2(params, gpus)).epsilon(1e-8));
      // Without the step's fp32 gradient copy sixfold would be 0.88 (8 GPUs) to 0.996 (512) of it.
      CHECK(m.optimizer_step == doctest::Approx(4 * params / gpus).epsilon(1e-8));
      // What the estimator leaves out, sixfold adds as separate terms: one ipg bucket of
      // reduce_bucket_size (5e8) 16-bit elements, and the activations.
      CHECK(m.communication_buffers == doctest::Approx(2 * 5e8));
    }
}

TEST_CASE("oracle: DeepSpeed ZeRO-3 model states against estimate_zero3_model_states_mem_needs") {
  for (const char* model : {"llama3-8b", "llama3-70b"})
    for (int gpus : {8, 64, 512}) {
      CAPTURE(model);
      CAPTURE(gpus);
      const Run r = deepspeed_run(model, gpus, 3);
      const ParameterCounts pc = count_parameters(r.model);
      const double params = double(pc.total);
      const MemoryBreakdown& m = r.stages[0];
      // The largest module is the embedding (= the output head): 128256 x hidden.
      const double largest = double(r.model.vocab) * r.model.hidden;
      REQUIRE(double(largest_module_params(r.model, r.layout, r.program.stages[0])) == largest);
      // The largest-module gather, same assumption: its 16-bit parameters gathered and its full
      // 16-bit gradient before the reduce, 4 bytes per parameter. sixfold adds the prefetch bucket
      // (stage3_prefetch_bucket_size, 5e7 elements) gathered behind it, as far as
      // stage3_max_live_parameters (1e9) leaves room: none for Llama-3-70B's 1.05e9-element embedding.
      const double prefetch = std::min(5e7, std::max(0.0, 1e9 - largest));
      CHECK(m.gathered_parameters == doctest::Approx(2 * largest + 2 * prefetch + 2 * largest).epsilon(1e-9));
      // The sharded part: the estimator's 18 bytes per parameter over N. sixfold keeps 16 (16-bit
      // parameter and gradient partitions, fp32 parameters, two fp32 moments) plus the norms that
      // stage3_param_persistence_threshold keeps whole, and in the step the fp32 gradient of one
      // sub-group at a time (sub_group_size 1e9 elements; _prepare_fp32_grad_for_sub_group).
      const double shard = params / gpus;
      const double norms = double(r.model.layers) * 2 * r.model.hidden;
      CHECK(m.model_states() == doctest::Approx(16 * shard + 2 * norms * (1 - 1.0 / gpus)).epsilon(1e-6));
      CHECK(m.optimizer_step == doctest::Approx(4 * std::min(shard, 1e9)).epsilon(1e-9));
      // Asserted difference: sixfold's model states with the largest module, against the estimator,
      // is 4 min(P/N, 1e9) - 2 P/N (the step's fp32 copy against the estimator's 2 extra bytes) plus
      // the persistent norms and the prefetch bucket.
      const double sixfold = m.model_states() + m.optimizer_step + m.gathered_parameters;
      const double expected_difference = 4 * std::min(shard, 1e9) - 2 * shard + 2 * norms * (1 - 1.0 / gpus) + 2 * prefetch;
      CHECK(sixfold - deepspeed_zero3(params, largest, gpus) == doctest::Approx(expected_difference).epsilon(1e-5));
    }
}

namespace {

// Megatron's padded vocabulary: a multiple of make_vocab_size_divisible_by (128) x tp.
double padded_vocab(double vocab, int tp) { return std::ceil(vocab / (128.0 * tp)) * 128.0 * tp; }

// compute_weight_and_optimizer_memory for a dense model without biases (GQA, SwiGLU or not):
// bytes on the most loaded shard (the first stage, with the embedding).
double megatron_weight_and_optimizer(const ModelSpec& m, const Layout& l) {
  const double h = m.hidden, q = double(m.head_dim) * m.heads;
  const double attention = 2 * h * h * ((1 + double(m.kv_heads) / m.heads) * q / h);
  const double glu = m.activation == Activation::SwiGLU ? 1.5 : 1;
  const double mlp = 2 * h * double(m.ffn) * glu;
  const double norm = m.norm == NormKind::RMSNorm ? 1 : 2;
  const double embedding = h * padded_vocab(double(m.vocab), l.tp);
  // The norms are replicated over TP (replicated_params_in_transformer_block), the rest sharded.
  double shard = ((attention + mlp) * m.layers / l.pp + embedding) / l.tp + 2 * h * norm * m.layers / l.pp;
  if (!m.tied_embeddings && l.pp == 1) shard += embedding / l.tp;
  const double bytes_per_param = l.zero >= 1 ? 6 + 12.0 / l.dp : 18;
  return shard * bytes_per_param;
}

}  // namespace

TEST_CASE("oracle: Megatron's theoretical weight and optimizer memory") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  struct Case {
    const char* model;
    int tp, pp, dp, zero;
  };
  for (const Case c : {Case{"llama3-8b", 1, 1, 8, 1}, Case{"llama3-8b", 2, 2, 4, 1}, Case{"llama3-70b", 8, 4, 2, 1},
                       Case{"llama3-70b", 4, 8, 4, 0}, Case{"gpt3-175b", 8, 8, 2, 1}, Case{"gpt3-175b", 8, 16, 1, 0}}) {
    CAPTURE(c.model);
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    const ModelSpec m = load_model(c.model);
    Layout l;
    l.tp = c.tp;
    l.pp = c.pp;
    l.dp = c.dp;
    l.zero = c.zero;
    l.sp = c.tp > 1;
    Workload w;
    w.seq = 2048;
    w.global_batch = 64 * c.dp;
    const StepProgram prog = expand_step_program(m, l, w);
    const MemoryBreakdown s0 = predict_memory(m, hw, w, l, prog)[0];
    // Same assumptions: bf16 weights, fp32 main gradients (Megatron forces them under bf16), fp32
    // main parameters and Adam moments, the last two sharded over dp by the distributed optimizer.
    const double sixfold = s0.model_states();
    // Asserted differences: Megatron pads the vocabulary to a multiple of 128 x tp (sixfold holds
    // ceil(vocab / tp) rows); its formula leaves out the linear biases (GPT-3 has them: QKV and fc1
    // biases sharded, 3h + ffn over tp, the two row-parallel output biases whole, 2h), GPT-3's
    // learned position embedding (max_seq x hidden, whole on every TP rank of the first stage) and,
    // with pp = 1, the final norm.
    const double per_param = c.zero >= 1 ? 6 + 12.0 / c.dp : 18;
    const double vocab_padding = (padded_vocab(double(m.vocab), c.tp) / c.tp - std::ceil(double(m.vocab) / c.tp)) *
                                 m.hidden * per_param * ((!m.tied_embeddings && c.pp == 1) ? 2 : 1);
    const double biases = m.linear_bias ? per_param * double(m.layers) / c.pp *
                                              ((3 * double(m.hidden) + double(m.ffn)) / c.tp + 2 * double(m.hidden))
                                        : 0;
    const double final_norm = c.pp == 1 ? per_param * double(m.hidden) * (m.norm == NormKind::RMSNorm ? 1 : 2) : 0;
    const double positions = m.learned_positions ? per_param * double(m.max_seq) * m.hidden : 0;
    const double oracle = megatron_weight_and_optimizer(m, l);
    CHECK(sixfold == doctest::Approx(oracle - vocab_padding + biases + final_norm + positions).epsilon(1e-6));
    // Llama (no biases, no position table): within 1% without the adjustments.
    if (!m.linear_bias) CHECK(sixfold == doctest::Approx(oracle).epsilon(0.01));
  }
}

TEST_CASE("oracle: Megatron's theoretical activation memory for GPT (sequence parallel, selective recompute)") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const ModelSpec m = load_model("gpt3-175b");
  for (int pp : {1, 8}) {
    CAPTURE(pp);
    Layout l;
    l.tp = 8;
    l.pp = pp;
    l.sp = true;
    l.recompute = Recompute::Selective;
    Workload w;
    w.seq = 2048;
    w.global_batch = 64;
    w.flash_attention = false;  // Korthikanti et al.'s Table 2 attention, with the softmax recomputed
    const StepProgram prog = expand_step_program(m, l, w);
    const MemoryBreakdown s0 = predict_memory(m, hw, w, l, prog)[0];
    const double s = double(w.seq), b = 1, h = m.hidden, t = l.tp;
    // compute_activation_memory: sbh(18 + 4 ffn / h) per layer, for the first stage's pp
    // micro-batches of layers/pp layers each; the embedding's input (8 bytes a token) and dropout
    // mask per micro-batch; with pp = 1 the output layer's input and fp32 logits; all over tp.
    const double layers = s * b * h * (18 + 4 * double(m.ffn) / h) * m.layers;
    const double embedding_input = 8 * s * b * pp;
    const double embedding_dropout = s * b * h * pp;
    const double output = pp == 1 ? s * b * h * 4 * (1 + padded_vocab(double(m.vocab), l.tp) / h) : 0;
    const double oracle = (layers + embedding_input + embedding_dropout + output) / t;
    // sixfold's transformer layers and embedding: the same, but for the token ids (sixfold does not
    // count the 8-byte input ids, a few KB).
    CHECK(s0.activations == doctest::Approx((layers + embedding_dropout) / t).epsilon(1e-6));
    if (pp == 1) {
      // The head: Megatron counts 4 bytes per hidden value of the output layer's input and 4 per
      // (padded-vocabulary) logit; sixfold holds the final norm's and the head's inputs in bf16
      // (2 + 2 bytes, sequence-sharded) and the fp32 softmax (4 per logit of ceil(vocab / tp)).
      // The loss's transient logits are not live at this stage's peak, a layer's backward
      // rematerialising its s x s attention scores (in workspace).
      const double vocab_rank = std::ceil(double(m.vocab) / t);
      CHECK(s0.logits == doctest::Approx((4 * s * b * h + 4 * s * b * vocab_rank * t) / t).epsilon(1e-6));
      CHECK(s0.peak_moment == PeakMoment::LayerBackward);
      const double padding = 4 * s * b * (padded_vocab(double(m.vocab), l.tp) - vocab_rank * t) / t;
      CHECK(s0.activations + s0.logits == doctest::Approx(oracle - embedding_input / t - padding).epsilon(1e-6));
    }
  }
}

TEST_CASE("oracle: the simulated memory timeline peaks where the closed form does, per stage") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const ModelSpec m = load_model("llama3-8b");
  auto check = [&](Framework f, int zero, Recompute recompute, bool compile) {
    CAPTURE(to_string(f));
    CAPTURE(zero);
    CAPTURE(compile);
    Layout l;
    l.dp = 2;
    l.pp = 4;
    l.zero = zero;
    l.recompute = recompute;
    Workload w;
    w.seq = 4096;
    w.global_batch = 16;
    w.framework = f;
    w.compile = compile;
    const StepProgram prog = expand_step_program(m, l, w);
    const SimulationResult sim = simulate_step(m, hw, w, l, prog, false);
    const std::vector<MemoryBreakdown> closed = predict_memory(m, hw, w, l, prog);
    for (size_t i = 0; i < closed.size(); ++i)
      CHECK(sim.stages[i].peak_memory == doctest::Approx(closed[i].total()).epsilon(1e-6));
  };
  for (Framework f : {Framework::Megatron, Framework::DeepSpeed, Framework::Torchtitan})
    for (int zero : {1, 3}) check(f, zero, Recompute::Full, false);
  // DeepSpeed's bf16 at ZeRO stage 0: its BF16_Optimizer's fp32 gradients and their all-reduce bucket.
  check(Framework::DeepSpeed, 0, Recompute::Full, false);
  // torchtitan's op-level checkpointing, eager and compiled (a smaller saved set, the fused loss).
  for (bool compile : {false, true}) check(Framework::Torchtitan, 3, Recompute::SelectiveOp, compile);
}
