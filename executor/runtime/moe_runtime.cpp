#include "executor/runtime/moe_runtime.hpp"

#include "kernels/activation_ref.hpp"
#include "kernels/moe_ref.hpp"

namespace sixfold {

namespace {

struct ExpertShape {
  int experts, local_experts, k, ep, ep_rank;
  long hidden, ffn;
  bool swiglu;
};

ExpertShape shape_of(const ExecContext& ctx) {
  const auto& m = *ctx.model;
  const int ep = ctx.layout->ep;
  return {m.moe.num_experts, m.moe.num_experts / ep, m.moe.top_k, ep, ctx.groups->ep_rank, ctx.hidden,
          long(m.moe.expert_ffn), m.activation == Activation::SwiGLU};
}

// Exchanges row blocks over the EP group: block i of `send` (send_rows[i] rows of width H) to
// rank i; receives recv_rows[i] rows from rank i.
// `width` values a row (the hidden size for tokens, 1 for routing probabilities).
template <class T>
void exchange_rows(const ExecContext& ctx, const T* send, const std::vector<long>& send_rows, T* recv,
                   const std::vector<long>& recv_rows, const OpHandle& op, long width) {
  OpScope timer(op);
  std::vector<long> sc(send_rows.size()), rc(recv_rows.size());
  for (size_t i = 0; i < sc.size(); ++i) {
    sc[i] = send_rows[i] * width;
    rc[i] = recv_rows[i] * width;
  }
  ctx.groups->ep->all_to_all_v(send, sc.data(), recv, rc.data(), elem_type_of<T>());
}

// The expert activation before its routing-probability weight: SwiGLU(gate, up) or GELU(gate).
template <class T>
void unweighted_activation(const ExpertShape& s, const T* gate, const T* up, T* out, long n) {
  if (s.swiglu) swiglu_forward_ref(gate, up, out, n);
  else gelu_forward_ref(gate, out, n);
}

}  // namespace

template <class T>
void moe_forward(const ExecContext& ctx, OpCursor& ops, long rows, const T* x, const MoeWeights<T>& w, T* out,
                 MoeSaved<T>& saved, MemoryCategory saved_category) {
  const ExpertShape s = shape_of(ctx);
  const OpHandle router = ops.take("router"), permute = ops.take("moe_permute"),
                 dispatch = ops.take_collective("ep_dispatch"), up_op = ops.take("expert_up"),
                 act_op = ops.take("expert_act"), down_op = ops.take("expert_down"),
                 combine = ops.take_collective("ep_combine"), unpermute = ops.take("moe_unpermute");
  const long H = s.hidden, F = s.ffn, assignments = rows * s.k;
  MemoryTracker* mem = ctx.memory();
  // Router.
  TrackedBuffer<T> logits(mem, MemoryCategory::Buffers, rows * s.experts);
  ctx.gemm(router, false, false, rows, s.experts, H, x, w.router, T(0), logits.data());
  saved.expert_index.assign(assignments, 0);
  saved.slot.assign(assignments, 0);
  saved.tokens_per_expert.assign(s.experts, 0);
  saved.gate_weight.reset(mem, saved_category, assignments);
  TrackedBuffer<T> permuted(mem, MemoryCategory::Buffers, assignments * H), permuted_prob(mem, MemoryCategory::Buffers, assignments);
  {
    // The cost model prices the top-k with the permutation (the router op is its GEMM).
    OpScope timer(permute);
    topk_router_ref(logits.data(), int(rows), s.experts, s.k, saved.expert_index.data(), saved.gate_weight.data());
    moe_permute_indices_ref(saved.expert_index.data(), int(rows), s.k, s.experts, saved.slot.data(),
                            saved.tokens_per_expert.data());
    for (long a = 0; a < assignments; ++a) {
      std::copy_n(x + (a / s.k) * H, H, permuted.data() + saved.slot[a] * H);
      permuted_prob[saved.slot[a]] = saved.gate_weight[a];
    }
  }
  // Row counts per EP peer, and per (peer, local expert) for the expert side.
  saved.send_rows.assign(s.ep, 0);
  for (int e = 0; e < s.experts; ++e) saved.send_rows[e / s.local_experts] += saved.tokens_per_expert[e];
  saved.recv_expert_rows.assign(long(s.ep) * s.local_experts, 0);
  {
    OpScope timer(dispatch);
    std::vector<long> counts_send(s.ep, s.local_experts), counts_recv(s.ep, s.local_experts);
    ctx.groups->ep->all_to_all_v(saved.tokens_per_expert.data(), counts_send.data(), saved.recv_expert_rows.data(),
                                 counts_recv.data(), ElemType::I32);
  }
  saved.recv_rows.assign(s.ep, 0);
  long received = 0;
  for (int g = 0; g < s.ep; ++g) {
    for (int j = 0; j < s.local_experts; ++j) saved.recv_rows[g] += saved.recv_expert_rows[g * s.local_experts + j];
    received += saved.recv_rows[g];
  }
  saved.expert_in.reset(mem, saved_category, received * H);
  exchange_rows(ctx, permuted.data(), saved.send_rows, saved.expert_in.data(), saved.recv_rows, dispatch, H);
  // The routing probabilities travel with their tokens: as in Megatron-Core, each expert weights
  // its activation by them (weighted SwiGLU), so the combine is a plain sum and the backward needs
  // no expert outputs.
  saved.expert_prob.reset(mem, saved_category, received);
  exchange_rows(ctx, permuted_prob.data(), saved.send_rows, saved.expert_prob.data(), saved.recv_rows, dispatch, 1);
  // Experts, block by block: rows from peer g for local expert j.
  saved.expert_gate.reset(mem, saved_category, received * F);
  if (s.swiglu) saved.expert_up.reset(mem, saved_category, received * F);
  saved.expert_act.reset(mem, saved_category, received * F);
  TrackedBuffer<T> expert_out(mem, MemoryCategory::Buffers, received * H);
  long row = 0;
  for (int g = 0; g < s.ep; ++g) {
    for (int j = 0; j < s.local_experts; ++j) {
      const long n = saved.recv_expert_rows[g * s.local_experts + j];
      if (n == 0) continue;
      const T* in = saved.expert_in.data() + row * H;
      T* gate = saved.expert_gate.data() + row * F;
      T* act = saved.expert_act.data() + row * F;
      ctx.gemm(up_op, false, false, n, F, H, in, w.gate[j], T(0), gate);
      T* up = s.swiglu ? saved.expert_up.data() + row * F : nullptr;
      if (s.swiglu) ctx.gemm(up_op, false, false, n, F, H, in, w.up[j], T(0), up);
      {
        OpScope timer(act_op);
        unweighted_activation(s, gate, up, act, n * F);
        for (long r = 0; r < n; ++r)
          for (long f = 0; f < F; ++f) act[r * F + f] *= saved.expert_prob[row + r];
      }
      ctx.gemm(down_op, false, false, n, H, F, act, w.down[j], T(0), expert_out.data() + row * H);
      row += n;
    }
  }
  TrackedBuffer<T> combined(mem, MemoryCategory::Buffers, assignments * H);
  exchange_rows(ctx, expert_out.data(), saved.recv_rows, combined.data(), saved.send_rows, combine, H);
  OpScope timer(unpermute);
  for (long t = 0; t < rows; ++t) {
    T* o = out + t * H;
    std::fill(o, o + H, T(0));
    for (int c = 0; c < s.k; ++c) {
      const T* y = combined.data() + saved.slot[t * s.k + c] * H;
      for (long i = 0; i < H; ++i) o[i] += y[i];
    }
  }
}

template <class T>
void moe_backward(const ExecContext& ctx, OpCursor& ops, long rows, const T* x, const T* dout, const MoeWeights<T>& w,
                  const MoeGrads<T>& g, MoeSaved<T>& saved, T* dx) {
  const ExpertShape s = shape_of(ctx);
  const long H = s.hidden, F = s.ffn, assignments = rows * s.k;
  MemoryTracker* mem = ctx.memory();
  // Backward of each forward op, in reverse: the gradients travel to the experts under the
  // combine's backward and back under the dispatch's.
  const OpHandle unpermute = ops.take("moe_unpermute"), combine = ops.take_collective("ep_combine"),
                 down_op = ops.take("expert_down"), down_w = ops.take("expert_down", true), act_op = ops.take("expert_act"),
                 up_op = ops.take("expert_up"), up_w = ops.take("expert_up", true),
                 dispatch = ops.take_collective("ep_dispatch"), permute = ops.take("moe_permute"),
                 router = ops.take("router"), router_w = ops.take("router", true);
  // The combine summed the expert outputs: each copy of a token's row gets the token's gradient.
  TrackedBuffer<T> d_rows(mem, MemoryCategory::Buffers, assignments * H), dgate(mem, MemoryCategory::Buffers, assignments);
  {
    OpScope timer(unpermute);
    for (long a = 0; a < assignments; ++a) std::copy_n(dout + (a / s.k) * H, H, d_rows.data() + saved.slot[a] * H);
  }
  const long received = saved.expert_in.size() / H;
  TrackedBuffer<T> d_expert_out(mem, MemoryCategory::Buffers, received * H), d_expert_in(mem, MemoryCategory::Buffers, received * H);
  exchange_rows(ctx, d_rows.data(), saved.send_rows, d_expert_out.data(), saved.recv_rows, combine, H);
  TrackedBuffer<T> d_act(mem, MemoryCategory::Buffers, received * F), d_gate(mem, MemoryCategory::Buffers, received * F),
      d_up(mem, MemoryCategory::Buffers, s.swiglu ? received * F : 0), act_u(mem, MemoryCategory::Buffers, received * F),
      d_prob(mem, MemoryCategory::Buffers, received);
  long row = 0;
  for (int gpeer = 0; gpeer < s.ep; ++gpeer) {
    for (int j = 0; j < s.local_experts; ++j) {
      const long n = saved.recv_expert_rows[gpeer * s.local_experts + j];
      if (n == 0) continue;
      const T* in = saved.expert_in.data() + row * H;
      const T* dy = d_expert_out.data() + row * H;
      T* da = d_act.data() + row * F;
      T* dg = d_gate.data() + row * F;
      ctx.gemm(down_op, false, true, n, F, H, dy, w.down[j], T(0), da);
      ctx.gemm(down_w, true, false, F, H, n, saved.expert_act.data() + row * F, dy, T(1), g.down[j]);
      T* du = s.swiglu ? d_up.data() + row * F : nullptr;
      {
        // The weighted activation p * act(x): dp = <d, act(x)> with act(x) re-run from its saved
        // input, and the unweighted activation's gradient p * d.
        OpScope timer(act_op);
        T* au = act_u.data() + row * F;
        unweighted_activation(s, saved.expert_gate.data() + row * F, s.swiglu ? saved.expert_up.data() + row * F : nullptr,
                              au, n * F);
        for (long r = 0; r < n; ++r) {
          double dot = 0;
          const T p = saved.expert_prob[row + r];
          for (long f = 0; f < F; ++f) {
            dot += double(da[r * F + f]) * au[r * F + f];
            da[r * F + f] *= p;
          }
          d_prob[row + r] = T(dot);
        }
        if (s.swiglu) swiglu_backward_ref(da, saved.expert_gate.data() + row * F, saved.expert_up.data() + row * F, dg, du, n * F);
        else gelu_backward_ref(da, saved.expert_gate.data() + row * F, dg, n * F);
      }
      if (s.swiglu) {
        ctx.gemm(up_w, true, false, H, F, n, in, du, T(1), g.up[j]);
        ctx.gemm(up_op, false, true, n, H, F, du, w.up[j], T(0), d_expert_in.data() + row * H);
        ctx.gemm(up_op, false, true, n, H, F, dg, w.gate[j], T(1), d_expert_in.data() + row * H);
      } else {
        ctx.gemm(up_op, false, true, n, H, F, dg, w.gate[j], T(0), d_expert_in.data() + row * H);
      }
      ctx.gemm(up_w, true, false, H, F, n, in, dg, T(1), g.gate[j]);
      row += n;
    }
  }
  exchange_rows(ctx, d_expert_in.data(), saved.recv_rows, d_rows.data(), saved.send_rows, dispatch, H);
  TrackedBuffer<T> d_prob_rows(mem, MemoryCategory::Buffers, assignments);
  exchange_rows(ctx, d_prob.data(), saved.recv_rows, d_prob_rows.data(), saved.send_rows, dispatch, 1);
  TrackedBuffer<T> dlogits(mem, MemoryCategory::Buffers, rows * s.experts);
  {
    OpScope timer(permute);
    for (long a = 0; a < assignments; ++a) dgate[a] = d_prob_rows[saved.slot[a]];
    for (long t = 0; t < rows; ++t) std::fill(dx + t * H, dx + (t + 1) * H, T(0));
    for (long a = 0; a < assignments; ++a) {
      const T* dr = d_rows.data() + saved.slot[a] * H;
      T* d = dx + (a / s.k) * H;
      for (long i = 0; i < H; ++i) d[i] += dr[i];
    }
    topk_router_backward_ref(dgate.data(), saved.expert_index.data(), saved.gate_weight.data(), dlogits.data(), int(rows),
                             s.experts, s.k);
  }
  ctx.gemm(router_w, true, false, H, s.experts, rows, x, dlogits.data(), T(1), g.router);
  ctx.gemm(router, false, true, rows, H, s.experts, dlogits.data(), w.router, T(1), dx);
}

template void moe_forward<float>(const ExecContext&, OpCursor&, long, const float*, const MoeWeights<float>&, float*, MoeSaved<float>&,
                                 MemoryCategory);
template void moe_forward<double>(const ExecContext&, OpCursor&, long, const double*, const MoeWeights<double>&, double*,
                                  MoeSaved<double>&, MemoryCategory);
template void moe_backward<float>(const ExecContext&, OpCursor&, long, const float*, const float*, const MoeWeights<float>&,
                                  const MoeGrads<float>&, MoeSaved<float>&, float*);
template void moe_backward<double>(const ExecContext&, OpCursor&, long, const double*, const double*, const MoeWeights<double>&,
                                   const MoeGrads<double>&, MoeSaved<double>&, double*);

}  // namespace sixfold
