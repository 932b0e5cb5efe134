#include "executor/runtime/moe_runtime.hpp"

#include <string_view>

#include <numeric>

#include "kernels/moe_ref.hpp"

namespace sixfold {

namespace {

struct ExpertShape {
  int experts, local_experts, k, ep, ep_rank;
  long hidden, ffn;
  bool swiglu;
  bool squared_relu;  // the non-gated activation: squared ReLU, else GELU
};

ExpertShape shape_of(const ExecContext& ctx) {
  const auto& m = *ctx.model;
  const int ep = ctx.layout->ep;
  return {m.moe.num_experts, m.moe.num_experts / ep, m.moe.top_k, ep, ctx.groups->ep_rank, ctx.hidden,
          long(m.moe.expert_ffn), m.activation == Activation::SwiGLU, m.activation == Activation::SquaredReLU};
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

// The expert activation before its routing-probability weight: SwiGLU(gate, up), or GELU or
// squared ReLU of the gate.
template <class T>
void unweighted_activation(DeviceOps<T>& ops, const ExpertShape& s, const T* gate, const T* up, T* out, long n) {
  if (s.swiglu) ops.swiglu_forward(gate, up, out, n);
  else if (s.squared_relu) ops.squared_relu_forward(gate, out, n);
  else ops.gelu_forward(gate, out, n);
}

// Row indices of the (token, choice) assignments: their token (a / k), and themselves.
std::vector<int> token_of_assignment(long assignments, int k) {
  std::vector<int> t(assignments);
  for (long a = 0; a < assignments; ++a) t[a] = int(a / k);
  return t;
}
std::vector<int> identity(long n) {
  std::vector<int> i(n);
  std::iota(i.begin(), i.end(), 0);
  return i;
}

}  // namespace

template <class T>
struct MoeBlock<T>::State {
  const ExecContext& ctx;
  ExpertShape s;
  long rows;
  const T* x;
  MoeWeights<T> w;
  MoeSaved<T>& saved;
  MemoryCategory cat = MemoryCategory::Activations;
  T* out = nullptr;  // forward
  const T* dout = nullptr;  // backward
  MoeGrads<T> g{};
  T* dx = nullptr;
  bool dispatched = false, combined_ready = false;
  TrackedBuffer<T> logits{}, permuted{}, permuted_prob{}, expert_out{}, combined{};  // forward
  TrackedBuffer<T> d_rows{}, d_expert_out{}, d_expert_in{}, d_act{}, d_gate{}, d_up{}, act_u{}, d_prob{}, d_prob_rows{},
      dlogits{};  // backward

  long assignments() const { return rows * s.k; }
  long received() const { return saved.expert_in.size() / s.hidden; }
  // fn(j, row, n): the n rows from one EP peer for local expert j, starting at `row`.
  template <class Fn>
  void for_each_block(Fn fn) const {
    long row = 0;
    for (int peer = 0; peer < s.ep; ++peer)
      for (int j = 0; j < s.local_experts; ++j) {
        const long n = saved.recv_expert_rows[peer * s.local_experts + j];
        if (n == 0) continue;
        fn(j, row, n);
        row += n;
      }
  }

  // The tokens and their routing probabilities to the experts' ranks (ep_dispatch).
  void dispatch(const OpHandle& op) {
    MemoryTracker* mem = ctx.memory();
    const long H = s.hidden;
    saved.recv_expert_rows.assign(long(s.ep) * s.local_experts, 0);
    {
      OpScope timer(op);
      std::vector<long> counts_send(s.ep, s.local_experts), counts_recv(s.ep, s.local_experts);
      ctx.groups->ep->all_to_all_v(saved.tokens_per_expert.data(), counts_send.data(), saved.recv_expert_rows.data(),
                                   counts_recv.data(), ElemType::I32);
    }
    saved.recv_rows.assign(s.ep, 0);
    long received = 0;
    for (int peer = 0; peer < s.ep; ++peer) {
      for (int j = 0; j < s.local_experts; ++j) saved.recv_rows[peer] += saved.recv_expert_rows[peer * s.local_experts + j];
      received += saved.recv_rows[peer];
    }
    saved.expert_in.reset(mem, cat, received * H);
    exchange_rows(ctx, permuted.data(), saved.send_rows, saved.expert_in.data(), saved.recv_rows, op, H);
    // The routing probabilities travel with their tokens: as in Megatron-Core, each expert weights
    // its activation by them (weighted SwiGLU), so the combine is a plain sum and the backward needs
    // no expert outputs.
    saved.expert_prob.reset(mem, cat, received);
    exchange_rows(ctx, permuted_prob.data(), saved.send_rows, saved.expert_prob.data(), saved.recv_rows, op, 1);
    permuted.free();
    permuted_prob.free();
    dispatched = true;
  }
  // The experts' outputs back to their tokens' ranks (ep_combine).
  void combine(const OpHandle& op) {
    combined.reset(ctx.memory(), MemoryCategory::Buffers, assignments() * s.hidden);
    exchange_rows(ctx, expert_out.data(), saved.recv_rows, combined.data(), saved.send_rows, op, s.hidden);
    expert_out.free();
    combined_ready = true;
  }
  // Backward: the output gradient to the experts (the combine's backward).
  void combine_backward(const OpHandle& op) {
    d_expert_out.reset(ctx.memory(), MemoryCategory::Buffers, received() * s.hidden);
    exchange_rows(ctx, d_rows.data(), saved.send_rows, d_expert_out.data(), saved.recv_rows, op, s.hidden);
    combined_ready = true;
  }
  // Backward: the input and probability gradients back to the tokens (the dispatch's backward).
  void dispatch_backward(const OpHandle& op) {
    exchange_rows(ctx, d_expert_in.data(), saved.recv_rows, d_rows.data(), saved.send_rows, op, s.hidden);
    d_prob_rows.reset(ctx.memory(), MemoryCategory::Buffers, assignments());
    exchange_rows(ctx, d_prob.data(), saved.recv_rows, d_prob_rows.data(), saved.send_rows, op, 1);
    dispatched = true;
  }
};

template <class T>
MoeBlock<T>::MoeBlock(const ExecContext& ctx, long rows, const T* x, const MoeWeights<T>& w, T* out, MoeSaved<T>& saved,
                      MemoryCategory saved_category)
    : st_(new State{.ctx = ctx, .s = shape_of(ctx), .rows = rows, .x = x, .w = w, .saved = saved}) {
  st_->cat = saved_category;
  st_->out = out;
}

template <class T>
MoeBlock<T>::MoeBlock(const ExecContext& ctx, long rows, const T* x, const T* dout, const MoeWeights<T>& w,
                      const MoeGrads<T>& g, MoeSaved<T>& saved, T* dx)
    : st_(new State{.ctx = ctx, .s = shape_of(ctx), .rows = rows, .x = x, .w = w, .saved = saved}) {
  st_->dout = dout;
  st_->g = g;
  st_->dx = dx;
}

template <class T>
MoeBlock<T>::~MoeBlock() = default;

template <class T>
bool MoeBlock<T>::forward_op(OpCursor& ops, const Op& op) {
  State& p = *st_;
  const ExecContext& ctx = p.ctx;
  const ExpertShape& s = p.s;
  MoeSaved<T>& saved = p.saved;
  MemoryTracker* mem = ctx.memory();
  const long H = s.hidden, F = s.ffn, assignments = p.assignments();
  const std::string_view name = op.name;
  if (name == "router") {
    p.logits.reset(mem, MemoryCategory::Buffers, p.rows * s.experts);
    ctx.gemm(ops.take(op.name), false, false, p.rows, s.experts, H, p.x, p.w.router, T(0), p.logits.data());
  } else if (name == "moe_permute") {
    // The cost model prices the top-k with the permutation (the router op is its GEMM).
    OpScope timer(ops.take(op.name));
    saved.expert_index.assign(assignments, 0);
    saved.slot.assign(assignments, 0);
    saved.tokens_per_expert.assign(s.experts, 0);
    saved.gate_weight.reset(mem, p.cat, assignments);
    p.permuted.reset(mem, MemoryCategory::Buffers, assignments * H);
    p.permuted_prob.reset(mem, MemoryCategory::Buffers, assignments);
    DeviceOps<T>& ops = ctx.ops<T>();
    ops.topk_router(p.logits.data(), int(p.rows), s.experts, s.k, saved.expert_index.data(), saved.gate_weight.data());
    // The expert choices are the host's (it sizes the all-to-alls); the rows move on the device.
    moe_permute_indices_ref(saved.expert_index.data(), int(p.rows), s.k, s.experts, saved.slot.data(),
                            saved.tokens_per_expert.data());
    ops.copy_rows(p.x, token_of_assignment(assignments, s.k).data(), p.permuted.data(), saved.slot.data(), assignments, H);
    ops.copy_rows(saved.gate_weight.data(), identity(assignments).data(), p.permuted_prob.data(), saved.slot.data(),
                  assignments, 1);
    p.logits.free();
    // Row counts per EP peer.
    saved.send_rows.assign(s.ep, 0);
    for (int e = 0; e < s.experts; ++e) saved.send_rows[e / s.local_experts] += saved.tokens_per_expert[e];
  } else if (name == "ep_dispatch") {
    p.dispatch(ops.take(op.name));
  } else if (name == "expert_up") {
    if (!p.dispatched) p.dispatch(OpHandle{});  // ep = 1
    const OpHandle up = ops.take(op.name);
    const long received = p.received();
    saved.expert_gate.reset(mem, p.cat, received * F);
    if (s.swiglu) saved.expert_up.reset(mem, p.cat, received * F);
    saved.expert_act.reset(mem, p.cat, received * F);
    p.for_each_block([&](int j, long row, long n) {
      const T* in = saved.expert_in.data() + row * H;
      ctx.gemm(up, false, false, n, F, H, in, p.w.gate[j], T(0), saved.expert_gate.data() + row * F);
      if (s.swiglu) ctx.gemm(up, false, false, n, F, H, in, p.w.up[j], T(0), saved.expert_up.data() + row * F);
    });
  } else if (name == "expert_act") {
    OpScope timer(ops.take(op.name));
    p.for_each_block([&](int, long row, long n) {
      T* act = saved.expert_act.data() + row * F;
      unweighted_activation(ctx.ops<T>(), s, saved.expert_gate.data() + row * F,
                            s.swiglu ? saved.expert_up.data() + row * F : nullptr, act, n * F);
      ctx.ops<T>().scale_rows(act, saved.expert_prob.data() + row, n, F);
    });
  } else if (name == "expert_down") {
    const OpHandle down = ops.take(op.name);
    p.expert_out.reset(mem, MemoryCategory::Buffers, p.received() * H);
    p.for_each_block([&](int j, long row, long n) {
      ctx.gemm(down, false, false, n, H, F, saved.expert_act.data() + row * F, p.w.down[j], T(0),
               p.expert_out.data() + row * H);
    });
  } else if (name == "ep_combine") {
    p.combine(ops.take(op.name));
  } else if (name == "moe_unpermute") {
    if (!p.combined_ready) p.combine(OpHandle{});  // ep = 1
    OpScope timer(ops.take(op.name));
    ctx.ops<T>().sum_rows(p.combined.data(), saved.slot.data(), p.rows, s.k, H, p.out);
    p.combined.free();
  } else {
    return false;
  }
  return true;
}

template <class T>
bool MoeBlock<T>::backward_op(OpCursor& ops, const Op& op) {
  State& p = *st_;
  const ExecContext& ctx = p.ctx;
  const ExpertShape& s = p.s;
  MoeSaved<T>& saved = p.saved;
  MemoryTracker* mem = ctx.memory();
  const auto Bf = MemoryCategory::Buffers;
  const long H = s.hidden, F = s.ffn, assignments = p.assignments(), received = p.received();
  const std::string_view name = op.name;
  const bool wg = op.weight_grad;
  // Backward of each forward op, in the list's order: the gradients travel to the experts under
  // the combine's backward and back under the dispatch's.
  if (name == "moe_unpermute") {
    // The combine summed the expert outputs: each copy of a token's row gets the token's gradient.
    OpScope timer(ops.take(op.name));
    p.d_rows.reset(mem, Bf, assignments * H);
    ctx.ops<T>().copy_rows(p.dout, token_of_assignment(assignments, s.k).data(), p.d_rows.data(), saved.slot.data(),
                           assignments, H);
  } else if (name == "ep_combine") {
    p.combine_backward(ops.take(op.name));
  } else if (name == "expert_down") {
    if (!p.combined_ready) p.combine_backward(OpHandle{});  // ep = 1
    const OpHandle down = ops.take(op.name, wg);
    if (!wg) {
      p.d_act.reset(mem, Bf, received * F);
      p.for_each_block([&](int j, long row, long n) {
        ctx.gemm(down, false, true, n, F, H, p.d_expert_out.data() + row * H, p.w.down[j], T(0), p.d_act.data() + row * F);
      });
    } else {
      p.for_each_block([&](int j, long row, long n) {
        ctx.gemm(down, true, false, F, H, n, saved.expert_act.data() + row * F, p.d_expert_out.data() + row * H, T(1),
                 p.g.down[j]);
      });
    }
  } else if (name == "expert_act") {
    // The weighted activation p * act(x): dp = <d, act(x)> with act(x) re-run from its saved
    // input, and the unweighted activation's gradient p * d.
    OpScope timer(ops.take(op.name));
    p.d_gate.reset(mem, Bf, received * F);
    p.d_up.reset(mem, Bf, s.swiglu ? received * F : 0);
    p.act_u.reset(mem, Bf, received * F);
    p.d_prob.reset(mem, Bf, received);
    p.for_each_block([&](int, long row, long n) {
      T* da = p.d_act.data() + row * F;
      T* au = p.act_u.data() + row * F;
      const T* gate = saved.expert_gate.data() + row * F;
      const T* up = s.swiglu ? saved.expert_up.data() + row * F : nullptr;
      DeviceOps<T>& ops = ctx.ops<T>();
      unweighted_activation(ops, s, gate, up, au, n * F);
      ops.row_dot(da, au, p.d_prob.data() + row, n, F);
      ops.scale_rows(da, saved.expert_prob.data() + row, n, F);
      if (s.swiglu) ops.swiglu_backward(da, gate, up, p.d_gate.data() + row * F, p.d_up.data() + row * F, n * F);
      else if (s.squared_relu) ops.squared_relu_backward(da, gate, p.d_gate.data() + row * F, n * F);
      else ops.gelu_backward(da, gate, p.d_gate.data() + row * F, n * F);
    });
    p.act_u.free();
    p.d_act.free();
  } else if (name == "expert_up") {
    const OpHandle up = ops.take(op.name, wg);
    if (!wg) {
      p.d_expert_in.reset(mem, Bf, received * H);
      p.for_each_block([&](int j, long row, long n) {
        T* din = p.d_expert_in.data() + row * H;
        if (s.swiglu) ctx.gemm(up, false, true, n, H, F, p.d_up.data() + row * F, p.w.up[j], T(0), din);
        ctx.gemm(up, false, true, n, H, F, p.d_gate.data() + row * F, p.w.gate[j], T(s.swiglu ? 1 : 0), din);
      });
    } else {
      p.for_each_block([&](int j, long row, long n) {
        const T* in = saved.expert_in.data() + row * H;
        if (s.swiglu) ctx.gemm(up, true, false, H, F, n, in, p.d_up.data() + row * F, T(1), p.g.up[j]);
        ctx.gemm(up, true, false, H, F, n, in, p.d_gate.data() + row * F, T(1), p.g.gate[j]);
      });
    }
  } else if (name == "ep_dispatch") {
    p.dispatch_backward(ops.take(op.name));
  } else if (name == "moe_permute") {
    if (!p.dispatched) p.dispatch_backward(OpHandle{});  // ep = 1
    OpScope timer(ops.take(op.name));
    TrackedBuffer<T> dgate(mem, Bf, assignments);
    p.dlogits.reset(mem, Bf, p.rows * s.experts);
    DeviceOps<T>& ops = ctx.ops<T>();
    ops.copy_rows(p.d_prob_rows.data(), saved.slot.data(), dgate.data(), identity(assignments).data(), assignments, 1);
    ops.sum_rows(p.d_rows.data(), saved.slot.data(), p.rows, s.k, H, p.dx);
    ops.topk_router_backward(dgate.data(), saved.expert_index.data(), saved.gate_weight.data(), p.dlogits.data(),
                             int(p.rows), s.experts, s.k);
  } else if (name == "router") {
    if (!wg) ctx.gemm(ops.take(op.name), false, true, p.rows, H, s.experts, p.dlogits.data(), p.w.router, T(1), p.dx);
    else ctx.gemm(ops.take(op.name, true), true, false, H, s.experts, p.rows, p.x, p.dlogits.data(), T(1), p.g.router);
  } else {
    return false;
  }
  return true;
}

template class MoeBlock<float>;
template class MoeBlock<double>;

}  // namespace sixfold
