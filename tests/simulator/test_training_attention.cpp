// Training attention: each flash kernel priced from its own measured forward+backward speed
// (configs/kernel_tables/*.yaml, training_attention), the forward and backward split by the measured
// rate ratio, and the kernel a validation row ran chosen by its codebase and date.
#include <doctest/doctest.h>

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "models/step_program.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/kernel_tables.hpp"
#include "simulator/op_cost.hpp"

using namespace sixfold;

namespace {

// The chart value read back from the YAML itself, independently of the parser under test.
double chart_tflops(const std::string& device, const std::string& kernel, bool causal, int head_dim, size_t seq_index) {
  auto text = builtin_text("configs/kernel_tables/" + device + ".yaml");
  REQUIRE(text);
  const YAML::Node root = YAML::Load(std::string(*text));
  for (const auto& s : root["training_attention"]["series"])
    if (s["kernel"].as<std::string>() == kernel && s["causal"].as<bool>() == causal && s["head_dim"].as<int>() == head_dim)
      return s["tflops_fwd_bwd"][seq_index].as<double>();
  FAIL("no series " << kernel << " causal " << causal << " head dim " << head_dim << " in " << device);
  return 0;
}

// One layer's causal flash attention, forward and backward, as the step program builds them.
Op attention_op(Count sequences, Count seq, Count heads, Count head_dim, bool backward) {
  Op op;
  op.name = "flash_attention";
  op.kind = OpKind::Attention;
  op.op_class = OpClass::Attention;
  op.m = sequences * seq;
  op.n = seq;
  op.k = head_dim;
  op.batch = heads;
  op.flops = 2.0 * double(op.m) * (double(seq) / 2.0) * double(heads) * 2.0 * double(head_dim);
  if (backward) op.flops *= 2.5;
  op.backward = backward;
  return op;
}

}  // namespace

TEST_CASE("training attention: the measured forward+backward rates are exact at measured points, held beyond them") {
  const KernelTables& h100 = *kernel_tables_for("h100-sxm-80g");
  const auto& seq = h100.training_attention().seq;
  REQUIRE(seq.size() == 6);
  for (size_t i = 0; i < seq.size(); ++i) {
    CHECK(*h100.training_attention_rate(AttentionKernel::Flash2, true, 128, seq[i]) ==
          doctest::Approx(chart_tflops("h100-sxm", "flash-attention-2", true, 128, i) * 1e12));
    CHECK(*h100.training_attention_rate(AttentionKernel::Flash1, true, 64, seq[i]) ==
          doctest::Approx(chart_tflops("h100-sxm", "flash-attention-1", true, 64, i) * 1e12));
  }
  // Between measured lengths: between the neighbours; beyond the longest: its rate.
  const double r3k = *h100.training_attention_rate(AttentionKernel::Flash2, true, 128, 3072);
  CHECK(r3k > 265e12);
  CHECK(r3k < 294e12);
  CHECK(*h100.training_attention_rate(AttentionKernel::Flash2, true, 128, 131072) == doctest::Approx(328e12));
  // Between head dims 64 and 128: between them; above 128 (MLA's 192): the 128 series' rate.
  const double hd96 = *h100.training_attention_rate(AttentionKernel::Flash2, true, 96, 4096);
  CHECK(hd96 > 257e12);
  CHECK(hd96 < 294e12);
  CHECK(*h100.training_attention_rate(AttentionKernel::Flash2, true, 192, 4096) == doctest::Approx(294e12));
  // FlashAttention-2 is faster than 1.x on both measured GPUs; A100's figures are its own.
  const KernelTables& a100 = *kernel_tables_for("a100-sxm-80g");
  CHECK(a100.training_attention().chart_gpu == "A100 80GB SXM4");
  CHECK(*a100.training_attention_rate(AttentionKernel::Flash2, true, 128, 8192) == doctest::Approx(182e12));
  for (Count s : {512, 2048, 16384}) {
    CHECK(*h100.training_attention_rate(AttentionKernel::Flash2, true, 128, s) >
          *h100.training_attention_rate(AttentionKernel::Flash1, true, 128, s));
    CHECK(*a100.training_attention_rate(AttentionKernel::Flash2, true, 128, s) >
          *a100.training_attention_rate(AttentionKernel::Flash1, true, 128, s));
  }
  // H200 prices with the H100 SXM5 chart (same SMs); Blackwell has none.
  CHECK(kernel_tables_for("h200-sxm-141g")->training_attention().chart_gpu == "H100 80GB SXM5");
  CHECK_FALSE(kernel_tables_for("b200")->training_attention_rate(AttentionKernel::Flash2, true, 128, 4096));
  // The hidden-label cell (A100 FA2 non-causal head dim 128 at 512) is not invented: the nearest measured one holds.
  CHECK(*a100.training_attention_rate(AttentionKernel::Flash2, false, 128, 512) == doctest::Approx(187e12));
}

TEST_CASE("training attention: a forward and its backward take the chart's time together, the backward slower per FLOP") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout layout;
  const double ratio = kernel_tables_for("h100-sxm-80g")->training_attention().forward_backward_rate_ratio;
  CHECK(ratio == doctest::Approx(1.15));
  for (AttentionKernel k : {AttentionKernel::Flash1, AttentionKernel::Flash2}) {
    const OpPricer pricer(hw, layout, Dtype::BF16, k);
    const Op f = attention_op(4, 4096, 16, 128, false), b = attention_op(4, 4096, 16, 128, true);
    const Seconds tf = pricer.time(f), tb = pricer.time(b);
    const double chart = *kernel_tables_for("h100-sxm-80g")->training_attention_rate(k, true, 128, 4096);
    // At the chart's rate, slowed by the profile's kernel_slowdown (kernels inside a training step).
    CHECK((f.flops + b.flops) / (tf + tb) == doctest::Approx(chart / hw.kernel_slowdown).epsilon(1e-9));
    CHECK((f.flops / tf) / (b.flops / tb) == doctest::Approx(ratio));
  }
  // TransformerEngine's fused attention on Hopper (cuDNN, FA3-class): faster than FlashAttention-2,
  // which is faster than 1.x; its backward also `ratio` slower per FLOP than its forward.
  const Op f = attention_op(1, 16384, 32, 128, false), b = attention_op(1, 16384, 32, 128, true);
  auto pair = [&](AttentionKernel k) {
    const OpPricer p(hw, layout, Dtype::BF16, k);
    return p.time(f) + p.time(b);
  };
  CHECK(pair(AttentionKernel::TeFused) < pair(AttentionKernel::Flash2));
  CHECK(pair(AttentionKernel::Flash2) < pair(AttentionKernel::Flash1));
  const OpPricer te(hw, layout, Dtype::BF16, AttentionKernel::TeFused);
  CHECK((f.flops / te.time(f)) / (b.flops / te.time(b)) == doctest::Approx(ratio));
  // Default is TransformerEngine's fused attention.
  CHECK(OpPricer(hw, layout, Dtype::BF16).time(b) == doctest::Approx(te.time(b)));
}

TEST_CASE("training attention: the kernel a row ran follows its codebase and date, every entry with a source") {
  auto kernel = [](const std::string& codebase, const std::string& date) {
    return run_settings(parse_run_facts(codebase, date, "flash", "", ""), 1, 1).attention_kernel;
  };
  // FlashAttention-2 was released in 2023-07; before it every flash run was 1.x.
  CHECK(kernel("torchtitan", "2023-06") == AttentionKernel::Flash1);
  CHECK(kernel("torchtitan", "2024-12") == AttentionKernel::Flash2);
  CHECK(kernel("torchtitan", "") == AttentionKernel::Flash2);
  // llm-foundry's default install pinned flash-attn 1.x until 2024-03.
  CHECK(kernel("llm-foundry", "2023-10") == AttentionKernel::Flash1);
  CHECK(kernel("llm-foundry", "2024-05") == AttentionKernel::Flash2);
  // Megatron-LM: the flash-attn package, then TransformerEngine's fused attention from 2024-07.
  CHECK(kernel("megatron-lm", "2023-01") == AttentionKernel::Flash1);
  CHECK(kernel("megatron-lm", "2023-09") == AttentionKernel::Flash2);
  CHECK(kernel("megatron-lm", "2024-07") == AttentionKernel::TeFused);
  CHECK(framework_traits(Framework::Megatron).attention_kernel == AttentionKernel::TeFused);
  // MegaScale says it adopts FlashAttention-2; DeepSpeed's models call flash-attn 2.
  CHECK(kernel("megascale", "2024-02") == AttentionKernel::Flash2);
  CHECK(kernel("deepspeed", "2024-01") == AttentionKernel::Flash2);
  CHECK(framework_traits(Framework::DeepSpeed).attention_kernel == AttentionKernel::Flash2);
  // Meta's PyTorch stack (Llama 3, 2024-07) ran PyTorch's FlashAttention-2 until cuDNN's attention
  // reached PyTorch (2024-10); after that, or undated, it is priced as the Megatron-style default.
  CHECK(kernel("meta-internal", "2024-07") == AttentionKernel::Flash2);
  CHECK(kernel("meta-internal", "2025-06") == AttentionKernel::TeFused);
  CHECK(kernel("meta-internal", "") == AttentionKernel::TeFused);
}

TEST_CASE("training attention: a row that names its kernel is priced with it, whatever its codebase's date says") {
  auto kernel = [](const std::string& attention) {
    return run_settings(parse_run_facts("llm-foundry", "2024-01", attention, "", ""), 1, 3).attention_kernel;
  };
  // llm-foundry's 2024-01 large-scale H100 table: its sweep installed flash-attn 2.4.2 and ran
  // attn_impl flash for four of its six models, before the codebase's default moved to 2.x.
  CHECK(kernel("flash") == AttentionKernel::Flash1);
  CHECK(kernel("flash-attention-2") == AttentionKernel::Flash2);
  CHECK(kernel("te-fused") == AttentionKernel::TeFused);
  CHECK(run_settings(parse_run_facts("megatron-lm", "2024-08", "flash-attention-1", "", ""), 1, 1).attention_kernel ==
        AttentionKernel::Flash1);
  const RunFacts named = parse_run_facts("torchtitan", "", "flash-attention-2", "", "");
  CHECK(named.flash_attention == std::optional<bool>(true));
  CHECK_FALSE(run_settings(named, 1, 1).filled_flash);
  CHECK_THROWS_WITH(parse_run_facts("torchtitan", "", "flash-attention-3", "", ""),
                    doctest::Contains("column 'attention': value 'flash-attention-3' is not flash, flash-attention-1, "
                                      "flash-attention-2, te-fused, fused-softmax, unfused or empty"));
}

TEST_CASE("training attention: a malformed section is an Error naming the field and what is allowed") {
  const std::string base = R"(schema_version: 1
device: test-gpu
provenance: {package: p, package_version: "1", licence: Apache-2.0, converted: 2026-01-01, converter: test}
training_attention:
  source: s
  chart_gpu: g
  forward_backward_rate_ratio: 1.15
  seq: [512, 1024]
  series:
    - {kernel: flash-attention-2, causal: true, head_dim: 128, tflops_fwd_bwd: [100, null]}
)";
  const KernelTables ok = KernelTables::parse(base, "ok.yaml");
  CHECK(*ok.training_attention_rate(AttentionKernel::Flash2, true, 128, 4096) == doctest::Approx(100e12));
  CHECK_FALSE(ok.training_attention_rate(AttentionKernel::Flash1, true, 128, 4096));
  CHECK_FALSE(ok.training_attention_rate(AttentionKernel::Flash2, false, 128, 4096));
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    text.replace(text.find(from), from.size(), to);
    try {
      KernelTables::parse(text, "bad.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error_of("kernel: flash-attention-2", "kernel: flash-attention-4");
  CHECK(e.find("bad.yaml") != std::string::npos);
  CHECK(e.find("training_attention.series[0].kernel") != std::string::npos);
  CHECK(e.find("allowed: flash-attention-1, flash-attention-2") != std::string::npos);
  e = error_of("[100, null]", "[100]");
  CHECK(e.find("training_attention.series[0].tflops_fwd_bwd") != std::string::npos);
  e = error_of("[100, null]", "[null, null]");
  CHECK(e.find("no measured value") != std::string::npos);
  e = error_of("ratio: 1.15", "ratio: 9");
  CHECK(e.find("forward_backward_rate_ratio") != std::string::npos);
  e = error_of("[100, null]", "[100, -3]");
  CHECK(e.find("tflops_fwd_bwd[1]") != std::string::npos);
}
