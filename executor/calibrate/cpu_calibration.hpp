#pragma once
// Calibration of a hardware profile for the CPU backend (`sixfold calibrate --backend cpu`):
// microbenchmarks of what one CPU rank of the executor runs (Eigen GEMMs over the shapes of a tiny
// transformer, copy/axpy over sizes, the reference attention kernels, and MPI all-reduce between
// the ranks of this launch), fitted to the fields of a hardware profile
// (docs/hardware-profiles.md), so that predict() can price a `sixfold run` on CPU ranks.
#include <string>
#include <vector>

#include "executor/comm/communicator.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct GemmSample {
  long m = 0, n = 0, k = 0;
  Seconds time = 0;        // best of the repeats, one call
  FlopsPerSec rate = 0;
};
struct SizeSample {
  Bytes bytes = 0;         // moved (memory ops) or message size (all-reduce)
  Seconds time = 0;
};

struct CpuCalibration {
  std::vector<GemmSample> gemms;
  std::vector<SizeSample> memory_ops;  // copy and axpy: bytes read + written
  std::vector<SizeSample> all_reduces; // empty on a world of one rank
  std::vector<BytesPerSec> elementwise_rates;  // SwiGLU / RoPE kernels, cost-model bytes per second
  FlopsPerSec peak_fp32 = 0;           // best measured GEMM rate
  GemmEfficiency gemm;
  double gemm_rms_log_error = 0;
  BytesPerSec memory_bandwidth = 0;    // best measured memory-op rate
  double memory_efficiency = 1;        // element-wise kernels' rate / memory_bandwidth
  Seconds kernel_overhead = 0;         // fixed time per op of the copy/axpy fit t = overhead + bytes/rate
  double attention_efficiency = 0;     // reference attention forward+backward vs the cost model's price
  double attention_efficiency_lowest = 0, attention_efficiency_highest = 0;  // over the shapes measured
  // The runner's step of a small model against the kernel-sweep profile (predicted / measured per
  // class); attention_efficiency and memory_efficiency are the sweep's times these.
  double runner_attention_ratio = 1, runner_memory_ratio = 1;
  struct RunnerClass {
    std::string op_class;
    Seconds measured = 0, predicted = 0;  // one step, the predicted by the kernel-sweep profile
  };
  std::vector<RunnerClass> runner_classes;
  CollectiveCurve mpi;                 // fitted from all_reduces (world size > 1)
  double mpi_rms_log_error = 0;
  int ranks = 1;
  Bytes host_memory = 0;
};

// Runs the microbenchmarks on every rank of `world` (each rank computes; rank 0's numbers are
// kept). Takes a few seconds.
CpuCalibration calibrate_cpu(Communicator& world);

// The profile YAML (docs/hardware-profiles.md format) for the calibration; every value's source is
// "measurement: sixfold calibrate --backend cpu, HOST, DATE" or a fit/prior that says so.
std::string cpu_profile_yaml(const CpuCalibration& c, const std::string& name, const std::string& host,
                             const std::string& date);

}  // namespace sixfold
