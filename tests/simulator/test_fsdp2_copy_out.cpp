// FSDP2's all-gather copy-out (FrameworkTraits::zero3_copies_out_gathers): each ZeRO-3 gather of
// torchtitan (FSDP2's fully_shard) is followed by a copy of the gathered parameters out of the
// all-gather buffer on the compute stream, a memory op of twice the gathered bytes. FSDP1
// (Workload::fsdp1), DeepSpeed and Megatron gather in place.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/csv.hpp"
#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/fit/validation.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {
Layout fsdp8(int micro_batch) {
  Layout l;
  l.dp = 8;
  l.zero = 3;
  l.micro_batch = micro_batch;
  return l;
}

Workload work(Framework f) {
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  w.framework = f;
  return w;
}

const DpOp* find(const DpOps& d, const std::string& name) {
  for (const DpOp& o : d.ops)
    if (name == o.op.name) return &o;
  return nullptr;
}
}  // namespace

TEST_CASE("FSDP2 copies every gather out on the compute stream: twice the gathered bytes, as often as it gathers") {
  const ModelSpec m = load_model("llama3-8b");
  const Layout l = fsdp8(2);
  const Workload w = work(Framework::Torchtitan);
  const StepProgram prog = expand_step_program(m, l, w);
  const DpOps d = dp_ops(m, w, l, prog.stages.front(), prog.micro_batches);
  const DpOp* gather = find(d, "zero3_gather");
  const DpOp* copy = find(d, "zero3_gather_copy_out");
  REQUIRE(gather);
  REQUIRE(copy);
  CHECK(copy->role == DpRole::Zero3CopyOut);
  CHECK(copy->op.kind == OpKind::Memory);
  CHECK(copy->op.bytes == doctest::Approx(2 * gather->op.message));
  CHECK(copy->per_step == gather->per_step);
  // FSDP1, DeepSpeed and Megatron gather where the parameters live: no copy.
  Workload fsdp1 = w;
  fsdp1.fsdp1 = true;
  CHECK_FALSE(find(dp_ops(m, fsdp1, l, prog.stages.front(), prog.micro_batches), "zero3_gather_copy_out"));
  for (Framework f : {Framework::DeepSpeed, Framework::Megatron}) {
    const Workload o = work(f);
    const StepProgram p = expand_step_program(m, l, o);
    CHECK_FALSE(find(dp_ops(m, o, l, p.stages.front(), p.micro_batches), "zero3_gather_copy_out"));
  }
}

TEST_CASE("FSDP2's copy-out lengthens the step by what it moves, in the closed form and the simulator alike") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Layout l = fsdp8(1);
  const Workload fsdp2 = work(Framework::Torchtitan);
  Workload fsdp1 = fsdp2;
  fsdp1.fsdp1 = true;
  const Prediction two = predict(m, hw, fsdp2, l);
  const Prediction one = predict(m, hw, fsdp1, l);
  const StepProgram prog = expand_step_program(m, l, fsdp2);
  const DpTraffic t = dp_traffic(m, hw, fsdp2, l, prog.stages.front());
  // The forward's gather and the backward's again, every micro-batch: about 4 bytes per
  // parameter each time at the memory bandwidth (8B parameters: ~10 ms a pass on an H100).
  const double copies = double(prog.micro_batches) * (1 + t.backward_gather_passes) * t.gather_copy_out;
  MESSAGE("copy-out per pass " << t.gather_copy_out * 1e3 << " ms; step " << one.step_time << " -> " << two.step_time);
  CHECK(t.gather_copy_out > 0.005);
  CHECK(t.gather_copy_out < 0.03);
  // (doctest's Approx adds 1 to its scale: relative checks here are written out.)
  CHECK(std::abs((two.step_time - one.step_time) / copies - 1) < 0.3);
  CHECK(std::abs((two.time.compute - one.time.compute) / copies - 1) < 1e-6);
  // It is compute-stream work: the op classes still add up to the compute.
  double by_class = 0;
  for (const auto& [name, s] : two.compute_by_op_class) by_class += s;
  CHECK(by_class == doctest::Approx(two.time.compute).epsilon(1e-9));
  // The simulator plays the same copies in the blocks the gathers feed.
  const double sim_two = simulate_step(m, hw, fsdp2, l).step_time, sim_one = simulate_step(m, hw, fsdp1, l).step_time;
  CHECK(std::abs((sim_two - sim_one) / copies - 1) < 0.3);
  CHECK(std::abs(sim_two / two.step_time - 1) < 0.03);
}

TEST_CASE("validate: an unnamed FSDP codebase is FSDP1 before FSDP2's release (2024-07), FSDP2 from then or undated, Composer FSDP1") {
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap,compile\n";
  auto row = [](const char* id, const char* framework, const char* date) {
    return std::string(id) + ",a,32,4096,11008,32,32,32000,4096,,,,h100-sxm-80g,8,8,8,1,1,1,1,1,0,3,2,64,none,bf16,,,,3000,,," +
           framework + "," + date + ",flash,1,,\n";
  };
  const ValidationReport rep = validate_runs(
      parse_csv(header + row("OLD", "other", "2024-05") + row("NEW", "other", "2024-11") + row("UND", "other", "") +
                    row("TT", "torchtitan", "2024-05") + row("LF", "llm-foundry", "2024-05"),
                "f.csv"),
      {});
  REQUIRE(rep.rows.size() == 5);
  for (const RowResult& r : rep.rows) REQUIRE_MESSAGE(r.scored, r.id << ": " << r.skip_reason);
  CHECK(rep.rows[0].scenario.work.fsdp1);
  CHECK_FALSE(rep.rows[1].scenario.work.fsdp1);
  CHECK_FALSE(rep.rows[2].scenario.work.fsdp1);
  CHECK_FALSE(rep.rows[3].scenario.work.fsdp1);  // torchtitan has run FSDP2 from its start
  CHECK(rep.rows[4].scenario.work.fsdp1);        // Composer wraps in FSDP1
  // Same run otherwise: FSDP1's in-place gathers make the older row faster.
  CHECK(rep.rows[0].predicted.at("tokens_per_gpu_s") > rep.rows[1].predicted.at("tokens_per_gpu_s"));
}
