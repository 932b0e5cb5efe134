#pragma once
// Data-parallel traffic of one pipeline stage (gradient reductions, ZeRO gathers) as the
// framework issues it: how many collectives, each priced on its group. The closed form and the
// step simulator both take it from here, so they price the same traffic and differ only in when
// it runs.
#include <vector>

#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct DpTraffic {
  Seconds full_reduction = 0;  // the stage's gradients in one collective (dp_overlap none)
  int reductions = 1;          // collectives per gradient pass: layers, DDP buckets or DeepSpeed buckets
  Seconds reduction = 0;       // one of them
  int gathers = 0;             // ZeRO-3 parameter all-gathers per pass (per layer or per tensor)
  Seconds gather_pass = 0;     // ZeRO-3: all of one pass's gathers (forward, and again in backward)
  int backward_gather_passes = 1;  // ZeRO-3: 2 where the recomputed forward gathers again (DeepSpeed)
  bool synchronous = false;        // ZeRO-3 collectives wait for the GPU: none overlaps compute
  Seconds param_gather = 0;    // ZeRO-1/2: the updated parameters gathered once after the step
  bool reduce_every_micro_batch = false;  // ZeRO-2/3 reduce each micro-batch's gradients
  bool gather_once = false;               // ZeRO-3 parameters kept gathered through the step (torchtitan under PP)
  // Host time of one pass's per-tensor fetches (DeepSpeed's ZeRO-3 module hooks), spent on the
  // compute stream's critical path: the hook waits for its gather before the module runs.
  Seconds fetch_host = 0;
  // Per-layer reduction by hand (a backward hook per layer, the seed paper's variant): the layer's
  // gradient tensors are flattened into one buffer for the collective and the result copied back,
  // two extra read+write passes over the gradients on the compute stream, per gradient pass. DDP's
  // buckets are views of the gradients (gradient_as_bucket_view) and FSDP's flat parameters own
  // their gradient buffer: neither copies, so this is 0 for them and for ZeRO-3.
  Seconds flatten_copy = 0;
  Seconds reductions_time() const { return reductions * reduction; }
};

// Host operations of one ZeRO-3 parameter fetch in DeepSpeed, each priced at the profile's
// kernel_overhead: allocating the gathered buffer, launching the all-gather, recording and
// waiting on its completion (partition_parameters.py _all_gather_params, AllGatherHandle.wait;
// PartitionedParameterCoordinator.fetch_sub_module). A prior counted from that code, not a fit:
// DeepSpeed's own work on coalescing these fetches (PR #6649, "reduce many hooks") reports 40%
// faster steps on host-sensitive devices, and issue #5047 traces ZeRO-3's slowness to too many
// small all-gathers.
inline constexpr int kZero3FetchHostOps = 4;

DpTraffic dp_traffic(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout,
                     const StageProgram& stage);
// Every stage's, identical stages priced once.
std::vector<DpTraffic> dp_traffic_by_stage(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                           const Layout& layout, const StepProgram& program);
// Whether two layouts have the same DP traffic for the same stages: the fields dp_traffic reads.
bool same_dp_traffic(const Layout& a, const Layout& b);

}  // namespace sixfold
