#pragma once
// The price of one op of the step program on one GPU of a hardware profile.
#include <array>

#include "models/step_program.hpp"
#include "simulator/collective_cost.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/kernel_tables.hpp"

namespace sixfold {

// The shortest a kernel runs on the GPU (launch latency on the device side; ~2-3 us on
// A100/H100 per NVIDIA's CUDA launch-latency figures). The host's dispatch time per op is the
// profile's kernel_overhead and bounds whole op lists (overlap::dispatch_bound).
inline constexpr Seconds kMinKernelTime = 2e-6;

// Everything op pricing needs, resolved once per layout (group placements, peak rate).
class OpPricer {
 public:
  // kernel: the flash-attention kernel attention ops run (attention_kernel_of(workload));
  // Default prices TransformerEngine's fused attention.
  OpPricer(const HardwareProfile& hw, const Layout& layout, Dtype dtype, AttentionKernel kernel = AttentionKernel::Default);
  // The pricer keeps a reference to the profile: a temporary one would dangle.
  OpPricer(HardwareProfile&&, const Layout&, Dtype, AttentionKernel = AttentionKernel::Default) = delete;
  // The pricer of a workload's ops: its dtype, attention kernel and EP overlap.
  static OpPricer of(const HardwareProfile& hw, const Layout& layout, const Workload& work);
  static OpPricer of(HardwareProfile&&, const Layout&, const Workload&) = delete;

  Seconds time(const Op& op) const;
  // grouped: the batch products have their own weights (MoE experts' grouped GEMM), each priced as
  // a GEMM of its own; otherwise one batched kernel, priced as one GEMM of batch x m rows.
  // high_precision: a bf16 GEMM of an fp8 run (Op::high_precision).
  Seconds gemm_time(Count m, Count n, Count k, Count batch, bool grouped = false, bool high_precision = false) const;
  Seconds attention_time(const Op& op) const;
  Seconds collective(Group g, Collective c, Bytes message) const;
  // An op's collective; an EP dispatch/combine with its routing (Op::routed_top_k) under DeepEP.
  Seconds collective(const Op& op) const;
  double gemm_efficiency(Count m, Count n, Count k, Count batch) const;
  const HardwareProfile& hardware() const { return hw_; }
  bool ep_overlap() const { return ep_overlap_; }
  const GroupPlacement& placement(Group g) const { return placements_[static_cast<int>(g)]; }

 private:
  const HardwareProfile& hw_;
  FlopsPerSec gemm_peak_;
  FlopsPerSec bf16_peak_;  // an fp8 run's high-precision GEMMs (Op::high_precision)
  double gemm_in_bytes_ = 2, gemm_out_bytes_ = 2;  // element widths of a GEMM's inputs and output
  FlopsPerSec attention_peak_;
  AttentionKernel attention_kernel_ = AttentionKernel::TeFused;
  bool ep_overlap_ = false;  // Workload::overlap_moe_ep_comm
  // Measured kernel prices of this GPU (kernel_tables_for), or null: then the profile's priors.
  const KernelTables* tables_ = nullptr;
  Dtype table_dtype_ = Dtype::BF16;  // the table a GEMM of the run's dtype is read from
  bool table_gemms_ = false;
  std::array<GroupPlacement, kGroupCount> placements_;
};

}  // namespace sixfold
