#pragma once
// Calibration of a hardware profile on this machine's GPUs (`sixfold calibrate --backend cuda`):
// microbenchmarks of what the CUDA backend runs (cuBLASLt GEMMs over transformer-layer shapes in
// each dtype the device has, the sixfold flash attention over sequence and head dim, memory-bound
// kernels over sizes, NCCL all-reduce / all-gather / reduce-scatter over sizes when there is more
// than one GPU), timed with CUDA events (NCCL: host clock around the synchronised group), fitted
// with simulator/curve_fit.* into the fields of a base hardware profile. Compiled only in the CUDA
// build (executor/CMakeLists.txt takes executor/cuda_*.cpp only there); the CLI refuses
// --backend cuda with a UsageError elsewhere.
#include <optional>
#include <string>
#include <vector>

#include "simulator/fit/curve_fit.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct CudaGemmSample {
  Dtype dtype = Dtype::BF16;
  long m = 0, n = 0, k = 0;
  Seconds time = 0;  // best of the rounds, one call
  FlopsPerSec rate = 0;
};

struct CudaMemorySample {
  std::string kernel;  // "copy", "swiglu_forward", "rmsnorm_forward"
  Bytes bytes = 0;     // read + written
  Seconds time = 0;
};

struct CudaAttentionSample {
  int seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  Seconds time = 0;        // forward + backward
  double efficiency = 0;   // against op_cost.cpp's attention price at efficiency 1
};

struct CudaCalibration {
  std::string device, driver, runtime;
  int devices = 0, sm_count = 0;
  Bytes memory_total = 0;
  std::vector<CudaGemmSample> gemms;
  std::vector<CudaMemorySample> memory_ops;
  std::vector<CudaAttentionSample> attention;
  std::vector<CollectivePoint> collectives;  // NCCL, all GPUs of this process
  std::vector<std::string> notes;            // dtypes or parts skipped, and why
  std::optional<GemmFitResult> gemm;
  double memory_efficiency = 0, memory_rms_log_error = 0;
  double attention_efficiency = 0;
  std::optional<CollectiveFitResult> nccl;
};

// Runs the microbenchmarks on device 0 (and NCCL over all devices). `base` gives the peak rates
// the efficiencies are relative to and the memory bandwidth. Throws Error (file, line, CUDA's
// message) on CUDA failures and when there is no device. Takes about a minute on an H100-class GPU.
CudaCalibration calibrate_cuda(const HardwareProfile& base);

// `base` with the measured values replaced, each with the source "measurement: sixfold calibrate
// --backend cuda, DEVICE, DRIVER, DATE" (plus the fit and its residual).
HardwareProfile cuda_calibrated_profile(const CudaCalibration& c, const HardwareProfile& base, const std::string& date);

// The raw measurements as JSON (written next to the profile).
std::string cuda_calibration_json(const CudaCalibration& c, const std::string& date);

}  // namespace sixfold
