// Megatron-Core's selective recompute modules (--recompute-modules): what each one stops saving
// and re-runs, against the bytes of the ops it names.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"

using namespace sixfold;

namespace {

Workload workload(Dtype dtype = Dtype::BF16) {
  Workload w;
  w.seq = 4096;
  w.global_batch = 8;
  w.dtype = dtype;
  return w;
}

LayerProgram layer(const ModelSpec& m, unsigned modules, bool moe, Layout l = {}) {
  l.recompute = Recompute::Selective;
  l.recompute_modules = modules;
  const StepProgram p = expand_step_program(m, l, workload());
  return moe ? p.moe_layer() : p.dense_layer();
}

Bytes saved_by(const LayerProgram& lp, const char* name) {
  for (const Op& op : lp.forward)
    if (std::string(op.name) == name) return op.saved;
  FAIL("no op " << name);
  return 0;
}

}  // namespace

namespace rm = recompute_module;

TEST_CASE("recompute module names parse both ways and unknown ones list the allowed") {
  CHECK(parse_recompute_modules("mla_up_proj,layernorm") == (rm::kMlaUpProj | rm::kLayernorm));
  CHECK(recompute_modules_string(rm::kMoeAct | rm::kCoreAttn) == "core_attn,moe_act");
  CHECK_THROWS_WITH_AS(parse_recompute_modules("core_attn,mlpp"), doctest::Contains("allowed: core_attn, mlp"), UsageError);
}

TEST_CASE("the default module is core attention") {
  const ModelSpec m = load_model("llama3-8b");
  CHECK(layer(m, 0, false).saved == layer(m, rm::kCoreAttn, false).saved);
}

TEST_CASE("recomputed core attention under CP runs its K/V ring exchange again") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.cp = 2;
  const LayerProgram lp = layer(m, rm::kCoreAttn, false, l);
  REQUIRE(lp.recompute_ops == 2);
  CHECK(std::string(lp.backward[0].name) == "cp_kv_exchange");
  CHECK(std::string(lp.backward[1].name) == "flash_attention");
  CHECK(lp.backward[1].overlaps_previous);
  // The saved bytes do not change: the exchange keeps nothing.
  l.cp = 1;
  CHECK(layer(m, rm::kCoreAttn, false, l).recompute_ops == 1);
}

TEST_CASE("layernorm stops saving the norm outputs the next GEMMs would keep") {
  const ModelSpec m = load_model("llama3-8b");
  const LayerProgram base = layer(m, rm::kCoreAttn, false);
  const LayerProgram ln = layer(m, rm::kCoreAttn | rm::kLayernorm, false);
  CHECK(base.saved - ln.saved == doctest::Approx(saved_by(base, "qkv_proj") + saved_by(base, "mlp_up")));
  CHECK(ln.recompute_workspace >= base.saved - ln.saved);
}

TEST_CASE("mla_up_proj recomputes Q, K and V from the latents") {
  const ModelSpec m = load_model("deepseek-v3");
  const LayerProgram base = layer(m, rm::kCoreAttn, true);
  const LayerProgram up = layer(m, rm::kCoreAttn | rm::kMlaUpProj, true);
  const double T = 4096, heads = m.heads;
  const double qkv = T * heads * (m.q_head_dim() + m.q_head_dim() + m.v_head_dim()) * 2;  // bf16
  CHECK(base.saved - up.saved == doctest::Approx(qkv));
  int reruns = 0;
  for (size_t i = 0; i < up.recompute_ops; ++i) {
    const std::string name = up.backward[i].name;
    reruns += name == "q_up_proj" || name == "kv_up_proj";
  }
  CHECK(reruns == 2);
}

TEST_CASE("mlp keeps only the block input, moe_act drops the experts' activation output") {
  const ModelSpec dense = load_model("llama3-8b");
  const LayerProgram base = layer(dense, rm::kCoreAttn, false);
  const LayerProgram mlp = layer(dense, rm::kCoreAttn | rm::kMlp, false);
  const double input = 4096.0 * double(dense.hidden) * 2;
  const Bytes body = saved_by(base, "mlp_up") + saved_by(base, "mlp_act") + saved_by(base, "mlp_down");
  CHECK(base.saved - mlp.saved == doctest::Approx(body - input));

  const ModelSpec moe = load_model("mixtral-8x7b");
  const LayerProgram mbase = layer(moe, rm::kCoreAttn, true);
  const LayerProgram act = layer(moe, rm::kCoreAttn | rm::kMoeAct, true);
  CHECK(mbase.saved - act.saved == doctest::Approx(saved_by(mbase, "expert_down")));
  const LayerProgram block = layer(moe, rm::kCoreAttn | rm::kMoe, true);
  CHECK(block.saved < act.saved);
}

TEST_CASE("modules that do not apply, or without selective recompute, are layout errors") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.recompute = Recompute::Selective;
  l.recompute_modules = rm::kMlaUpProj;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, workload(), 0), doctest::Contains("mla_up_proj needs MLA"), LayoutError);
  l.recompute_modules = rm::kMoeAct;
  CHECK_THROWS_AS(validate_layout(m, l, workload(), 0), LayoutError);
  l.recompute = Recompute::Full;
  l.recompute_modules = rm::kLayernorm;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, workload(), 0), doctest::Contains("need selective"), LayoutError);
}
