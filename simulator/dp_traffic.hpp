#pragma once
// Data-parallel work of one pipeline stage as the framework issues it: the gradient reductions,
// the ZeRO gathers and the optimizer step, as ops of the step (dp_ops: what `predict --ops` lists
// under part "dp" and the executor times under the same ids), and their prices (dp_traffic: how
// many collectives, each priced on its group). The closed form and the step simulator both take
// them from here, so they price the same traffic and differ only in when it runs.
#include <vector>

#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

// What a DP op does in the step.
// Zero3CopyOut: FSDP2's copy of each gathered parameter out of the all-gather buffer, a memory
// op on the compute stream after each ZeRO-3 gather (FrameworkTraits::zero3_copies_out_gathers).
enum class DpRole { Reduction, ParamGather, Zero3Gather, Zero3CopyOut, Optimizer };

struct DpOp {
  Op op;                      // a collective (message: one collective's bytes) or the optimizer (memory: its traffic)
  DpRole role = DpRole::Reduction;
  // Over the expert-data group; else over op.group: the dense gradient group (dp x cp, a hybrid
  // shard group dp_shard x cp) or, for the replicas' all-reduce of hybrid sharding, DPReplica.
  bool expert = false;
  Count per_step = 0;         // how many run in one step
  bool list_collective = false;  // through PyTorch's list form: a copy per rank (zero3_list_collectives)
};

// How the framework issues a stage's DP collectives: how many per pass and when.
struct DpSchedule {
  int reductions = 1;              // collectives per gradient pass: layers, DDP buckets or DeepSpeed buckets
  int gathers = 0;                 // ZeRO-3 parameter all-gathers per pass (per layer or per tensor)
  int backward_gather_passes = 1;  // ZeRO-3: 2 where the recomputed forward gathers again (DeepSpeed)
  bool synchronous = false;        // ZeRO-3 collectives wait for the GPU: none overlaps compute
  bool reduce_every_micro_batch = false;  // ZeRO-2/3 reduce each micro-batch's gradients
  bool gather_once = false;               // ZeRO-3 parameters kept gathered through the step (torchtitan under PP)
};

// The stage's DP ops, one entry per kind of collective (and group) with how many run per step. A
// collective over a group of one rank is left out; the optimizer step is always there.
struct DpOps : DpSchedule {
  std::vector<DpOp> ops;
};

DpOps dp_ops(const ModelSpec& model, const Workload& work, const Layout& layout, const StageProgram& stage,
             Count micro_batches);
// One of the op's runs, alone: a collective on its group, the optimizer at the memory bandwidth
// with its launches and the step's fixed host cost.
Seconds dp_op_time(const DpOp& op, const Layout& layout, const HardwareProfile& hw);

// The prices of a stage's DP ops, with the schedule they run on.
struct DpTraffic : DpSchedule {
  Seconds full_reduction = 0;  // the stage's gradients in one collective (dp_overlap none)
  Seconds reduction = 0;       // one of the `reductions`
  Seconds gather_pass = 0;     // ZeRO-3: all of one pass's gathers (forward, and again in backward)
  Seconds param_gather = 0;    // ZeRO-1/2: the updated parameters gathered once after the step
  // Host time of one pass's per-tensor fetches (DeepSpeed's ZeRO-3 module hooks), spent on the
  // compute stream's critical path: the hook waits for its gather before the module runs.
  Seconds fetch_host = 0;
  // FSDP2's copy-out of one pass's gathered parameters, on the compute stream (Zero3CopyOut ops).
  Seconds gather_copy_out = 0;
  // Per-layer reduction by hand (a backward hook per layer, the seed paper's variant): the layer's
  // gradient tensors are flattened into one buffer for the collective and the result copied back,
  // two extra read+write passes over the gradients on the compute stream, per gradient pass. DDP's
  // buckets are views of the gradients (gradient_as_bucket_view) and FSDP's flat parameters own
  // their gradient buffer: neither copies, so this is 0 for them and for ZeRO-3.
  Seconds flatten_copy = 0;
  // AdamW over this rank's shard (the optimizer op of dp_ops).
  Seconds optimizer = 0;
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

// Host time of one tensor copy that ProcessGroupNCCL issues from C++ for a list collective (ATen
// dispatch, a stream guard and cudaLaunchKernel), and of the Python view DeepSpeed makes for that
// rank's part. A prior, not a measurement: CUDA's launch latency is 2-3 us (kMinKernelTime) and
// an eager copy's dispatch and the view add about as much again.
inline constexpr Seconds kListCollectiveHostPerRank = 5e-6;

// What a list collective (DpOp::list_collective) costs beyond the collective itself: a copy per
// rank launched from the host, and the copies' memory traffic on the GPU (an all-gather: the
// zero-filled buffer written, then read and written again out of NCCL's flat buffer; a
// reduce-scatter: read and written into the flat buffer).
Seconds list_collective_extra(const DpOp& op, const HardwareProfile& hw);

DpTraffic dp_traffic(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout,
                     const StageProgram& stage);
// Every stage's, identical stages priced once.
std::vector<DpTraffic> dp_traffic_by_stage(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                           const Layout& layout, const StepProgram& program);
// Whether two layouts have the same DP traffic for the same stages: the fields dp_traffic reads.
bool same_dp_traffic(const Layout& a, const Layout& b);

}  // namespace sixfold
