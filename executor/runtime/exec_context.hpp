#pragma once
// Shapes and groups shared by the pieces of one rank's model runtime, and the TP/SP boundary
// operations of Megatron (Shoeybi et al. 2019; Korthikanti et al. 2022):
//   enter_tp: before a column-parallel GEMM. Forward: all-gather of the sequence shard under
//             SP, identity otherwise. Backward: reduce-scatter under SP, all-reduce otherwise.
//   exit_tp:  after a row-parallel GEMM. Forward: reduce-scatter under SP, all-reduce otherwise.
//             Backward: all-gather under SP, identity otherwise.
// Rows are tokens: micro_batch sequences of seq_local tokens each (seq_local = seq / cp); the
// residual stream holds `rows_residual` of them (rows / tp under SP, all rows otherwise).
#include <algorithm>
#include <vector>

#include "executor/backend/backend.hpp"
#include "executor/runtime/program_ops.hpp"
#include "executor/runtime/process_groups.hpp"
#include "models/layout.hpp"
#include "models/model_spec.hpp"

namespace sixfold {

struct ExecContext {
  const ModelSpec* model = nullptr;
  const Layout* layout = nullptr;
  ProcessGroups* groups = nullptr;
  Backend* backend = nullptr;
  const RankProgram* program = nullptr;  // the step program's ops this rank runs, by list
  DpHandles dp;                          // its data-parallel ops
  long hidden = 0;
  int micro_batch = 1, seq = 0, seq_local = 0;
  long rows = 0, rows_residual = 0;
  int heads_local = 0, kv_heads_local = 0, head_dim = 0, rotary_dim = 0;
  long ffn_local = 0;
  long vocab_local = 0, vocab_start = 0;
  double rope_theta = 10000.0;  // Llama/NeoX default base
  double norm_eps = 1e-5;
  bool sp = false;
  // Under SP, the column-parallel GEMMs keep their gathered input for the weight gradient
  // (torchtitan's DTensor autograd; FrameworkTraits::sp_keeps_gathered_input) instead of
  // re-gathering the shard in the backward (Megatron's SP linear).
  bool sp_keeps_gathered = false;
  std::vector<int> positions;  // [rows]: sequence position of each local row

  MemoryTracker* memory() const { return &backend->memory(); }
  // The backend's kernels, and a copy between two of its buffers (tensors live in its memory).
  template <class T>
  DeviceOps<T>& ops() const {
    return backend->ops<T>();
  }
  template <class T>
  void copy(T* dst, const T* src, long n) const {
    backend->storage().copy(dst, src, std::size_t(n) * sizeof(T));
  }

  // A parameter group's ZeRO-3 gather and its gradient reduction (ZeRO-2/3 after each backward),
  // timed under the program's DP ops.
  template <class Group>
  void acquire_weights(Group* g) const {
    if (!g) return;
    OpScope timer(dp.zero3(g->expert()));
    g->acquire_weights(dp.copy_out(g->expert()).id);
  }
  template <class Group>
  void release_grads(Group* g, Communicator* tp) const {
    if (!g) return;
    OpScope timer(dp.reduce(g->expert()));
    g->release_grads(tp);
  }
  Communicator& tp() const { return *groups->tp; }

  // One GEMM of the program's op `op` (a fused op such as qkv_proj runs several).
  template <class T>
  void gemm(const OpHandle& op, bool ta, bool tb, long m, long n, long k, const T* a, const T* b, T beta, T* c) const {
    OpScope timer(op);
    backend->gemm(ta, tb, m, n, k, T(1), a, b, beta, c);
  }

  // Positions of the tokens held by CP rank r: chunks r and 2cp-1-r of 2cp (causal load balance).
  std::vector<int> cp_positions(int cp_rank) const {
    std::vector<int> p;
    const int cp = layout->cp;
    if (cp == 1) {
      for (int i = 0; i < seq; ++i) p.push_back(i);
      return p;
    }
    const int chunk = seq / (2 * cp);
    for (int c : {cp_rank, 2 * cp - 1 - cp_rank})
      for (int i = 0; i < chunk; ++i) p.push_back(c * chunk + i);
    return p;
  }

  template <class T>
  void enter_tp_forward(const OpHandle& op, const T* in, T* out) const {  // [rows_residual, H] -> [rows, H]
    OpScope timer(op);
    if (sp) tp().all_gather(in, out, rows_residual * hidden, elem_type_of<T>());
    else copy(out, in, rows * hidden);
  }
  template <class T>
  void enter_tp_backward(const OpHandle& op, T* grad_full, T* out) const {  // [rows, H] partial -> [rows_residual, H]
    OpScope timer(op);
    if (sp) {
      tp().reduce_scatter(grad_full, out, rows_residual * hidden, elem_type_of<T>());
    } else {
      tp().all_reduce_sum(grad_full, rows * hidden);
      copy(out, grad_full, rows * hidden);
    }
  }
  template <class T>
  void exit_tp_forward(const OpHandle& op, T* partial_full, T* out) const { enter_tp_backward(op, partial_full, out); }
  template <class T>
  void exit_tp_backward(const OpHandle& op, const T* in, T* out) const { enter_tp_forward(op, in, out); }
};

}  // namespace sixfold
