#include "simulator/op_list_cost.hpp"

#include <algorithm>

#include "models/pipeline_schedule.hpp"
#include "simulator/overlap_rules.hpp"

namespace sixfold {

void OpListCost::add(const OpListCost& o, double times) {
  compute += times * o.compute;
  recompute += times * o.recompute;
  weight_grad += times * o.weight_grad;
  tp_raw += times * o.tp_raw;
  tp_exposed += times * o.tp_exposed;
  cp_raw += times * o.cp_raw;
  cp_exposed += times * o.cp_exposed;
  ep += times * o.ep;
  overhead += times * o.overhead;
}

namespace {
// The host dispatch a list adds beyond its GPU time (overlap::dispatch_bound), on the GPU time as
// it stands: after pricing, and again once overlap_ep hides all-to-alls.
void set_dispatch_overhead(OpListCost& c, const HardwareProfile& hw) {
  c.overhead = 0;
  const Seconds gpu = c.duration();
  c.overhead = overlap::dispatch_bound(gpu, c.host, hw.dispatch_overlap) - gpu;
}
}  // namespace

OpListCost price_op_list(const std::vector<Op>& ops, size_t recompute_ops, const OpPricer& pricer, bool tp_overlap,
                         OpSelection selection) {
  OpListCost c;
  Seconds pending_ring = 0;
  int priced = 0;
  // TP overlap fuses each collective with one GEMM (TransformerEngine's userbuffers and PyTorch's
  // async TP both split the GEMM that consumes an all-gather, or produces a reduce-scatter, into
  // chunks that run while the next chunk moves): the all-gather hides behind the GEMM right after
  // it, the reduce-scatter or all-reduce behind the GEMM right before it. Walking the list once:
  // the previous op's GEMM time, and an all-gather waiting for the next op.
  // Each pair is pipelined in chunks (Op::overlap_chunks, FrameworkTraits::tp_overlap_rs_chunks):
  // the first chunk of an all-gather's GEMM (the local shard) and the last of a reduce-scatter's
  // GEMM have nothing to hide, so at most (n-1)/n of the GEMM runs under the transfer; where the
  // last chunk's reduce-scatter follows the GEMM, 1/n of the transfer is always exposed; where the
  // partials are summed after the exchange (PyTorch's async TP), that pass is exposed too.
  Seconds tp_hidable = 0, previous_gemm = 0, waiting_gather = 0, partial_sums = 0;
  int waiting_chunks = 0;
  auto pipelined_share = [](int chunks) { return chunks >= 2 ? double(chunks - 1) / chunks : 1.0; };
  // The backward of ring attention comes out of the reversed op list as the attention's backward
  // followed by the exchange of K, V and dK, dV; both frameworks run that exchange step by step
  // under the backward's blocks (TransformerEngine's AttnFuncWithCPAndKVP2P.backward, torch's
  // _templated_ring_attention_backward), so it hides behind the attention backward before it.
  Seconds ring_backward_partner = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (runs_nothing(op)) continue;  // no partner, and it parts no pair
    const bool compute = op.kind == OpKind::Gemm || op.kind == OpKind::Attention || op.kind == OpKind::Memory;
    if ((selection == OpSelection::OnlyWeightGrad && !(compute && op.weight_grad)) ||
        (selection == OpSelection::WithoutWeightGrad && compute && op.weight_grad)) {
      previous_gemm = waiting_gather = 0;  // a left-out op is no partner
      continue;
    }
    const Seconds dt = pricer.time(op);
    const Seconds gemm = op.kind == OpKind::Gemm ? dt : 0;
    tp_hidable += std::min(waiting_gather, gemm * pipelined_share(waiting_chunks));
    waiting_gather = 0;
    priced += op.kernels;
    const Seconds partner = ring_backward_partner;
    ring_backward_partner = compute && op.backward && op.overlaps_previous ? dt : 0;
    if (compute) {
      c.compute += dt;
      if (i < recompute_ops) c.recompute += dt;
      if (op.weight_grad) c.weight_grad += dt;
      // A CP ring exchange runs alongside the attention that follows it.
      if (pending_ring > 0) {
        if (op.overlaps_previous) {
          c.cp_exposed += overlap::with_hiding_cost(pending_ring, dt, pricer.hardware().overlap_slowdown,
                                                    [&](Seconds w) { return overlap::exposed_behind(pending_ring, w); });
        } else {
          c.cp_exposed += pending_ring;
        }
        pending_ring = 0;
      }
    } else if (op.group == Group::TP) {
      c.tp_raw += dt;
      if (op.tp_overlappable && op.collective == Collective::AllGather) {
        waiting_gather = dt;
        waiting_chunks = op.overlap_chunks;
      } else if (op.tp_overlappable && previous_gemm > 0) {
        const double share = pipelined_share(op.overlap_chunks);
        tp_hidable += std::min(op.overlap_tail ? dt * share : dt, previous_gemm * share);
        if (tp_overlap && op.overlap_local_sum) {
          // Read the tp partials of this rank's shard (the unsharded output), write the shard.
          Op sum;
          sum.name = "tp_partial_sum";
          sum.kind = OpKind::Memory;
          sum.bytes = op.message * (1.0 + 1.0 / std::max(1, op.group_size));
          partial_sums += pricer.time(sum);
          ++priced;
        }
      }
    } else if (op.group == Group::CP) {
      c.cp_raw += dt;
      if (op.backward && partner > 0) {
        c.cp_exposed += overlap::with_hiding_cost(dt, partner, pricer.hardware().overlap_slowdown,
                                                  [&](Seconds w) { return overlap::exposed_behind(dt, w); });
      } else {
        pending_ring += dt;
      }
    } else {
      c.ep += dt;
      if (op.group == Group::EP && op.collective == Collective::AllToAll) {
        if (c.ep_all_to_alls < 2) c.ep_all_to_all[c.ep_all_to_alls] = dt;
        ++c.ep_all_to_alls;
      }
    }
    if (compute) c.ep_segment[std::min(c.ep_all_to_alls, 2)] += dt;
    previous_gemm = gemm;
  }
  c.cp_exposed += pending_ring;
  const HardwareProfile& hw = pricer.hardware();
  c.tp_exposed = overlap::with_hiding_cost(c.tp_raw, tp_hidable, hw.overlap_slowdown, [&](Seconds w) {
    return overlap::exposed_tp(c.tp_raw, w, tp_overlap);
  }) + partial_sums;
  c.host = priced * hw.kernel_overhead;
  set_dispatch_overhead(c, hw);
  return c;
}



double ep_overlap_unpaired_share(const Layout& l, Count micro_batches) {
  const Count m = std::max<Count>(1, micro_batches);
  const int v = l.schedule == Schedule::Interleaved ? std::max(1, l.vpp) : 1;
  const Count alone = std::max<Count>(1, warmup_forwards(l.schedule, l.pp, v, m, 0));
  return std::min(1.0, double(alone) / double(m * v));
}

void overlap_ep(OpListCost& f, OpListCost& b, const OpPricer& pricer, double unpaired) {
  if (!pricer.ep_overlap()) return;
  const Seconds f_alone = f.ep, b_alone = b.ep;
  const double slowdown = pricer.hardware().overlap_slowdown;
  auto exposed = [&](Seconds transfer, Seconds window) {
    return overlap::with_hiding_cost(transfer, window, slowdown,
                                     [&](Seconds w) { return overlap::exposed_behind(transfer, w); });
  };
  if (f.ep_all_to_alls == 2 && b.ep_all_to_alls == 2) {
    // Each list's other EP collectives (expert-TP) stay where they were.
    const Seconds f_other = f.ep - f.ep_all_to_all[0] - f.ep_all_to_all[1];
    const Seconds b_other = b.ep - b.ep_all_to_all[0] - b.ep_all_to_all[1];
    // Forward: dispatch, combine; backward (reversed): the combine's gradient, then the dispatch's.
    f.ep = f_other + exposed(f.ep_all_to_all[0], b.ep_segment[1]) + exposed(f.ep_all_to_all[1], b.ep_segment[2]);
    b.ep = b_other + exposed(b.ep_all_to_all[0], f.ep_segment[0]) + exposed(b.ep_all_to_all[1], f.ep_segment[1]);
  } else {
    for (OpListCost* c : {&f, &b})
      if (c->ep > 0) c->ep = exposed(c->ep, c->compute);
  }
  f.ep = unpaired * f_alone + (1 - unpaired) * f.ep;
  b.ep = unpaired * b_alone + (1 - unpaired) * b.ep;
  set_dispatch_overhead(f, pricer.hardware());
  set_dispatch_overhead(b, pricer.hardware());
}

}  // namespace sixfold
