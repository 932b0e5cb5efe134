#pragma once
// Causal GQA attention of one micro-batch over the context-parallel group, as ring attention
// (Liu et al. 2023): each CP rank keeps its queries and passes its keys/values around the ring,
// merging partial results through the log-sum-exp. With cp = 1 it is plain attention.
// Tokens are load-balanced for the causal mask (rank i holds chunks i and 2cp-1-i).
// Shapes: q [rows, heads_local, d], k/v [rows, kv_heads_local, d], out like q,
// lse [micro_batch, heads_local, seq_local]. The attention blocks are timed under `attention`, the
// ring's exchanges under `exchange` (the step program's flash_attention and cp_kv_exchange).
#include "executor/runtime/exec_context.hpp"

namespace sixfold {

template <class T>
void ring_attention_forward(const ExecContext& ctx, const OpHandle& attention, const OpHandle& exchange, const T* q, const T* k, const T* v, T* out, T* lse);

// dq is written; dk and dv are written (not accumulated).
template <class T>
void ring_attention_backward(const ExecContext& ctx, const OpHandle& attention, const OpHandle& exchange, const T* dout, const T* q, const T* k, const T* v,
                             const T* out, const T* lse, T* dq, T* dk, T* dv);

}  // namespace sixfold
