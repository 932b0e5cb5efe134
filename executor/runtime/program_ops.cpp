#include "executor/runtime/program_ops.hpp"

#include <string_view>

#include "common/error.hpp"

namespace sixfold {

namespace {
ProgramOpList list_of(int stage, const char* part, const char* pass, const std::vector<Op>& ops, std::string what) {
  ProgramOpList l;
  l.what = std::move(what);
  l.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) l.ops.push_back({op_id(stage, part, pass, i, ops[i].name), &ops[i]});
  return l;
}
}  // namespace

RankProgram rank_program(const ModelSpec& model, const Layout& layout, const Workload& work, int stage) {
  RankProgram r;
  Workload w = work;
  w.dtype = Dtype::FP32;
  r.program = expand_step_program(model, layout, w);
  r.stage = stage;
  const StageProgram& st = r.program.stages.at(size_t(stage));
  const StageEdges& e = *st.edges;
  r.embed_fwd = list_of(stage, "embed", "fwd", e.pre_forward, "embedding forward");
  r.embed_bwd = list_of(stage, "embed", "bwd", e.pre_backward, "embedding backward");
  r.dense_fwd = list_of(stage, "dense", "fwd", r.program.dense_layer().forward, "dense layer forward");
  r.dense_bwd = list_of(stage, "dense", "bwd", r.program.dense_layer().backward, "dense layer backward");
  r.moe_fwd = list_of(stage, "moe", "fwd", r.program.moe_layer().forward, "MoE layer forward");
  r.moe_bwd = list_of(stage, "moe", "bwd", r.program.moe_layer().backward, "MoE layer backward");
  const ProgramParts& parts = *r.program.parts;
  r.dense_kept_fwd = list_of(stage, "dense_kept", "fwd", parts.dense_kept.forward, "dense layer forward (kept activations)");
  r.dense_kept_bwd = list_of(stage, "dense_kept", "bwd", parts.dense_kept.backward, "dense layer backward (kept activations)");
  r.moe_kept_fwd = list_of(stage, "moe_kept", "fwd", parts.moe_kept.forward, "MoE layer forward (kept activations)");
  r.moe_kept_bwd = list_of(stage, "moe_kept", "bwd", parts.moe_kept.backward, "MoE layer backward (kept activations)");
  r.head_fwd = list_of(stage, "head", "fwd", e.post_forward, "output head forward");
  r.head_bwd = list_of(stage, "head", "bwd", e.post_backward, "output head backward");
  r.pp_fwd = list_of(stage, "pp", "fwd", {st.pp_send}, "pipeline send forward");
  r.pp_bwd = list_of(stage, "pp", "bwd", {st.pp_send}, "pipeline send backward");
  // pp_send is a member of the stage: point the ops at it, not at the temporary vector.
  r.pp_fwd.ops[0].op = r.pp_bwd.ops[0].op = &st.pp_send;
  r.dp_ops = dp_ops(model, w, layout, st, r.program.micro_batches);
  r.dp.what = "data-parallel step";
  for (size_t i = 0; i < r.dp_ops.ops.size(); ++i)
    r.dp.ops.push_back({op_id(stage, "dp", "step", i, r.dp_ops.ops[i].op.name), &r.dp_ops.ops[i].op});
  return r;
}

OpHandle RankProgram::dp_op(Backend& backend, const char* name) const {
  for (const ProgramOp& p : dp.ops)
    if (std::string_view(p.op->name) == name) return {&backend, p.id.c_str()};
  return {};
}

DpHandles dp_handles(const RankProgram& p, Backend& b) {
  return {p.dp_op(b, "grad_reduce"),  p.dp_op(b, "expert_grad_reduce"),  p.dp_op(b, "param_gather"),
          p.dp_op(b, "expert_param_gather"), p.dp_op(b, "zero3_gather"), p.dp_op(b, "expert_zero3_gather"),
          p.dp_op(b, "optimizer_step"), p.dp_op(b, "grad_replica_reduce"), p.dp_op(b, "zero3_gather_copy_out"),
          p.dp_op(b, "expert_zero3_gather_copy_out")};
}

std::vector<const ProgramOpList*> RankProgram::lists() const {
  return {&embed_fwd,      &embed_bwd,      &dense_fwd,    &dense_bwd,    &moe_fwd, &moe_bwd, &dense_kept_fwd,
          &dense_kept_bwd, &moe_kept_fwd, &moe_kept_bwd, &head_fwd,     &head_bwd, &pp_fwd,  &pp_bwd, &dp};
}

OpHandle OpCursor::take(const char* name, bool weight_grad) {
  const auto& ops = list_->ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!taken_[i] && std::string_view(ops[i].op->name) == name && ops[i].op->weight_grad == weight_grad) {
      taken_[i] = 1;
      return {backend_, ops[i].id.c_str()};
    }
  std::string have;
  for (size_t i = 0; i < ops.size(); ++i) have += (have.empty() ? "" : ", ") + ops[i].id + (taken_[i] ? " (run)" : "");
  throw Error("the executor ran " + std::string(name) + (weight_grad ? " (weight gradient)" : "") + " in the " +
              list_->what + ", which the step program does not hold (or holds fewer times); the program's ops: " + have);
}

OpHandle OpCursor::take_collective(const char* name) {
  for (const ProgramOp& p : list_->ops)
    if (std::string_view(p.op->name) == name) return take(name);
  return {};
}

OpHandle OpCursor::peek(const char* name) const {
  for (size_t i = 0; i < list_->ops.size(); ++i)
    if (!taken_[i] && std::string_view(list_->ops[i].op->name) == name) return {backend_, list_->ops[i].id.c_str()};
  return {};
}

void throw_no_work(const ProgramOpList& list, size_t i) {
  throw Error("the executor ran no work for the step program's op " + list.ops[i].id + " (" + list.what + ")");
}

bool named(const Op& op, const char* name) { return std::string_view(op.name) == name; }

bool run_layout_copy(OpCursor& ops, const Op& op) {
  if (!named(op, "sp_dim1_copy")) return false;
  const OpHandle h = ops.take(op.name);
  // Read and write: op.bytes moves half of them from one buffer to another. Outside the memory
  // tracker, as the cost model counts no memory for it (a transient the allocator reuses).
  const std::size_t n = std::size_t(op.bytes / 2);
  if (n == 0 || !h.backend) return true;
  DeviceStorage& storage = h.backend->storage();
  void* src = storage.allocate(n);
  void* dst = nullptr;
  try {
    dst = storage.allocate(n);
    OpScope timer(h);
    storage.copy(dst, src, n);
  } catch (...) {
    if (dst) storage.release(dst, n);
    storage.release(src, n);
    throw;
  }
  storage.release(dst, n);
  storage.release(src, n);
  return true;
}

void OpCursor::finish() const {
  std::string missing;
  for (size_t i = 0; i < list_->ops.size(); ++i)
    if (!taken_[i]) missing += (missing.empty() ? "" : ", ") + list_->ops[i].id;
  if (!missing.empty())
    throw Error("the executor's " + list_->what + " did not run the step program's ops " + missing +
                " (executor and cost model disagree on the op list)");
}

}  // namespace sixfold
