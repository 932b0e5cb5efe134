#pragma once
// The step program's ops as this rank runs them (models/step_program.hpp). Every piece of work the
// runtime does for a layer, the embedding, the head or a pipeline hand-off is one op of the
// program, timed under the op's id (op_id, the ids `predict --ops` lists), so that measured and
// predicted join op by op. An OpCursor hands out the ops of one list (a layer's forward, the
// head's backward, ...) as the runtime reaches them and, when the list has run, checks that every
// op of it ran: the runtime can neither run work the cost model did not price nor skip an op it did.
//
// The stage's data-parallel ops (gradient reductions, ZeRO gathers, the optimizer step; part "dp",
// simulator/dp_traffic.hpp) are timed under their ids too, through DpHandles: they run per parameter
// group, as often as the runtime's groups make them. What is not an op of the program is timed
// under its own name and reported apart: waiting on pipeline receives, the tied embedding's
// gradient sum.
#include <optional>
#include <string>
#include <vector>

#include "executor/backend/backend.hpp"
#include "models/step_program.hpp"
#include "simulator/dp_traffic.hpp"

namespace sixfold {

struct ProgramOp {
  std::string id;
  const Op* op = nullptr;
};

// The ops of one list of the program, with their ids. Never resized once built: the timers and the
// measured timeline keep pointers to the ids.
struct ProgramOpList {
  std::string what;  // "dense layer forward", for errors
  std::vector<ProgramOp> ops;
};

struct OpHandle;

struct RankProgram {
  StepProgram program;
  int stage = 0;
  DpOps dp_ops;  // the stage's DP ops the dp list points into
  ProgramOpList embed_fwd, embed_bwd, dense_fwd, dense_bwd, moe_fwd, moe_bwd, head_fwd, head_bwd, pp_fwd, pp_bwd, dp;
  // Under block recompute, the layers that keep their activations (ProgramParts::dense_kept).
  ProgramOpList dense_kept_fwd, dense_kept_bwd, moe_kept_fwd, moe_kept_bwd;
  const ProgramOpList& layer(bool moe, bool forward, bool kept = false) const {
    if (kept) return moe ? (forward ? moe_kept_fwd : moe_kept_bwd) : (forward ? dense_kept_fwd : dense_kept_bwd);
    return moe ? (forward ? moe_fwd : moe_bwd) : (forward ? dense_fwd : dense_bwd);
  }
  // Every list of the rank, for reports.
  std::vector<const ProgramOpList*> lists() const;
  // The dp list's op of this name, or an empty handle where the program has none (a group of one rank).
  OpHandle dp_op(Backend& backend, const char* name) const;
};

// The program of the layout as the runtime runs it, with the ops of `stage`. The runtime trains in
// fp32 or fp64: the program is expanded for fp32 activations (the op list does not depend on it).
RankProgram rank_program(const ModelSpec& model, const Layout& layout, const Workload& work, int stage);

// One op handed out by an OpCursor: what its work is timed under. Empty: an op the program leaves
// out (a collective over a group of one rank), timed under nothing.
struct OpHandle {
  Backend* backend = nullptr;
  const char* id = nullptr;
};

// The DP ops as the runtime's parameter groups use them: dense groups reduce and gather over the
// dp x cp group (a shard group of it under hybrid sharding, then over the replicas), a layer's
// experts over the expert-data group.
struct DpHandles {
  OpHandle grad_reduce, expert_grad_reduce, param_gather, expert_param_gather, zero3_gather, expert_zero3_gather, optimizer;
  OpHandle grad_replica_reduce;  // hybrid sharding: a gradient shard summed over its replicas
  OpHandle zero3_copy_out, expert_zero3_copy_out;  // FSDP2: each gather's copy into the parameters
  const OpHandle& reduce(bool expert) const { return expert ? expert_grad_reduce : grad_reduce; }
  const OpHandle& gather_after_step(bool expert) const { return expert ? expert_param_gather : param_gather; }
  const OpHandle& zero3(bool expert) const { return expert ? expert_zero3_gather : zero3_gather; }
  const OpHandle& copy_out(bool expert) const { return expert ? expert_zero3_copy_out : zero3_copy_out; }
};
DpHandles dp_handles(const RankProgram& program, Backend& backend);

// Times a scope as (part of) the run of one op.
class OpScope {
 public:
  explicit OpScope(const OpHandle& h) {
    if (h.id) timer_.emplace(*h.backend, h.id);
  }

 private:
  std::optional<ScopedOpTimer> timer_;
};

class OpCursor {
 public:
  OpCursor(Backend& backend, const ProgramOpList& list) : backend_(&backend), list_(&list), taken_(list.ops.size(), 0) {}
  // The list's first op of this name (and weight-gradient flag: a backward GEMM's dgrad or wgrad)
  // not yet handed out. Throws Error when there is none: the runtime is about to run work that the
  // program does not have.
  OpHandle take(const char* name, bool weight_grad = false);
  // A collective that the program leaves out when its group has one rank: an empty handle when the
  // list holds no op of this name at all, else as take.
  OpHandle take_collective(const char* name);
  // The handle of the list's first op of this name not yet handed out, without handing it out
  // (work timed under an op that runs later: Megatron's SP re-gather under the backward's
  // reduce-scatter); empty when there is none.
  OpHandle peek(const char* name) const;
  // Throws Error naming the ops of the list that no take handed out.
  void finish() const;
  const ProgramOpList& list() const { return *list_; }
  bool taken(size_t i) const { return taken_[i] != 0; }

 private:
  Backend* backend_;
  const ProgramOpList* list_;
  std::vector<char> taken_;
};

// Throws Error: the executor ran no work for the list's op i.
[[noreturn]] void throw_no_work(const ProgramOpList& list, size_t i);
// Whether an op has this name (op names are static strings; compared by content).
bool named(const Op& op, const char* name);

// An op that only moves memory where the framework the program follows lays its tensors out
// otherwise than the executor (torchtitan's copy of an SP collective along the sequence dim,
// sp_dim1_copy): takes it and runs a copy of as many bytes in the backend's memory, timed under
// it; the executor's own collectives need no reordering. False for any other op.
bool run_layout_copy(OpCursor& ops, const Op& op);

// Runs a list from the step program: walks the cursor's ops in the list's order and hands each
// one not yet handed out to `run_op(const Op&)`, which takes it (and any op it runs together with
// it) from the cursor; an op no handler took fails the run, naming it, and so does an op left over.
template <class RunOp>
void walk(OpCursor& ops, RunOp run_op) {
  const ProgramOpList& list = ops.list();
  for (size_t i = 0; i < list.ops.size(); ++i) {
    if (ops.taken(i)) continue;
    if (run_layout_copy(ops, *list.ops[i].op)) continue;
    run_op(*list.ops[i].op);
    if (!ops.taken(i)) throw_no_work(list, i);
  }
  ops.finish();
}

}  // namespace sixfold
