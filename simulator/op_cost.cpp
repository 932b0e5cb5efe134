#include "simulator/op_cost.hpp"

#include <algorithm>
#include <cmath>

namespace sixfold {

OpPricer::OpPricer(const HardwareProfile& hw, const Layout& layout, Dtype dtype, AttentionKernel kernel) : hw_(hw) {
  attention_kernel_ = kernel == AttentionKernel::Default ? AttentionKernel::TeFused : kernel;
  gemm_peak_ = hw.peak(dtype);
  bf16_peak_ = hw.peak(Dtype::BF16);
  gemm_in_bytes_ = double(bytes_per_element(dtype));
  gemm_out_bytes_ = dtype == Dtype::FP8 ? 2.0 : gemm_in_bytes_;  // fp8 GEMMs write bf16
  // Attention kernels run in bf16/fp16 even in fp8 training (TransformerEngine default).
  attention_peak_ = dtype == Dtype::FP8 ? hw.peak(Dtype::BF16) : gemm_peak_;
  for (int g = 0; g < kGroupCount; ++g) placements_[g] = place_group(static_cast<Group>(g), layout, hw.scale_up_gpus());
  // GEMMs and attention from the measured tables of this GPU where they exist (docs/kernel-tables.md).
  // fp16 runs on the same tensor-core rate as bf16 on A100/H100/H200 (their datasheets give one
  // figure for both), so it reads the bf16 table; fp32/tf32 GEMMs have no table.
  tables_ = hw.use_kernel_tables ? kernel_tables_for(hw.name) : nullptr;
  table_dtype_ = dtype == Dtype::FP16 ? Dtype::BF16 : dtype;
  table_gemms_ = tables_ && (table_dtype_ == Dtype::BF16 || table_dtype_ == Dtype::FP8);
}

OpPricer OpPricer::of(const HardwareProfile& hw, const Layout& layout, const Workload& work) {
  OpPricer p(hw, layout, work.dtype, attention_kernel_of(work));
  p.ep_overlap_ = work.overlap_moe_ep_comm;
  return p;
}

double OpPricer::gemm_efficiency(Count m, Count n, Count k, Count batch) const {
  const auto& e = hw_.gemm;
  auto s = [&](Count x) { return double(x) / (double(x) + e.half_dim); };
  double eff = e.max_efficiency * s(m) * s(n) * s(k);
  // Wave quantisation: output tiles are spread over the SMs in whole waves.
  if (hw_.sm_count > 0 && e.tile > 0) {
    const double tiles = std::ceil(double(m) / e.tile) * std::ceil(double(n) / e.tile) * double(batch);
    const double waves = std::ceil(tiles / hw_.sm_count);
    eff *= tiles / (waves * hw_.sm_count);
  }
  return std::max(eff, 1e-3);
}

Seconds OpPricer::gemm_time(Count m, Count n, Count k, Count batch, bool grouped, bool high_precision) const {
  if (grouped && batch > 1) return double(batch) * gemm_time(m, n, k, 1, false, high_precision);
  const Flops f = 2.0 * double(m) * double(n) * double(k) * double(batch);
  // An fp8 run's bf16 GEMM reads the bf16 table at the bf16 rate; any other run's dtype is its own.
  const bool bf16 = high_precision && table_dtype_ == Dtype::FP8;
  const Dtype dtype = bf16 ? Dtype::BF16 : table_dtype_;
  const FlopsPerSec peak = bf16 ? bf16_peak_ : gemm_peak_;
  const double in_bytes = bf16 ? 2.0 : gemm_in_bytes_, out_bytes = bf16 ? 2.0 : gemm_out_bytes_;
  // Roofline: a GEMM also has to read its inputs and write its output once.
  const Bytes traffic = double(batch) * ((double(m) * double(k) + double(k) * double(n)) * in_bytes +
                                         double(m) * double(n) * out_bytes);
  const Seconds memory = traffic / (hw_.memory_bandwidth * hw_.memory_efficiency);
  // A batched GEMM (attention scores and values) as one of batch x m rows: the same FLOPs and
  // a comparable occupancy of the GPU. Outside the measured grid the table holds the edge's FLOP
  // rate, so the roofline still bounds it.
  if (table_gemms_)
    if (auto t = tables_->gemm_time(dtype, m * std::max<Count>(1, batch), n, k)) {
      Seconds measured = *t;
      // The fp8 table times TensorRT-LLM's FP8 Linear, which quantizes its bf16 input on every call:
      // the collector loads no input scale (collector/trtllm/collect_gemm.py), so
      // FP8QDQLinearMethod.apply runs quantize_e4m3_per_tensor (an amax pass, then the cast: read
      // 2 + 2, write 1 byte per element of the m x k input; two kernels) before the GEMM. The step program prices
      // training's own casts (Op::cast_bytes, TransformerEngine's); here the GEMM alone, never below
      // its tensor-core time.
      if (dtype == Dtype::FP8) {
        const Seconds quantize = 2 * kMinKernelTime + 5.0 * double(m) * double(std::max<Count>(1, batch)) * double(k) /
                                                      (hw_.memory_bandwidth * hw_.memory_efficiency);
        measured = std::max(measured - quantize, f / peak);
      }
      return std::max({kMinKernelTime, measured * hw_.kernel_slowdown, memory});
    }
  return std::max({kMinKernelTime, f / (peak * gemm_efficiency(m, n, k, batch)), memory});
}

// Flash attention of op.m query tokens in sequences of op.n, op.batch heads of dim op.k, causal
// (the step program's attention; a CP rank's share of a sequence runs at the whole sequence's
// rate). op.flops is the forward's, or 2.5x it for the backward.
Seconds OpPricer::attention_time(const Op& op) const {
  const Count seq = std::max<Count>(1, op.n);
  if (tables_) {
    // The forward's FLOP rate over the backward's, measured on one kernel (kernel tables'
    // training_attention); without it, the same rate for both.
    const double ratio = tables_->training_attention().forward_backward_rate_ratio > 0
                             ? tables_->training_attention().forward_backward_rate_ratio
                             : 1.0;
    // FlashAttention 1.x and 2: the kernel's own measured forward+backward rate R, split so that
    // a forward and its backward (2.5x the FLOPs) take 3.5 x forward FLOPs / R together and the
    // forward runs `ratio` times the backward's rate.
    if (attention_kernel_ == AttentionKernel::Flash1 || attention_kernel_ == AttentionKernel::Flash2) {
      if (auto r = tables_->training_attention_rate(attention_kernel_, true, op.k, seq)) {
        const FlopsPerSec backward = *r * (1.0 / ratio + 2.5) / 3.5;
        const FlopsPerSec rate = op.backward ? backward : ratio * backward;
        return std::max(kMinKernelTime, op.flops / rate * hw_.kernel_slowdown);
      }
    }
    // TransformerEngine's fused attention (cuDNN on Hopper and later, within 1-8% of
    // FlashAttention-3 in the FlashAttention-3 paper's charts; FlashAttention-2 on Ampere), and
    // any kernel this GPU has no training measurement of: the measured inference forward of this
    // GPU's best flash kernel (FA3 on Hopper, vLLM's FA2 on A100, TRT-LLM's FMHA on Blackwell),
    // its backward `ratio` times slower per FLOP.
    const Count sequences = std::max<Count>(1, op.m / seq);
    if (auto t = tables_->attention_forward_time(sequences, seq, op.batch, op.batch, op.k, true)) {
      const double forward_flops = 2.0 * double(sequences) * double(seq) * (double(seq) / 2.0) * double(op.batch) * 2.0 * double(op.k);
      return std::max(kMinKernelTime, *t * op.flops / forward_flops * (op.backward ? ratio : 1.0) * hw_.kernel_slowdown);
    }
  }
  // Flash attention reaches a calibrated share of peak, lower for short head dims.
  const double head = double(op.k) / (double(op.k) + 32.0) / (128.0 / 160.0);
  const double eff = hw_.attention_efficiency * std::min(1.0, head);
  return std::max(kMinKernelTime, op.flops / (attention_peak_ * eff));
}

Seconds OpPricer::collective(Group g, Collective c, Bytes message) const {
  return collective_time(c, message, placement(g), hw_);
}

Seconds OpPricer::collective(const Op& op) const {
  if (op.routed_top_k <= 0) return collective(op.group, op.collective, op.message);
  const GroupPlacement& where = placement(op.group);
  const double share = node_deduplicated_share(op.routed_top_k, op.routed_experts, where);
  return collective_time(op.collective, op.message, where, hw_, where.crosses_nodes ? share : -1);
}

Seconds OpPricer::time(const Op& op) const {
  switch (op.kind) {
    case OpKind::Gemm:
      return gemm_time(op.m, op.n, op.k, op.batch, op.grouped, op.high_precision) +
             op.cast_bytes / (hw_.memory_bandwidth * hw_.memory_efficiency);
    case OpKind::Attention: return attention_time(op);
    case OpKind::Memory:  // at least one launch for each kernel the op runs; none where it runs none
      if (runs_nothing(op)) return 0;
      return std::max(double(std::max(1, op.kernels)) * kMinKernelTime,
                      op.bytes / (hw_.memory_bandwidth * hw_.memory_efficiency));
    case OpKind::Collective:
    case OpKind::PointToPoint: return collective(op);
  }
  return 0;
}

}  // namespace sixfold
