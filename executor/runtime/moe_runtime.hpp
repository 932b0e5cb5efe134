#pragma once
// Mixture-of-experts FFN of one layer on this rank's token rows: top-k router (softmax, keep k,
// renormalise), stable permutation of the (token, choice) assignments by expert, all-to-all
// dispatch over the expert-parallel group (expert e lives on EP rank e / (experts / ep)), expert
// MLPs, all-to-all combine and the gate-weighted sum (GShard, Lepikhin et al. 2020; Megatron's
// all-to-all token dispatcher). Dropless: no capacity limit.
#include <memory>
#include <vector>

#include "executor/runtime/exec_context.hpp"
#include "executor/runtime/param_store.hpp"

namespace sixfold {

template <class T>
struct MoeWeights {
  const T* router = nullptr;            // [H, E]
  std::vector<const T*> gate, up, down;  // per local expert; gate/up [H, F] (up unused for GELU), down [F, H]
};
template <class T>
struct MoeGrads {
  T* router = nullptr;
  std::vector<T*> gate, up, down;
};

template <class T>
struct MoeSaved {
  std::vector<int> expert_index, slot, tokens_per_expert;
  std::vector<long> send_rows, recv_rows;      // rows per EP peer
  std::vector<int> recv_expert_rows;           // [ep][local experts]
  // expert_prob: each received row's routing probability (the experts weight their activation by
  // it); expert_act: the weighted activation, the down projection's input.
  TrackedBuffer<T> gate_weight, expert_in, expert_prob, expert_gate, expert_up, expert_act;
};

// One run of the block, op by op: the layer hands each MoE op of its program list (router,
// moe_permute, ep_dispatch, expert_up, expert_act, expert_down, ep_combine, moe_unpermute; their
// backward ops in a backward list) to forward_op / backward_op, in the list's order. Collectives
// the program leaves out (ep = 1) run, untimed, where their result is first needed.
template <class T>
class MoeBlock {
 public:
  // Forward: x [rows, H] -> out [rows, H] (written); saves what backward needs in `saved`
  // (`saved_category`: Activations, or Buffers when the layer is fully recomputed).
  MoeBlock(const ExecContext& ctx, long rows, const T* x, const MoeWeights<T>& w, T* out, MoeSaved<T>& saved,
           MemoryCategory saved_category);
  // Backward: dout -> dx (written); parameter gradients accumulate; `saved` is consumed.
  MoeBlock(const ExecContext& ctx, long rows, const T* x, const T* dout, const MoeWeights<T>& w, const MoeGrads<T>& g,
           MoeSaved<T>& saved, T* dx);
  ~MoeBlock();
  MoeBlock(const MoeBlock&) = delete;
  MoeBlock& operator=(const MoeBlock&) = delete;
  // Runs `op` (taken from `ops`); false when it is not an op of the block.
  bool forward_op(OpCursor& ops, const Op& op);
  bool backward_op(OpCursor& ops, const Op& op);

 private:
  struct State;
  std::unique_ptr<State> st_;
};

}  // namespace sixfold
