#pragma once
// What the runtime asks of a device: memory (device_storage.hpp) with byte accounting
// (MemoryTracker), GEMM, every other kernel of a step (device_ops.hpp), the per-op wall clock, and
// the communicator of the world (collectives and point-to-point; the process groups are split
// from it). Tensors stay in the backend's memory: the CPU backend's is the host's, the CUDA
// backend's the GPU's, and the runtime reaches them only through these calls.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common/units.hpp"
#include "executor/backend/device_ops.hpp"
#include "executor/backend/device_storage.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/runtime/memory_tracker.hpp"

namespace sixfold {

// Wall time per op name, summed over calls (the measured side of predicted-vs-measured). An op
// timed inside another (a CP ring exchange inside the attention, the loss's all-reduces inside the
// cross-entropy) counts only in its own entry: `total` is the op's own time, its inner ops' taken out.
struct OpTime {
  Seconds total = 0;
  long calls = 0;
};

// One timed op on this rank's clock, seconds since the backend was made: the measured timeline.
struct OpEvent {
  const char* name = "";  // lives as long as the backend (a static string or a step-program op id)
  Seconds start = 0, end = 0;
  int depth = 0;          // timed inside this many other timed ops
  Seconds self = 0;       // end - start less the time of the ops timed inside it
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Row-major C[m,n] = alpha * op(A) * op(B) + beta * C; op(A) is [m,k] (A stored [k,m] when
  // trans_a), op(B) is [k,n] (B stored [n,k] when trans_b).
  virtual void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, const float* b,
                    float beta, float* c) = 0;
  virtual void gemm(bool trans_a, bool trans_b, long m, long n, long k, double alpha, const double* a,
                    const double* b, double beta, double* c) = 0;
  // The other kernels, in the runtime's precision.
  virtual DeviceOps<float>& ops_float() = 0;
  virtual DeviceOps<double>& ops_double() = 0;
  template <class T>
  DeviceOps<T>& ops() {
    if constexpr (std::is_same_v<T, float>) return ops_float();
    else return ops_double();
  }
  DeviceStorage& storage() { return memory_.storage(); }

  // Called by ScopedOpTimer around each op, so that a backend tracing device activity (CUDA with
  // CUPTI) can attribute what the op launches to it. No-ops by default.
  virtual void op_begin(const char* name) {}
  virtual void op_end() {}

  MemoryTracker& memory() { return memory_; }
  Communicator& world() { return *world_; }
  std::map<std::string, OpTime>& op_times() { return op_times_; }
  // The ops timed since the last clear (the runtime clears it before each step, so that it holds
  // the last step only: bounded by one step's ops).
  std::vector<OpEvent>& op_events() { return op_events_; }
  std::chrono::steady_clock::time_point origin() const { return origin_; }
  int& op_depth() { return op_depth_; }
  // Time of the timed ops nested in each open one, innermost last (ScopedOpTimer).
  std::vector<Seconds>& inner_time() { return inner_time_; }

 protected:
  // storage: where the tensors live (null: host memory); it must outlive the backend's tensors.
  explicit Backend(std::unique_ptr<Communicator> world, DeviceStorage* storage = nullptr) : world_(std::move(world)) {
    if (storage) memory_.set_storage(storage);
    world_->use_storage(memory_.storage());
  }

 private:
  MemoryTracker memory_;
  std::unique_ptr<Communicator> world_;
  std::map<std::string, OpTime> op_times_;
  std::vector<OpEvent> op_events_;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  int op_depth_ = 0;
  std::vector<Seconds> inner_time_;
};

// Adds the wall time of a scope, less that of the timed scopes inside it, to
// backend.op_times()[name] and its span to backend.op_events(). `name` must outlive the backend.
class ScopedOpTimer {
 public:
  ScopedOpTimer(Backend& backend, const char* name)
      : backend_(backend), entry_(backend.op_times()[name]), name_(name), depth_(backend.op_depth()++),
        start_(std::chrono::steady_clock::now()) {
    backend_.inner_time().push_back(0);
    backend_.op_begin(name);
  }
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;
  ~ScopedOpTimer() {
    backend_.op_end();
    const auto end = std::chrono::steady_clock::now();
    const Seconds span = std::chrono::duration<double>(end - start_).count();
    const Seconds self = span - backend_.inner_time().back();
    backend_.inner_time().pop_back();
    if (!backend_.inner_time().empty()) backend_.inner_time().back() += span;
    entry_.total += self;
    ++entry_.calls;
    --backend_.op_depth();
    const auto since = [&](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double>(t - backend_.origin()).count();
    };
    backend_.op_events().push_back({name_, since(start_), since(end), depth_, self});
  }

 private:
  Backend& backend_;
  OpTime& entry_;
  const char* name_;
  int depth_;
  std::chrono::steady_clock::time_point start_;
};

// Backends by name ("cpu"); throws UsageError listing the known names.
std::unique_ptr<Backend> make_backend(const std::string& name, std::unique_ptr<Communicator> world);

}  // namespace sixfold
