#include "executor/runtime/run.hpp"

#include <algorithm>
#include <chrono>

#include "common/error.hpp"
#include "executor/comm/emulated_communicator.hpp"
#include "executor/runtime/measured_op_class.hpp"
#include "executor/runtime/measured_trace.hpp"
#include "executor/runtime/model_runtime.hpp"
#include "executor/runtime/program_ops.hpp"
#include "executor/runtime/process_groups.hpp"
#ifdef SIXFOLD_HAVE_CUDA
#include "executor/backend/cuda/cuda_backend.hpp"
#include "kernels/cuda_kernels.hpp"
#endif

namespace sixfold {

Precision parse_precision(const std::string& s) {
  if (s == "float32" || s == "fp32") return Precision::Float32;
  if (s == "float64" || s == "fp64") return Precision::Float64;
  throw UsageError("unknown precision '" + s + "' (allowed: float32, float64)");
}

std::string to_string(Precision p) { return p == Precision::Float64 ? "float64" : "float32"; }

namespace {

template <class T>
void train(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options,
           Backend& backend, ProcessGroups& groups, std::shared_ptr<const RankProgram> program, RunReport& report) {
  TrainingHyperparameters hp;
  hp.lr = options.lr;
  ModelRuntime<T> runtime(model, layout, work, groups, backend, options.seed, hp, std::move(program));
  for (int step = 0; step < options.steps; ++step) {
    // The ops' times leave out the first (warm-up) step, as the median step time does.
    if (step == 1) report.warmup_op_times = backend.op_times();
    backend.op_events().clear();
    const auto start = std::chrono::steady_clock::now();
    report.losses.push_back(runtime.train_step(step));
    report.step_times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // The events point to the program's op ids; the report keeps its own copies.
  for (const OpEvent& e : backend.op_events()) report.last_step_ops.push_back({e.name, e.start, e.end, e.depth, e.self});
}

// Refuses a backend this build or machine cannot run, with the reason, before any rank starts.
void check_backend_available(const std::string& backend) {
  if (backend == "cpu") return;
  if (backend == "cuda") {
#ifdef SIXFOLD_HAVE_CUDA
    if (cuda::device_count() == 0)
      throw UsageError("--backend cuda: no CUDA device is visible (no driver or no GPU; check nvidia-smi and "
                       "CUDA_VISIBLE_DEVICES); use --backend cpu");
    return;
#else
    throw UsageError("--backend cuda: this sixfold was built without CUDA (configure with -DSIXFOLD_WITH_CUDA=ON "
                     "where nvcc is found); use --backend cpu");
#endif
  }
  throw UsageError("unknown backend '" + backend + "' (allowed: cpu, cuda)");
}

std::unique_ptr<Backend> make_run_backend(const RunOptions& options, std::unique_ptr<Communicator> world) {
  check_backend_available(options.backend);
#ifdef SIXFOLD_HAVE_CUDA
  if (options.backend == "cuda") {
    CudaBackendOptions cuda_options;
    cuda_options.timeout_s = options.timeout_s;
    cuda_options.trace = !options.trace_path.empty();
    return make_cuda_backend(std::move(world), cuda_options);
  }
#endif
  return make_backend(options.backend, std::move(world));
}

// PATH, or PATH with ".rank<R>" before its extension when several ranks write one each.
std::string trace_path_of_rank(const std::string& path, int rank, int world_size) {
  if (world_size == 1) return path;
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  const std::string suffix = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

}  // namespace

RunReport run_plan(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options) {
  check_backend_available(options.backend);
  if (options.steps < 1) throw UsageError("--steps must be at least 1 (got " + std::to_string(options.steps) + ")");
  if (layout.recompute == Recompute::SelectiveOp)
    throw UsageError("the executor runs recompute none, selective or full; selective-op (torchtitan's op-level "
                     "checkpointing) is priced by the cost model only");
  const int launched = launched_world_size();
  if (options.emulate_rank >= 0) {
    if (launched != 1)
      throw UsageError("--emulate-rank runs one rank of the layout in one process; start it without mpirun (" +
                       std::to_string(launched) + " ranks were launched)");
    return run_plan_on(model, layout, work, options, make_emulated_world(layout, options.emulate_rank));
  }
  if (launched != layout.gpus())
    throw UsageError("the layout needs dp*tp*pp*cp = " + std::to_string(layout.gpus()) + " ranks (" + describe(layout) +
                     ") but " + std::to_string(launched) + " were launched" +
                     (launched == 1 ? "; start it with mpirun -np " + std::to_string(layout.gpus()) : std::string()));
  return run_plan_on(model, layout, work, options, make_world_communicator(options.timeout_s));
}

RunReport run_plan_on(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options,
                      std::unique_ptr<Communicator> world) {
  return run_plan_on(model, layout, work, options, make_run_backend(options, std::move(world)));
}

RunReport run_plan_on(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options,
                      std::unique_ptr<Backend> backend) {
  ProcessGroups groups = make_process_groups(layout, backend->world());
  RunReport report;
  report.world_size = backend->world().size();
  report.rank = backend->world().rank();
  // Expanded once (for a valid layout: the message names what is wrong otherwise): the runtime runs
  // it, and the report below names its ops.
  validate_layout(model, layout, work, backend->world().size());
  const auto shared_program = std::make_shared<const RankProgram>(rank_program(model, layout, work, groups.me.pp));
  const RankProgram& program = *shared_program;
  if (options.precision == Precision::Float64) train<double>(model, layout, work, options, *backend, groups, shared_program, report);
  else train<float>(model, layout, work, options, *backend, groups, shared_program, report);

  std::vector<Seconds> sorted(report.step_times.begin() + (report.step_times.size() > 1 ? 1 : 0), report.step_times.end());
  std::sort(sorted.begin(), sorted.end());
  report.step_time = sorted[sorted.size() / 2];
  report.tokens_per_second = double(work.global_batch) * double(work.seq) / report.step_time;
  report.op_times = backend->op_times();
  // The program ops this rank ran, in the program's order; the rest is work outside the program.
  report.op_steps = int(report.step_times.size()) - (report.step_times.size() > 1 ? 1 : 0);
  auto after_warmup = [&](const std::string& name, OpTime t) {
    const auto w = report.warmup_op_times.find(name);
    if (w != report.warmup_op_times.end()) t.total -= w->second.total, t.calls -= w->second.calls;
    return t;
  };
  for (const ProgramOpList* list : program.lists())
    for (const ProgramOp& op : list->ops) {
      const auto it = report.op_times.find(op.id);
      if (it == report.op_times.end()) continue;
      const OpTime t = after_warmup(op.id, it->second);
      report.ops.push_back({op.id, op.op->name, to_string(op.op->op_class), t.calls, t.total});
      report.op_class_of[op.id] = report.ops.back().op_class;
    }
  for (const auto& [name, t] : report.op_times)
    if (!report.op_class_of.count(name)) {
      report.outside_program[name] = after_warmup(name, t);
      report.op_class_of[name] = measured_op_class(name);
    }
  if (!options.trace_path.empty()) {
    // CUDA: the device activity CUPTI recorded, by op; CPU: the timed ops of the last step.
    report.trace_written = trace_path_of_rank(options.trace_path, report.rank, report.world_size);
    const std::string title = model.name + " " + describe(layout) + " (measured)";
#ifdef SIXFOLD_HAVE_CUDA
    if (options.backend == "cuda") cuda_write_trace(*backend, report.rank, title, report.trace_written);
    else write_measured_trace(report, program, title, report.trace_written);
#else
    write_measured_trace(report, program, title, report.trace_written);
#endif
  }
  if (options.emulate_rank >= 0) {
    // One process: only this rank's memory is measured; report it alone, printed as rank 0 of
    // this process (emulated_rank says which world rank it is).
    const MemoryTracker& mem = backend->memory();
    RankMemory m;
    for (int c = 0; c < kMemoryCategoryCount; ++c) m.peak_by_category[c] = mem.peak(MemoryCategory(c));
    m.peak_total = mem.peak_total();
    report.memory_per_rank = {m};
    report.emulated_rank = options.emulate_rank;
    report.rank = 0;
    return report;
  }
  // Every rank's peaks, gathered so that rank 0 can print the table.
  const MemoryTracker& mem = backend->memory();
  std::vector<double> mine(kMemoryCategoryCount + 1), all((kMemoryCategoryCount + 1) * report.world_size);
  for (int c = 0; c < kMemoryCategoryCount; ++c) mine[c] = mem.peak(MemoryCategory(c));
  mine[kMemoryCategoryCount] = mem.peak_total();
  backend->world().all_gather(mine.data(), all.data(), kMemoryCategoryCount + 1, ElemType::F64);
  for (int r = 0; r < report.world_size; ++r) {
    RankMemory m;
    for (int c = 0; c < kMemoryCategoryCount; ++c) m.peak_by_category[c] = all[r * (kMemoryCategoryCount + 1) + c];
    m.peak_total = all[r * (kMemoryCategoryCount + 1) + kMemoryCategoryCount];
    report.memory_per_rank.push_back(m);
  }
  return report;
}

}  // namespace sixfold
