#include "executor/runtime/ring_attention.hpp"

#include <cmath>


namespace sixfold {

namespace {
constexpr int kForwardTag = 11, kBackwardTag = 12;

// Sends `send` to the next CP rank and receives the previous rank's block into `recv`.
template <class T>
void ring_shift(const ExecContext& ctx, const OpHandle& op, TrackedBuffer<T>& send, TrackedBuffer<T>& recv, int tag) {
  Communicator& cp = *ctx.groups->cp;
  const int next = (cp.rank() + 1) % cp.size(), prev = (cp.rank() + cp.size() - 1) % cp.size();
  OpScope timer(op);
  cp.send(send.data(), send.size(), elem_type_of<T>(), next, tag);
  cp.recv(recv.data(), recv.size(), elem_type_of<T>(), prev, tag);
  cp.wait_sends();
  std::swap(send, recv);
}
}  // namespace

template <class T>
void ring_attention_forward(const ExecContext& ctx, const OpHandle& attention, const OpHandle& exchange, const T* q, const T* k, const T* v, T* out, T* lse) {
  const int cp = ctx.layout->cp, me = ctx.groups->me.cp;
  const int S = ctx.seq_local, hl = ctx.heads_local, kvl = ctx.kv_heads_local, d = ctx.head_dim;
  const long kv_numel = ctx.rows * kvl * d;
  const T scale = T(1.0 / std::sqrt(double(d)));
  // kv = [k | v] travels the ring.
  DeviceOps<T>& ops = ctx.ops<T>();
  TrackedBuffer<T> kv(ctx.memory(), MemoryCategory::Buffers, 2 * kv_numel), incoming;
  ctx.copy(kv.data(), k, kv_numel);
  ctx.copy(kv.data() + kv_numel, v, kv_numel);
  if (cp > 1) incoming.reset(ctx.memory(), MemoryCategory::Buffers, 2 * kv_numel);
  TrackedBuffer<T> part, part_lse;
  if (cp > 1) {
    part.reset(ctx.memory(), MemoryCategory::Buffers, ctx.rows * hl * d);
    part_lse.reset(ctx.memory(), MemoryCategory::Buffers, long(ctx.micro_batch) * hl * S);
  }
  const std::vector<int> q_pos = ctx.cp_positions(me);
  for (int step = 0; step < cp; ++step) {
    const int source = (me - step + cp) % cp;
    const std::vector<int> k_pos = ctx.cp_positions(source);
    OpScope timer(attention);
    for (int b = 0; b < ctx.micro_batch; ++b) {
      const long qo = long(b) * S * hl * d, ko = long(b) * S * kvl * d, lo = long(b) * hl * S;
      T* o = step == 0 ? out + qo : part.data() + qo;
      T* l = step == 0 ? lse + lo : part_lse.data() + lo;
      ops.attention_forward(q + qo, kv.data() + ko, kv.data() + kv_numel + ko, o, l, q_pos.data(), k_pos.data(), S, S,
                            hl, kvl, d, scale);
      if (step > 0) ops.merge_attention_partial(out + qo, lse + lo, o, l, S, hl, d);
    }
    if (step + 1 < cp) ring_shift(ctx, exchange, kv, incoming, kForwardTag);
  }
}

template <class T>
void ring_attention_backward(const ExecContext& ctx, const OpHandle& attention, const OpHandle& exchange, const T* dout, const T* q, const T* k, const T* v,
                             const T* out, const T* lse, T* dq, T* dk, T* dv) {
  const int cp = ctx.layout->cp, me = ctx.groups->me.cp;
  const int S = ctx.seq_local, hl = ctx.heads_local, kvl = ctx.kv_heads_local, d = ctx.head_dim;
  const long kv_numel = ctx.rows * kvl * d, q_numel = ctx.rows * hl * d;
  const T scale = T(1.0 / std::sqrt(double(d)));
  // [k | v | dk | dv] travels the ring; after cp shifts the gradients are back with their owner.
  DeviceOps<T>& ops = ctx.ops<T>();
  TrackedBuffer<T> buf(ctx.memory(), MemoryCategory::Buffers, 4 * kv_numel), incoming;
  ctx.copy(buf.data(), k, kv_numel);
  ctx.copy(buf.data() + kv_numel, v, kv_numel);
  if (cp > 1) incoming.reset(ctx.memory(), MemoryCategory::Buffers, 4 * kv_numel);
  TrackedBuffer<T> dq_part(ctx.memory(), MemoryCategory::Buffers, q_numel);
  ctx.backend->storage().zero(dq, std::size_t(q_numel) * sizeof(T));
  const std::vector<int> q_pos = ctx.cp_positions(me);
  for (int step = 0; step < cp; ++step) {
    const int source = (me - step + cp) % cp;
    const std::vector<int> k_pos = ctx.cp_positions(source);
    {
      OpScope timer(attention);
      T* kb = buf.data();
      T* vb = kb + kv_numel;
      T* dkb = vb + kv_numel;
      T* dvb = dkb + kv_numel;
      for (int b = 0; b < ctx.micro_batch; ++b) {
        const long qo = long(b) * S * hl * d, ko = long(b) * S * kvl * d, lo = long(b) * hl * S;
        ops.attention_backward(dout + qo, q + qo, kb + ko, vb + ko, out + qo, lse + lo, dq_part.data() + qo, dkb + ko,
                               dvb + ko, q_pos.data(), k_pos.data(), S, S, hl, kvl, d, scale);
      }
      ops.add(dq, dq_part.data(), q_numel);
    }
    if (cp > 1) ring_shift(ctx, exchange, buf, incoming, kBackwardTag);
  }
  ctx.copy(dk, buf.data() + 2 * kv_numel, kv_numel);
  ctx.copy(dv, buf.data() + 3 * kv_numel, kv_numel);
}

template void ring_attention_forward<float>(const ExecContext&, const OpHandle&, const OpHandle&, const float*, const float*, const float*, float*,
                                            float*);
template void ring_attention_forward<double>(const ExecContext&, const OpHandle&, const OpHandle&, const double*, const double*, const double*, double*,
                                             double*);
template void ring_attention_backward<float>(const ExecContext&, const OpHandle&, const OpHandle&, const float*, const float*, const float*, const float*,
                                             const float*, const float*, float*, float*, float*);
template void ring_attention_backward<double>(const ExecContext&, const OpHandle&, const OpHandle&, const double*, const double*, const double*,
                                              const double*, const double*, const double*, double*, double*, double*);

}  // namespace sixfold
