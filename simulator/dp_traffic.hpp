#pragma once
// Data-parallel traffic of one pipeline stage (gradient reductions, ZeRO gathers) as the
// framework issues it: how many collectives, each priced on its group. The closed form and the
// step simulator both take it from here, so they price the same traffic and differ only in when
// it runs.
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
  Seconds reductions_time() const { return reductions * reduction; }
};

DpTraffic dp_traffic(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout,
                     const StageProgram& stage);

}  // namespace sixfold
