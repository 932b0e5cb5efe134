#pragma once
// What overlaps with what: the one place that says it, shared by the closed-form cost model
// and the step simulator (DESIGN.md, "Overlap is explicit").
#include <algorithm>
#include <cmath>

#include "common/units.hpp"
#include "models/layout.hpp"

namespace sixfold::overlap {

// Compute under a running collective is slower than alone: NCCL's channels each hold an SM, and
// the collective shares HBM and L2 with the kernels it hides behind (a 132-SM H100 GEMM sized for
// one wave needs a second wave when an all-gather holds 24 SMs). Lee et al. 2025 (arXiv
// 2507.03114) measured compute kernels 18.9% slower on average, 40% at most, while communication
// overlapped them (GPT and Llama layers on 4 A100 / H100). So a collective hidden behind compute
// is not free: each of its hidden seconds costs the compute `slowdown` seconds
// (HardwareProfile::overlap_slowdown). `total` is the collective time, `exposed` what of it the
// compute does not hide.
inline Seconds hiding_cost(Seconds total, Seconds exposed, double slowdown) {
  return slowdown * std::max(0.0, total - exposed);
}

// The time a collective adds to the step once its hiding cost is paid: the compute it hides
// behind (`window`) grows by that cost, and the longer window hides more of what was exposed.
// `exposed_of(window)` is one of the rules below. One fixed-point step, as the step simulator
// plays it (simulate_pipeline): the two predictors charge the same.
template <class Exposed>
Seconds with_hiding_cost(Seconds total, Seconds window, double slowdown, Exposed exposed_of) {
  const Seconds cost = hiding_cost(total, exposed_of(window), slowdown);
  return cost + exposed_of(window + cost);
}

// TP collectives run on the critical path unless TP comm overlap is on, in which case each hides
// behind the GEMM it is fused with, up to that GEMM's time (`hidable`: the sum over collectives of
// min(collective, its GEMM)).
inline Seconds exposed_tp(Seconds tp_comm, Seconds hidable, bool tp_overlap) {
  return tp_overlap ? std::max(0.0, tp_comm - hidable) : tp_comm;
}

// A transfer that runs alongside compute it does not wait for: what the compute cannot cover. The
// CP ring exchange beside the attention it feeds, an overlapped pipeline send beside the next
// chunk, an overlapped MoE all-to-all beside the other micro-batch's compute.
inline Seconds exposed_behind(Seconds transfer, Seconds compute) { return std::max(0.0, transfer - compute); }

// Gradient reduction of one stage after its last micro-batch's backward (DDP skips the
// reduction on earlier micro-batches). `chunks` reductions of comm_total/chunks each are issued
// as their layers finish; each needs chunk_time seconds on the wire. With none, nothing overlaps.
// Pipelined producer/consumer: the last chunk ends max(chunk_time, total - window*(chunks-1)/chunks)
// after the backward ends.
inline Seconds exposed_grad_reduction(DpOverlap mode, Seconds comm_total, Seconds backward_window, int chunks) {
  if (comm_total <= 0) return 0;
  if (mode == DpOverlap::None || chunks <= 1) return comm_total;
  const double c = chunks;
  return std::max(comm_total / c, comm_total - backward_window * (c - 1) / c);
}

// ZeRO-3 parameter all-gathers are prefetched one layer ahead: only the first layer's gather and
// whatever exceeds the compute it hides behind are exposed.
inline Seconds exposed_param_gather(Seconds gather_total, Seconds compute, int layers) {
  if (gather_total <= 0) return 0;
  const double first = gather_total / std::max(1, layers);
  return first + std::max(0.0, gather_total - first - compute);
}

// ZeRO-3 backward: each layer's parameters are gathered again and its gradients reduce-scattered,
// both on the data-parallel link. Without DP overlap the reductions wait for the backward's end
// (only the prefetched gathers hide); with it, gathers and reductions stream behind the backward
// together, one layer at a time.
inline Seconds exposed_zero3_backward(DpOverlap mode, Seconds gather_total, Seconds reduce_total, Seconds backward,
                                      int layers) {
  if (mode == DpOverlap::None) return exposed_param_gather(gather_total, backward, layers) + reduce_total;
  // Each layer's gather runs ahead of its backward and its reduce-scatter after it, on streams of
  // their own (FSDP2): what the backward cannot cover is exposed. The last layer's
  // reduce-scatter overlaps the next micro-batch's forward; the step's very last one is exposed
  // once (zero3_step_tail).
  return std::max(0.0, gather_total + reduce_total - backward);
}

// The last micro-batch's last reduce-scatter, which nothing follows before the optimizer.
inline Seconds zero3_step_tail(Seconds reduce_total, int layers) { return reduce_total / std::max(1, layers); }

// Host dispatch (framework + launch) of an op list against its GPU time. `overlap` in [0, 1] is
// the share of the shorter of the two that hides behind the longer: 0 adds them, 1 is
// max(GPU, host). Neither end fits measured Megatron-DeepSpeed runs (vTrain): host-bound layers
// barely slow down when their GPU work doubles, yet the eager framework's synchronisations keep
// much of it from hiding; a fitted 0.62 gives 7.6% held-out MAPE against 11.8% additive
// (bench/RESULTS.md).
inline Seconds dispatch_bound(Seconds gpu_time, Seconds host_time, double overlap) {
  return gpu_time + host_time - overlap * std::min(gpu_time, host_time);
}

}  // namespace sixfold::overlap
