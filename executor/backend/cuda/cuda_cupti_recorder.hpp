#pragma once
// Device activity of a run through the CUPTI activity API: every kernel
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; NCCL's collectives are kernels too) and every memcpy,
// with its name, start, end and stream, attributed to the executor op that launched it. The op
// is pushed as an external correlation id (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) for the
// duration of the op (Backend::op_begin/op_end), and CUPTI reports which correlation id each
// launch had. Written as a Chrome trace in the simulator's format (simulator/io/trace_writer.cpp:
// traceEvents of complete events in microseconds, one process per rank, one thread per stream,
// displayTimeUnit ms) so that `sixfold simulate --trace` and `sixfold run --trace` open side by side.
//
// CUPTI allows one activity client per process: at most one recorder is started at a time.
// The header needs no CUDA header; the class exists only in the CUDA build.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixfold {

struct DeviceActivity {
  std::string name;        // kernel name, or "memcpy HtoD" / "memcpy DtoH" / ...
  std::string op;          // executor op that launched it ("" when launched outside any op)
  std::string category;    // "kernel", "nccl" (an NCCL kernel) or "memcpy"
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t stream = 0;  // CUPTI's stream id
  std::uint64_t bytes = 0;   // memcpy only
};

class CuptiRecorder {
 public:
  CuptiRecorder();  // enables the activity kinds; throws sixfold::Error when CUPTI refuses
  ~CuptiRecorder();
  CuptiRecorder(const CuptiRecorder&) = delete;
  CuptiRecorder& operator=(const CuptiRecorder&) = delete;

  void push_op(const char* name);
  void pop_op();
  // Flushes CUPTI's buffers and returns every activity recorded so far, in start order.
  std::vector<DeviceActivity> collect();
  // The Chrome trace of collect(): process `rank`, one thread per stream, times from the first
  // activity.
  nlohmann::json chrome_trace(int rank, const std::string& title);
  void write_chrome_trace(int rank, const std::string& title, const std::string& path);

 private:
  std::vector<std::string> op_names_;  // external id - 1 -> op name
};

}  // namespace sixfold
