#pragma once
// `predict --ops`: the step program's ops, each with a stable id, where it runs and how often, and
// the price the cost model gives one occurrence of it. The list is what issue 14's executor will
// time under the same ids; today it shows where a prediction's compute and communication come from.
//
// Ids read "s<stage>.<part>.<pass>.<index>.<name>", e.g. "s0.dense.fwd.03.qkv_proj": part is
// embed (first stage), dense or moe (one layer; the row stands for each of the stage's layers of
// that kind), head (last stage: final norm, LM head, loss and MTP depths), pp, or dp (pass "step":
// the gradient reductions, ZeRO gathers and the optimizer step, simulator/dp_traffic.hpp); pass is fwd or
// bwd (a backward list's re-run forward counts as bwd, with recompute set); index is the op's
// place in its list. The same model, layout and workload always give the same ids.
#include <string>
#include <vector>

#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct ListedOp {
  std::string id;
  std::string name;       // the step program's op name
  std::string kind;       // gemm | attention | memory | collective | p2p
  std::string op_class;   // to_string(OpClass)
  int stage = 0;
  std::string part, pass;
  bool recompute = false;  // a backward list's re-run of the forward
  Count per_step = 0;      // occurrences on this stage's rank in one step (layers x micro-batches)
  Flops flops = 0;
  Bytes bytes = 0;         // memory-bound traffic, or a collective's message
  std::string group;       // collective: tp, cp, ep, ... ("" for compute)
  Seconds predicted_s = 0;  // one occurrence, alone (no overlap with anything)
};

std::vector<ListedOp> list_ops(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& layout, const StepProgram& program);

}  // namespace sixfold
