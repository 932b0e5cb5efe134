#include "simulator/op_listing.hpp"

#include <iterator>

#include "simulator/dp_traffic.hpp"
#include "simulator/op_cost.hpp"

namespace sixfold {

namespace {

const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::Attention: return "attention";
    case OpKind::Memory: return "memory";
    case OpKind::Collective: return "collective";
    case OpKind::PointToPoint: return "p2p";
  }
  return "?";
}

void add_list(std::vector<ListedOp>& out, const OpPricer& pricer, int stage, const char* part, const char* pass,
              const std::vector<Op>& ops, size_t recompute_ops, Count per_step) {
  if (per_step == 0) return;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (runs_nothing(op)) continue;  // ids keep the op's place in its list
    ListedOp r;
    r.id = op_id(stage, part, pass, i, op.name);
    r.name = op.name;
    r.kind = kind_name(op.kind);
    r.op_class = to_string(op.op_class);
    r.stage = stage;
    r.part = part;
    r.pass = pass;
    r.recompute = i < recompute_ops;
    r.per_step = per_step;
    r.flops = op.flops;
    r.bytes = op.kind == OpKind::Collective || op.kind == OpKind::PointToPoint ? op.message : op.bytes + op.cast_bytes;
    if (op.group != Group::None) r.group = to_string(op.group);
    r.predicted_s = pricer.time(op);
    out.push_back(std::move(r));
  }
}

}  // namespace

std::vector<ListedOp> list_ops(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l,
                               const StepProgram& prog) {
  const OpPricer pricer = OpPricer::of(hw, l, work);
  const Count m = prog.micro_batches;
  const int v = l.virtual_stages();
  std::vector<ListedOp> out;
  for (const StageProgram& st : prog.stages) {
    const int s = st.stage;
    add_list(out, pricer, s, "embed", "fwd", st.edges->pre_forward, 0, m);
    const LayerRuns runs = layer_runs(prog, st);
    for (const LayerRun& run : runs)
      add_list(out, pricer, s, run.part, "fwd", run.program->forward, 0, Count(run.layers) * m);
    add_list(out, pricer, s, "head", "fwd", st.edges->post_forward, 0, m);
    add_list(out, pricer, s, "head", "bwd", st.edges->post_backward, 0, m);
    for (auto run = std::make_reverse_iterator(runs.end()); run != std::make_reverse_iterator(runs.begin()); ++run)
      add_list(out, pricer, s, run->part, "bwd", run->program->backward, run->program->recompute_ops,
               Count(run->layers) * m);
    add_list(out, pricer, s, "embed", "bwd", st.edges->pre_backward, 0, m);
    // Each virtual chunk boundary sends the activation on and receives its gradient back.
    if (l.pp > 1) {
      // Interleaved: the last stage sends its earlier chunks' activations on to stage 0 too, and
      // the first stage its later chunks' gradients back to the last.
      add_list(out, pricer, s, "pp", "fwd", {st.pp_send}, 0, Count(v) * m - (st.last ? m : 0));
      add_list(out, pricer, s, "pp", "bwd", {st.pp_send}, 0, Count(v) * m - (st.first ? m : 0));
    }
    const DpOps dp = dp_ops(model, work, l, st, m);
    for (size_t i = 0; i < dp.ops.size(); ++i) {
      const DpOp& o = dp.ops[i];
      ListedOp r;
      r.id = op_id(s, "dp", "step", i, o.op.name);
      r.name = o.op.name;
      r.kind = kind_name(o.op.kind);
      r.op_class = to_string(o.op.op_class);
      r.stage = s;
      r.part = "dp";
      r.pass = "step";
      r.per_step = o.per_step;
      r.bytes = o.op.kind == OpKind::Collective ? o.op.message : o.op.bytes;
      if (o.op.group != Group::None) r.group = to_string(o.op.group);
      r.predicted_s = dp_op_time(o, l, hw);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace sixfold
