// `predict --ops` (simulator/op_listing.hpp): every op of the step program with a stable id, and
// prices that add up to the closed form's compute, stage by stage.
#include <doctest/doctest.h>

#include <set>

#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/op_listing.hpp"
#include "tests/run_sixfold.hpp"

#include <nlohmann/json.hpp>

using namespace sixfold;

namespace {

struct Case {
  const char* model;
  Layout layout;
  Workload work;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  Case dense{"llama3-8b", {}, {}};
  dense.layout.tp = 2, dense.layout.pp = 4, dense.layout.dp = 2, dense.layout.sp = true;
  dense.layout.schedule = Schedule::Interleaved, dense.layout.vpp = 2, dense.layout.recompute = Recompute::Selective;
  dense.work.seq = 4096, dense.work.global_batch = 32;
  out.push_back(dense);
  Case moe{"mixtral-8x7b", {}, {}};
  moe.layout.dp = 4, moe.layout.tp = 2, moe.layout.pp = 2, moe.layout.ep = 4, moe.layout.zero = 1, moe.layout.sp = true;
  moe.layout.recompute = Recompute::Full;
  moe.work.seq = 4096, moe.work.global_batch = 16;
  out.push_back(moe);
  Case mtp{"deepseek-v3", {}, {}};
  mtp.layout.dp = 16, mtp.layout.pp = 8, mtp.layout.ep = 16, mtp.layout.zero = 1;
  mtp.work.seq = 4096, mtp.work.global_batch = 256, mtp.work.dtype = Dtype::FP8, mtp.work.mtp_layers = 1;
  out.push_back(mtp);
  return out;
}

}  // namespace

TEST_CASE("op list: unique stable ids, and each stage's ops add up to its closed-form compute") {
  for (const Case& c : cases()) {
    CAPTURE(c.model);
    const ModelSpec model = load_model(c.model);
    const HardwareProfile hw = load_hardware("h100-sxm-80g");
    validate_layout(model, c.layout, c.work, 0);
    const StepProgram prog = expand_step_program(model, c.layout, c.work);
    const auto ops = list_ops(model, hw, c.work, c.layout, prog);
    REQUIRE(!ops.empty());
    std::set<std::string> ids;
    for (const auto& o : ops) ids.insert(o.id);
    CHECK(ids.size() == ops.size());
    const auto again = list_ops(model, hw, c.work, c.layout, expand_step_program(model, c.layout, c.work));
    REQUIRE(again.size() == ops.size());
    for (size_t i = 0; i < ops.size(); ++i) CHECK(again[i].id == ops[i].id);

    const auto stages = stage_times(model, hw, c.work, c.layout, prog);
    std::vector<Seconds> compute(stages.size(), 0.0), recompute(stages.size(), 0.0);
    bool any_collective = false;
    std::vector<Seconds> optimizer(stages.size(), 0.0);
    for (const auto& o : ops) {
      if (o.part == "dp") {  // priced as the closed form's DP traffic and optimizer (checked below)
        if (o.name == "optimizer_step") optimizer[size_t(o.stage)] += o.predicted_s * double(o.per_step);
        continue;
      }
      if (o.kind == "collective" || o.kind == "p2p") {
        any_collective = true;
        continue;
      }
      compute[size_t(o.stage)] += o.predicted_s * double(o.per_step);
      if (o.recompute) recompute[size_t(o.stage)] += o.predicted_s * double(o.per_step);
    }
    CHECK(any_collective);
    for (size_t s = 0; s < stages.size(); ++s) {
      CAPTURE(s);
      const double m = double(prog.micro_batches);
      CHECK(compute[s] == doctest::Approx(stages[s].compute * m).epsilon(1e-9));
      CHECK(recompute[s] == doctest::Approx(stages[s].recompute * m).epsilon(1e-9));
      CHECK(optimizer[s] == doctest::Approx(stages[s].optimizer).epsilon(1e-12));
    }
  }
}

TEST_CASE("predict --ops --json lists the ops with ids, the text lists them with per-stage totals") {
  auto r = sixfold::test::run_sixfold("predict --scenario pp-1f1b --ops --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j.contains("ops"));
  REQUIRE(j["ops"].size() > 20);
  for (const char* key : {"id", "name", "kind", "op_class", "stage", "per_step", "flops", "bytes", "predicted_s"})
    CHECK(j["ops"][0].contains(key));
  r = sixfold::test::run_sixfold("predict --scenario pp-1f1b --ops");
  REQUIRE(r.code == 0);
  CHECK(r.output.find("s0.dense.fwd.") != std::string::npos);
  CHECK(r.output.find("stage 3: ops add up to") != std::string::npos);
  CHECK(sixfold::test::run_sixfold("predict --scenario pp-1f1b --json").output.find("\"ops\"") == std::string::npos);
}

TEST_CASE("step program: TP boundaries as Megatron's f and g (no SP), and as all-gather/reduce-scatter pairs (SP)") {
  const ModelSpec model = load_model("llama3-8b");
  Workload w;
  w.seq = 4096, w.global_batch = 8;
  auto names = [](const std::vector<Op>& ops) {
    std::vector<std::string> out;
    for (const Op& op : ops) out.push_back(op.name);
    return out;
  };
  auto index_of = [](const std::vector<std::string>& v, const std::string& name, size_t from = 0) {
    for (size_t i = from; i < v.size(); ++i)
      if (v[i] == name) return i;
    return v.size();
  };
  Layout l;
  l.tp = 2, l.dp = 4;
  const StepProgram no_sp = expand_step_program(model, l, w);
  const auto fwd = names(no_sp.dense_layer().forward), bwd = names(no_sp.dense_layer().backward);
  // g: all-reduce after the row-parallel GEMMs in forward, nothing in backward; f: nothing in
  // forward, all-reduce after the column-parallel GEMMs' backward, before the block's norm.
  CHECK(index_of(fwd, "attn_allreduce") == index_of(fwd, "out_proj") + 1);
  CHECK(index_of(fwd, "mlp_allreduce") == index_of(fwd, "mlp_down") + 1);
  CHECK(index_of(bwd, "attn_allreduce") + 1 == index_of(bwd, "attn_norm"));
  CHECK(index_of(bwd, "attn_allreduce") > index_of(bwd, "qkv_proj"));
  CHECK(index_of(bwd, "mlp_allreduce") + 1 == index_of(bwd, "mlp_norm"));
  CHECK(index_of(bwd, "mlp_allreduce") > index_of(bwd, "mlp_up"));
  CHECK(index_of(bwd, "mlp_allreduce", index_of(bwd, "mlp_allreduce") + 1) == bwd.size());  // once
  // The embedding's all-reduce has no backward; the head's input gradient is all-reduced.
  const StageEdges& edges = *no_sp.stages[0].edges;
  for (const Op& op : edges.pre_backward) CHECK(op.kind != OpKind::Collective);
  const auto head_bwd = names(edges.post_backward);
  CHECK(index_of(head_bwd, "head_grad_allreduce") + 1 == index_of(head_bwd, "final_norm"));
  CHECK(index_of(head_bwd, "loss_allreduce") == head_bwd.size());

  l.sp = true;
  const StepProgram sp = expand_step_program(model, l, w);
  const auto sfwd = names(sp.dense_layer().forward), sbwd = names(sp.dense_layer().backward);
  CHECK(index_of(sfwd, "attn_allgather") + 1 == index_of(sfwd, "qkv_proj"));
  CHECK(index_of(sbwd, "attn_allgather") + 1 == index_of(sbwd, "attn_norm"));  // its reduce-scatter
  CHECK(sp.dense_layer().backward[index_of(sbwd, "attn_allgather")].collective == Collective::ReduceScatter);
  CHECK(sp.dense_layer().backward[index_of(sbwd, "attn_reducescatter")].collective == Collective::AllGather);
}
