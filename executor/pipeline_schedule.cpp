#include "executor/pipeline_schedule.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace sixfold {

std::vector<PipelineAction> pipeline_actions(Schedule schedule, int pp, int vpp, int stage, int micro_batches) {
  std::vector<PipelineAction> actions;
  const int M = micro_batches;
  // One stage without interleaving runs forward then backward per micro-batch (Megatron's
  // forward_backward_no_pipelining), except under GPipe, which holds every micro-batch.
  if (pp == 1 && vpp == 1 && schedule != Schedule::GPipe) schedule = Schedule::OneFOneB;
  if (schedule == Schedule::GPipe || (pp == 1 && vpp > 1)) {
    for (int v = 0; v < vpp; ++v)
      for (int m = 0; m < M; ++m) actions.push_back({true, m, v});
    for (int v = vpp - 1; v >= 0; --v)
      for (int m = 0; m < M; ++m) actions.push_back({false, m, v});
    if (vpp > 1) {  // forwards ordered by micro-batch then chunk, backwards the reverse
      actions.clear();
      for (int m = 0; m < M; ++m)
        for (int v = 0; v < vpp; ++v) actions.push_back({true, m, v});
      for (int m = 0; m < M; ++m)
        for (int v = vpp - 1; v >= 0; --v) actions.push_back({false, m, v});
    }
    return actions;
  }
  if (schedule == Schedule::OneFOneB) {
    const int warmup = std::min(pp - stage - 1, M);
    int f = 0, b = 0;
    for (; f < warmup; ++f) actions.push_back({true, f, 0});
    for (; f < M; ++f, ++b) {
      actions.push_back({true, f, 0});
      actions.push_back({false, b, 0});
    }
    for (; b < M; ++b) actions.push_back({false, b, 0});
    return actions;
  }
  if (schedule == Schedule::Interleaved) {
    if (M % pp != 0)
      throw UsageError("interleaved schedule needs micro-batches divisible by pp (" + std::to_string(M) + ", pp " +
                       std::to_string(pp) + ")");
    const int total = M * vpp;
    auto micro_batch_of = [&](int k) { return (k / (pp * vpp)) * pp + k % pp; };
    auto chunk_of = [&](int k, bool forward) {
      const int c = (k % (pp * vpp)) / pp;
      return forward ? c : vpp - 1 - c;
    };
    const int warmup = std::min((pp - stage - 1) * 2 + (vpp - 1) * pp, total);
    int f = 0, b = 0;
    for (; f < warmup; ++f) actions.push_back({true, micro_batch_of(f), chunk_of(f, true)});
    for (; f < total; ++f, ++b) {
      actions.push_back({true, micro_batch_of(f), chunk_of(f, true)});
      actions.push_back({false, micro_batch_of(b), chunk_of(b, false)});
    }
    for (; b < total; ++b) actions.push_back({false, micro_batch_of(b), chunk_of(b, false)});
    return actions;
  }
  throw UsageError("the executor runs the gpipe, 1f1b and interleaved schedules, not " + to_string(schedule));
}

}  // namespace sixfold
