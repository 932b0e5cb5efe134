#pragma once
// The closed-form cost model: per-GPU memory by component and step time by component for a
// model, a hardware profile and a layout. Fast enough for the planner (microseconds per layout).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "models/step_program.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/memory_model.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/op_cost.hpp"

namespace sixfold {

// One pipeline stage's time for one micro-batch, split by what the time is spent on.
struct StageTime {
  Seconds forward = 0, backward = 0;           // critical-path time per micro-batch (exposed comm included)
  Seconds compute = 0;                          // per micro-batch, forward + backward, recompute included
  Seconds recompute = 0;
  Seconds weight_grad = 0;                      // the backward's weight-gradient GEMMs (ZB-H1 defers them)
  Seconds tp = 0, cp = 0, ep = 0, pp = 0;       // exposed communication per micro-batch
  Seconds overhead = 0;                         // host dispatch time beyond the GPU's, per micro-batch
  Seconds gather_copy_out = 0;                  // FSDP2's copy-out of its gathers, per micro-batch (part of compute)
  Seconds dp = 0;                               // exposed gradient reduction / ZeRO traffic per step
  Seconds post_step_gather = 0;                 // ZeRO-1/2: the exposed gather of the updated parameters (in dp)
  Seconds optimizer = 0;                        // per step
};

struct TimeBreakdown {
  Seconds compute = 0;    // bottleneck stage, all micro-batches, recompute included
  Seconds recompute = 0;  // part of compute
  Seconds dispatch_overhead = 0;  // the host launching slower than the GPU runs (small ops)
  Seconds tp_comm = 0, cp_comm = 0, ep_comm = 0, pp_comm = 0, dp_comm = 0;
  Seconds bubble = 0;
  Seconds optimizer = 0;
  Seconds step = 0;
  std::vector<std::pair<std::string, Seconds>> components() const;
};

struct Prediction {
  Seconds step_time = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_model_per_gpu = 0;  // Megatron convention: model FLOPs, full (non-causal) attention
  double tflops_hw_per_gpu = 0;     // the same with recomputed FLOPs counted
  double mfu = 0;                   // tflops_model / peak of the dtype
  Bytes peak_memory = 0;
  int peak_stage = 0;
  MemoryBreakdown memory;                   // of the peak stage
  std::vector<MemoryBreakdown> stage_memory;
  TimeBreakdown time;
  std::vector<StageTime> stage_time;
  // Compute time per op class (gemm, attention, norm, elementwise, router, permute, embedding,
  // loss) of the bottleneck stage over the whole step, recompute included: what the executor
  // measures per class, for predicted-against-measured reports.
  std::vector<std::pair<std::string, Seconds>> compute_by_op_class;
  Count micro_batches = 0;
};

// FLOPs of one optimizer step for the whole model, Megatron's convention (Narayanan et al. 2021,
// appendix): 3 x forward, forward = 2 x tokens x matmul parameters + full attention; recompute
// adds a forward (full) or the attention core (selective).
struct StepFlops {
  Flops model = 0;
  Flops hardware = 0;
  // Model FLOPs counting causal attention at half its score and value FLOPs, the convention of
  // NeMo 2 / Megatron-Bridge's flops calculators (causal_self_attn); `model` counts them whole, as
  // Megatron-LM's num_floating_point_operations and Narayanan et al. do.
  Flops causal_model = 0;
};
// recomputed_fraction: the share of transformer layers full recompute re-runs (block recompute
// re-runs some; fully_recomputed_layers / layers).
StepFlops step_flops(const ModelSpec& model, const Workload& work, Recompute recompute, double recomputed_fraction = 1.0);
StepFlops step_flops(const ModelSpec& model, const Workload& work, const Layout& layout);

// What a run needs to run at all: the largest stage's live tensors plus what lives outside
// PyTorch's allocator. On an allocation failure the caching allocator frees its cached blocks and
// retries (CUDACachingAllocator.cpp, release_cached_blocks before raising OOM), so the reserved-
// but-free share of fragmentation slows a run (cudaMalloc retries) without stopping it.
Bytes memory_needed_to_run(const Prediction& p);
// Whether the run fits the GPU: with its cache (reserved) too, only by the allocator freeing its
// cache and retrying (slower than priced), or not at all.
enum class MemoryFit { Fits, AllocatorRetries, OutOfMemory };
MemoryFit memory_fit(const Prediction& p, const HardwareProfile& hw);
std::string to_string(MemoryFit f);  // fits | allocator_retries | out_of_memory

// Fills the throughput figures (tokens/s, TFLOP/s, MFU) of a prediction from its step time.
void set_throughput(Prediction& p, const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                    const Layout& layout);

// Prices one layout. Assumes validate_layout passed.
Prediction predict(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout);
// The same from an already expanded program (the simulator and the planner reuse it).
Prediction predict(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout,
                   const StepProgram& program);

// Memory alone (the planner prunes on it before pricing time).
std::vector<MemoryBreakdown> predict_memory(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                            const Layout& layout, const StepProgram& program);

// Per-stage, per-micro-batch times, as the simulator needs them.
std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& layout, const StepProgram& program);

// One transformer layer's priced op lists, dense and MoE, forward and backward, and each stage's
// embedding and head op lists. They depend on the program and the layout's groups only, not on its ZeRO stage, DP overlap or schedule: the planner
// prices them once per program and hands them to every variant's stage_times.
struct LayerListCosts {
  // By layer kind (ProgramParts::layer, LayerRun::kind): dense, MoE and, under partial recompute,
  // their twins that keep their activations. A kind the program lacks stays empty.
  std::array<OpListCost, ProgramParts::kLayerKinds> forward, backward;
};
struct LayerOpCosts : LayerListCosts {
  // A stage's embedding (pre) and head/loss/MTP (post) op lists, forward and backward; they
  // depend on the stage's place only (first, last: ProgramParts::edge_index).
  struct Edges {
    OpListCost pre_forward, post_forward, post_backward, pre_backward;
  };
  std::array<Edges, 4> by_place;
  const Edges& edges(const StageProgram& st) const { return by_place[ProgramParts::edge_index(st.first, st.last)]; }
};
LayerOpCosts layer_costs(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout,
                       const StepProgram& program);
// The two parts alone, for a search that reuses them: the layer lists are the same for every
// layout of one layer shape (same_program_parts) and tp_overlap; a stage's edges also depend on
// whether it is the first and the last stage.
LayerListCosts layer_list_costs(const ModelSpec& model, const OpPricer& pricer, const Layout& layout,
                                const StepProgram& program);
LayerOpCosts::Edges edge_costs(const OpPricer& pricer, const Layout& layout, const StageProgram& stage);
std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& layout, const StepProgram& program, const LayerOpCosts& layers);
// The same with the layout's pricer (OpPricer::of) already built and, where given, each stage's
// DP traffic (dp_traffic_by_stage; a search reuses it across layouts with same_dp_traffic).
std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& layout, const StepProgram& program, const OpPricer& pricer,
                                   const LayerOpCosts& layers, const std::vector<DpTraffic>* dp = nullptr);
// One micro-batch's forward and backward of each stage, summed op by op (its layers and edges):
// what the variants of one program (ZeRO stage, DP overlap, schedule) share.
struct StageOps {
  OpListCost forward, backward;
};
std::vector<StageOps> stage_ops(const StepProgram& program, const LayerOpCosts& layers);
// The same from a program's stage_ops.
std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& layout, const StepProgram& program, const OpPricer& pricer,
                                   const std::vector<StageOps>& ops, const std::vector<DpTraffic>* dp = nullptr);

// Pipeline time of all micro-batches for the schedule (bubble included), closed form.
Seconds pipeline_time(const Layout& layout, Count micro_batches, const std::vector<StageTime>& stages);

}  // namespace sixfold
