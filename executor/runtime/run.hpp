#pragma once
// Entry point of `sixfold run`: executes a layout for real on the ranks of this launch (mpirun
// -np N, or one process without mpirun) and measures it.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "executor/backend/backend.hpp"
#include "executor/runtime/memory_tracker.hpp"
#include "models/layout.hpp"
#include "models/model_spec.hpp"

namespace sixfold {

enum class Precision { Float32, Float64 };
Precision parse_precision(const std::string& s);  // "float32"/"fp32", "float64"/"fp64"; UsageError otherwise
std::string to_string(Precision p);

struct RunOptions {
  std::string backend = "cpu";
  int steps = 10;
  Precision precision = Precision::Float32;
  std::uint64_t seed = 1234;
  double timeout_s = 120;  // bound on any single communication
  double lr = 1e-3;
  // Chrome trace of the measured step, "" for none: the CPU backend's timed ops of the last step
  // (measured_trace.hpp), the CUDA backend's device activity (CUPTI). With more than one rank each
  // writes PATH with ".rank<R>" before the extension.
  std::string trace_path;
  // >= 0: run world rank R of the layout alone in this process (its compute and memory), every
  // collective replaced by a local copy of the same buffers (executor/comm/emulated_communicator.hpp);
  // communication times are then modeled, never measured.
  int emulate_rank = -1;
};

struct RankMemory {
  std::array<Bytes, kMemoryCategoryCount> peak_by_category{};  // indexed by MemoryCategory
  Bytes peak_total = 0;
};

// A program op this rank ran (program_ops.hpp), summed over RunReport::op_steps steps: its own
// time, the ops timed inside it taken out.
struct MeasuredOp {
  std::string id, name, op_class;  // op_id; the program's op name; to_string(OpClass)
  long calls = 0;                  // timed scopes (a fused op runs several kernels; layers x micro-batches)
  Seconds seconds = 0;
};

// A timed op of the last step, as the backend's OpEvent but owning its name (an op id lives in
// the runtime's program, which ends with the run).
struct StepEvent {
  std::string name;
  Seconds start = 0, end = 0;  // seconds since the backend was made
  int depth = 0;
  Seconds self = 0;            // end - start less the ops timed inside it
};

struct RunReport {
  int world_size = 1;
  int rank = 0;
  std::vector<double> losses;                // global mean loss of each step (same on every rank)
  std::vector<Seconds> step_times;           // wall time of each step on this rank
  Seconds step_time = 0;                     // median step time (the first step excluded when there are more)
  double tokens_per_second = 0;              // global tokens per step / step_time
  std::map<std::string, OpTime> op_times;    // this rank, summed over all steps, by op id or (outside the program) name
  // This rank's program ops, in program order, and the timed work that is not an op of the program:
  // over the op_steps steps after the first (warm-up) one, all of them when only one ran.
  std::vector<MeasuredOp> ops;
  std::map<std::string, OpTime> outside_program;
  int op_steps = 1;
  std::map<std::string, OpTime> warmup_op_times;  // op_times after the first step
  std::map<std::string, std::string> op_class_of;  // op id or name in op_times -> its op class
  std::vector<StepEvent> last_step_ops;      // this rank's timed ops of the last step (the measured timeline)
  std::vector<RankMemory> memory_per_rank;   // every rank's peaks (gathered), index = world rank
  int emulated_rank = -1;                    // >= 0: memory_per_rank holds only this rank's (index 0)
  std::string trace_written;                 // path of the device trace this rank wrote, if any
};

// Throws UsageError (unknown backend, ranks launched != layout.gpus(), unsupported model feature)
// on every rank, and Error on a communication timeout.
RunReport run_plan(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options);

// The same on a given world (tests run a single-rank reference inside an MPI launch with a
// SelfCommunicator). world->size() must equal layout.gpus().
RunReport run_plan_on(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options,
                      std::unique_ptr<Communicator> world);
// The same on a given backend (options.backend is not read): tests run the MPI layouts on the CPU
// backend's guarded memory (make_guarded_cpu_backend).
RunReport run_plan_on(const ModelSpec& model, const Layout& layout, const Workload& work, const RunOptions& options,
                      std::unique_ptr<Backend> backend);

}  // namespace sixfold
