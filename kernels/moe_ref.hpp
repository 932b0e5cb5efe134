#pragma once
// Reference of the mixture-of-experts router and token permutation (the router's per-token
// functions are shared with the device, host_device.hpp).
// Router (Mixtral, Qwen3-MoE): softmax over all experts, keep the top-k, renormalise the kept
// probabilities to sum 1. Ties go to the lower expert index so every backend agrees.
// Permutation: the (token, choice) assignments are stably sorted by expert, so that each expert
// sees a contiguous block of rows in token order (the layout of Megatron's token dispatcher).
#include "kernels/host_device.hpp"

namespace sixfold {

// logits [tokens, experts] -> expert_index, gate_weight [tokens, k], token t.
template <class T>
SIXFOLD_HD void topk_router_token(const T* logits, int experts, int k, int* expert_index, T* gate_weight, long t) {
  const T* row = logits + t * experts;
  int* idx = expert_index + t * k;
  for (int c = 0; c < k; ++c) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int p = 0; p < c; ++p) taken = taken || idx[p] == e;
      if (!taken && (best < 0 || row[e] > row[best])) best = e;
    }
    idx[c] = best;
  }
  // Softmax restricted to the kept experts equals the renormalised top-k of the full softmax.
  double max_logit = row[idx[0]];
  double sum = 0;
  for (int c = 0; c < k; ++c) sum += ::exp(double(row[idx[c]]) - max_logit);
  for (int c = 0; c < k; ++c) gate_weight[t * k + c] = T(::exp(double(row[idx[c]]) - max_logit) / sum);
}

// Gradient of the renormalised top-k gates w.r.t. the router logits (the selection itself is
// piecewise constant): dlogit[e_c] = g_c (dg_c - sum_c' g_c' dg_c'); other experts get 0.
template <class T>
SIXFOLD_HD void topk_router_backward_token(const T* dgate_weight, const int* expert_index, const T* gate_weight,
                                           T* dlogits, int experts, int k, long t) {
  T* drow = dlogits + t * experts;
  for (int e = 0; e < experts; ++e) drow[e] = T(0);
  double dot = 0;
  for (int c = 0; c < k; ++c) dot += double(gate_weight[t * k + c]) * dgate_weight[t * k + c];
  for (int c = 0; c < k; ++c) {
    const double g = gate_weight[t * k + c];
    drow[expert_index[t * k + c]] = T(g * (double(dgate_weight[t * k + c]) - dot));
  }
}

template <class T>
void topk_router_ref(const T* logits, int tokens, int experts, int k, int* expert_index, T* gate_weight) {
  for (int t = 0; t < tokens; ++t) topk_router_token(logits, experts, k, expert_index, gate_weight, t);
}

template <class T>
void topk_router_backward_ref(const T* dgate_weight, const int* expert_index, const T* gate_weight, T* dlogits,
                              int tokens, int experts, int k) {
  for (int t = 0; t < tokens; ++t)
    topk_router_backward_token(dgate_weight, expert_index, gate_weight, dlogits, experts, k, t);
}

// sorted_slot_of_assignment[t * k + c]: row of assignment (t, c) in the expert-sorted order;
// tokens_per_expert [experts]. Counting sort, using tokens_per_expert itself as the cursor.
inline void moe_permute_indices_ref(const int* expert_index, int tokens, int k, int experts,
                                    int* sorted_slot_of_assignment, int* tokens_per_expert) {
  const long n = long(tokens) * k;
  for (int e = 0; e < experts; ++e) tokens_per_expert[e] = 0;
  for (long a = 0; a < n; ++a) ++tokens_per_expert[expert_index[a]];
  int start = 0;  // exclusive prefix sums
  for (int e = 0; e < experts; ++e) {
    const int count = tokens_per_expert[e];
    tokens_per_expert[e] = start;
    start += count;
  }
  for (long a = 0; a < n; ++a) sorted_slot_of_assignment[a] = tokens_per_expert[expert_index[a]]++;
  // Now tokens_per_expert[e] is the end of block e; turn ends back into counts.
  for (int e = experts - 1; e > 0; --e) tokens_per_expert[e] -= tokens_per_expert[e - 1];
}

}  // namespace sixfold
