#pragma once
// The step simulator: plays one training step of the step program through a pipeline schedule on
// per-rank streams (compute, TP, CP, EP, PP, DP) and reports the step time, its breakdown, the
// memory timeline per stage and, optionally, every task for a Chrome trace.
//
// Symmetry: every rank of a pipeline stage does the same work (TP/CP/DP/EP peers run in lockstep),
// so one representative rank per stage is simulated; a 16384-GPU step costs as much as a p-GPU one.
//
// Two levels: simulate_pipeline() plays per-block costs given directly (tests craft uniform,
// communication-free pipelines with it); simulate_step() derives those costs from the step program
// with OpPricer and the overlap rules (simulator/overlap_rules.hpp) and calls it.
#include <vector>

#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/event_simulator.hpp"
#include "simulator/hardware_profile.hpp"
#include "models/pipeline_schedule.hpp"

namespace sixfold {

// One compute block: the ops of one virtual chunk for one micro-batch in one phase, on one rank.
// Its duration is the critical path of that op list: compute plus what communication leaves exposed.
// One block's cost (a chunk's forward, backward or weight-gradient pass): see op_list_cost.hpp.
using BlockCost = OpListCost;

struct ChunkInputs {
  BlockCost forward;
  BlockCost backward;      // without the weight-gradient GEMMs when the schedule splits them off
  BlockCost weight_grad;   // ZB-H1's W block (empty otherwise)
  Bytes activations = 0;   // saved per micro-batch (fragmentation included) until its backward ends
  Seconds reduction = 0;   // one gradient reduction (layer or bucket) of this chunk
  int reductions = 0;      // how many of them per gradient pass of this chunk (0: no DP traffic)
  Seconds reduction_copy = 0;  // compute-stream copies of a hand-written per-layer reduction (DpTraffic::flatten_copy)
  Seconds param_gather = 0;  // ZeRO-3: all-gather of this chunk's parameters before a forward block
  Seconds param_gather_backward = 0;  // and before a backward block (twice where recompute re-gathers)
  // FSDP2's copy-out of those gathers, on the compute stream in the block they feed (DpTraffic::gather_copy_out)
  Seconds gather_copy_out = 0, gather_copy_out_backward = 0;
  int layers = 1;            // transformer layers of the chunk (ZeRO-3 prefetches layer by layer)
};

struct StageInputs {
  std::vector<ChunkInputs> chunks;  // one per virtual chunk
  Seconds send = 0;                 // one activation or gradient send to a neighbour stage
  Seconds full_reduction = 0;       // dp_overlap none: the stage's whole gradient in one collective
  Seconds optimizer = 0;
  Seconds post_step_gather = 0;     // ZeRO-1/2: the exposed all-gather of the updated parameters after the step
  bool reduce_every_micro_batch = false;  // ZeRO-2/3; otherwise only the last micro-batch reduces
  bool gather_once = false;               // ZeRO-3 parameters gathered in the first forward and kept
  bool synchronous_dp = false;            // ZeRO-3 collectives and compute wait for each other (legacy DeepSpeed)
  Bytes static_memory = 0;          // model state, buffers, workspace: held the whole step
};

struct PipelineInputs {
  Schedule schedule = Schedule::OneFOneB;
  Count micro_batches = 1;
  int zero = 0;
  DpOverlap dp_overlap = DpOverlap::None;  // None: one reduction after the stage's last backward
  Link pp_link = Link::None, dp_link = Link::None;
  bool p2p_overlap = false;  // sends do not block the next block of their stage (p2p_overlapped)
  std::vector<StageInputs> stages;
  double overlap_slowdown = 0;  // HardwareProfile::overlap_slowdown: compute lost per second of hidden DP traffic
  bool record_tasks = true;  // keep the task list (for the trace); the benchmark turns it off
};

struct MemorySample {
  Seconds time = 0;
  Bytes bytes = 0;  // total on the stage's representative rank
};

struct StageSimulation {
  int stage = 0;
  Seconds compute = 0, recompute = 0, dispatch_overhead = 0;
  Seconds tp_comm = 0, cp_comm = 0, ep_comm = 0, pp_comm = 0, dp_comm = 0;  // exposed on this stage
  Seconds optimizer = 0;
  Seconds bubble = 0;           // idle compute stream within the step
  Seconds compute_end = 0;      // end of the stage's last compute block
  Bytes static_memory = 0;
  Bytes peak_memory = 0;
  Seconds peak_time = 0;
  double peak_in_flight = 0;    // micro-batches (in whole-stage units) holding activations at the peak
  std::vector<MemorySample> memory;  // after every change, in time order
};

struct SimulationResult {
  Seconds step_time = 0;
  TimeBreakdown breakdown;           // of the bottleneck stage (the busiest), like predict's
  int bottleneck_stage = 0;
  std::vector<StageSimulation> stages;
  std::vector<Task> tasks;           // every simulated task (empty unless record_tasks)
  std::vector<StageInputs> inputs;   // the block costs played (empty unless record_tasks; the trace uses them)
  Prediction prediction;             // predict's shape with the simulated time and memory
};

SimulationResult simulate_pipeline(const PipelineInputs& inputs);

// Derives the pipeline inputs of a layout from its step program (exposed for tests).
PipelineInputs pipeline_inputs(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& layout, const StepProgram& program);

// One training step of a layout, simulated. Assumes validate_layout passed. The planner's
// refinement and `sixfold validate --simulate` call this.
SimulationResult simulate_step(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& layout);
SimulationResult simulate_step(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                               const Layout& layout, const StepProgram& program, bool record_tasks = true);

}  // namespace sixfold
