#pragma once
// Calibration from a PyTorch profiler trace (`sixfold calibrate --from-kineto trace.json`).
//
// The trace is the Chrome trace that torch.profiler's export_chrome_trace() writes through Kineto
// (PyTorch docs, "torch.profiler"; the event format is Google's "Trace Event Format": complete
// events "ph": "X" with "ts" and "dur" in microseconds). Kineto's categories used here:
//  - "cpu_op": an ATen operator ("aten::mm") on a host thread; with record_shapes=True its args hold
//    "Input Dims" ([[m, k], [k, n]]) and "Input type" (["c10::BFloat16", ...]);
//  - "cuda_runtime" (and "cuda_driver"): the launch call (cudaLaunchKernel), nested in time inside
//    the cpu_op that issued it on the same pid/tid, with args.correlation;
//  - "kernel": the GPU kernel, with args.correlation equal to its launch's, args.stream, grid, block.
//  - NCCL kernels ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL...") and the "record_param_comms"
//    cpu_op that launches them carry "Collective name", "In msg nelems", "Out msg nelems",
//    "Group size" and "dtype" (PyTorch torch/csrc/profiler/util.h, the kComms* argument names).
// Kernels are matched to their operator through the correlation id and the launch's nesting; the
// kernels of one operator call are summed (split-K GEMMs launch two).
#include <optional>
#include <string>
#include <vector>

#include "simulator/fit/curve_fit.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct KinetoGemm {
  std::string op;  // aten::mm, aten::addmm, aten::bmm, aten::linear, aten::matmul
  Dtype dtype = Dtype::BF16;
  Count m = 0, n = 0, k = 0, batch = 1;
  Seconds time = 0;  // the GPU time of its kernels
};

struct KinetoMemoryOp {
  std::string op;
  Bytes bytes = 0;  // read + written, from the input dims and types
  Seconds time = 0;
};

struct KinetoCollective {
  std::string kernel;
  Collective collective = Collective::AllReduce;
  int ranks = 0;
  Bytes message = 0;  // nccl-tests "size": all-reduce buffer, all-gather output, reduce-scatter input
  Seconds time = 0;
};

struct KinetoTrace {
  std::string source;
  std::vector<KinetoGemm> gemms;
  std::vector<KinetoMemoryOp> memory_ops;
  std::vector<KinetoCollective> collectives;
  int kernels = 0;            // "kernel" events read
  int unattributed = 0;       // kernels with no launch or no enclosing operator
  int skipped = 0;            // kernels under an operator whose shapes or sizes could not be read
};

// Throws Error naming the file (and the event index and field) when the JSON is malformed, has no
// "traceEvents" array, no kernel events, or a kernel event lacks name, ts, dur or args.correlation.
KinetoTrace read_kineto_trace(const std::string& path);
KinetoTrace parse_kineto_trace(const std::string& json_text, const std::string& source);

struct KinetoCalibration {
  HardwareProfile profile;               // the base profile with the fitted values replaced
  std::vector<std::string> fitted;       // YAML paths replaced
  std::vector<std::string> notes;        // what could not be fitted and why
  std::optional<GemmFitResult> gemm;
  std::optional<double> memory_efficiency;
  int memory_points = 0;
  std::optional<CollectiveFitResult> intra_node, inter_node;
};

// Fits the GEMM curve (>= 2 GEMMs with shapes), memory_efficiency (memory-bound ops of >= 5 us:
// shorter ones are launch-bound) and the collective curves (>= 2 NCCL kernels with sizes at a
// level: a group of at most scale_up_gpus() ranks is intra-node) of `base`. Every replaced value's
// source reads "measurement: Kineto trace FILE, DATE; ..." with the fit's residual.
// Throws Error when nothing in the trace could be fitted.
KinetoCalibration calibrate_from_kineto(const KinetoTrace& trace, const HardwareProfile& base, const std::string& date);

}  // namespace sixfold
