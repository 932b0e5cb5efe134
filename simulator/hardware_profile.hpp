#pragma once
// A GPU type and its cluster: peak rates from datasheets, efficiencies from measurement or fit.
// Every value's provenance is kept (datasheet, measurement FILE DATE, fit ...), keyed by its YAML path.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "models/layout.hpp"

namespace sixfold {

// Achieved fraction of peak for a GEMM of shape (m, n, k):
//   max_efficiency * s(m) * s(n) * s(k) * waves,  s(x) = x / (x + half_dim)
// where waves accounts for tile quantisation of the output over the SMs (tile x tile tiles).
struct GemmEfficiency {
  double max_efficiency = 0.8;
  double half_dim = 64;   // a dimension of this size halves the efficiency
  int tile = 128;         // output tile edge used for wave quantisation
};

// Bus bandwidth (nccl-tests convention) over message size: peak * size / (size + half_size),
// plus a fixed latency per collective step.
struct CollectiveCurve {
  BytesPerSec peak_busbw = 0;
  Bytes half_size = 1 * kMiB;
  Seconds latency = 10e-6;
  // Latency per ring step: a ring all-reduce on n ranks takes 2(n-1) steps, an all-gather or
  // reduce-scatter n-1 (NCCL's tuning model, src/graph/tuning.cc, prices a ring collective as
  // baseLat + nsteps x hwLat). 0: one latency whatever the group size.
  Seconds step_latency = 0;
};

struct HardwareProfile {
  std::string name;
  std::string description;
  std::map<Dtype, FlopsPerSec> peak_flops;  // dense (no sparsity)
  Bytes memory_capacity = 0;
  BytesPerSec memory_bandwidth = 0;
  int sm_count = 0;
  int gpus_per_node = 8;                 // GPUs per host (what a launcher calls a node)
  // GPUs on one NVLink fabric where it spans hosts (GB200 NVL72: 72 GPUs over 18 trays of 4);
  // 0: the fabric is the host's. Collectives, TP and EP placement see scale_up_gpus().
  int nvlink_domain = 0;
  BytesPerSec intra_node_bandwidth = 0;  // NVLink (or PCIe) per GPU, one direction
  bool pcie_only = false;                // no NVLink: intra-node traffic crosses PCIe
  BytesPerSec network_bandwidth = 0;     // per GPU across nodes, one direction
  Seconds network_latency = 0;
  GemmEfficiency gemm;
  double attention_efficiency = 0.5;     // flash attention vs the dtype's peak
  double memory_efficiency = 0.8;        // memory-bound kernels vs memory_bandwidth
  CollectiveCurve intra_node;            // collectives inside a node
  CollectiveCurve inter_node;            // collectives whose group spans nodes
  Bytes context_memory = 0;              // CUDA context + cuBLAS/NCCL workspaces held per GPU
  Seconds kernel_overhead = 4e-6;        // host dispatch per op (framework + launch): op lists take at least ops x this
  // Price GEMMs and attention from the GPU's measured kernel tables (simulator/kernel_tables.hpp)
  // where they exist; false keeps the profile's efficiency curve (a calibrated profile's own fit).
  bool use_kernel_tables = true;
  // Price collectives inside a node from the measured NCCL tables where they exist; an
  // overridden NVLink bandwidth (--intra-node-bandwidth, a cluster file) turns them off.
  bool use_collective_tables = true;
  // Measured kernels run slower inside a training step than alone in a microbenchmark: sustained
  // power draw lowers the clocks, and communication kernels share the SMs and L2 (NCCL channels
  // run on SMs). One multiplier on the tabled GEMM and attention times, the same for every GPU,
  // fitted on measured runs (sixfold calibrate --cv source reports it out of source;
  // bench/RESULTS.md). 1 = the microbenchmark's rate.
  double kernel_slowdown = 1.0;
  // Share of a hidden collective's time that the compute it hides behind still loses (SMs held by
  // NCCL channels, HBM and L2 shared): overlap::hiding_cost. Prior 0.189, the mean compute
  // slowdown under overlapped communication that Lee et al. 2025 (arXiv 2507.03114) measured on
  // A100 and H100; fittable like the other framework terms (sixfold calibrate --cv source).
  double overlap_slowdown = 0.189;
  // Host time per optimizer step outside the op lists: the training loop's bookkeeping between
  // steps (gradient-norm all-reduce and its host sync, loss logging, zero_grad, the data
  // iterator), during which the GPU waits. 0 unless fitted (calibrate --cv source names it).
  Seconds step_overhead = 0;
  double dispatch_overlap = 0;           // share of min(host, GPU) time of an op list that hides behind the other
  std::map<std::string, std::string> provenance;

  FlopsPerSec peak(Dtype d) const;       // throws Error when the profile lacks that dtype
  // The GPUs that reach each other over NVLink (or the host's PCIe): the "intra-node" of every
  // collective and placement rule.
  int scale_up_gpus() const { return std::max(gpus_per_node, nvlink_domain); }
};

// Command-line or cluster-YAML overrides of a profile's cluster values.
struct ClusterOverrides {
  std::optional<int> gpus_per_node;
  std::optional<int> nvlink_domain;
  std::optional<BytesPerSec> intra_node_bandwidth;
  std::optional<BytesPerSec> network_bandwidth;
  std::optional<Seconds> network_latency;
  // Where each set value came from, keyed like HardwareProfile::provenance ("network_bandwidth");
  // a value without an entry is recorded as "override: command line".
  std::map<std::string, std::string> provenance;
};

// By built-in name (configs/hardware/NAME.yaml) or by path to a YAML file. Unknown names give a
// UsageError listing the built-in ones; a malformed file gives Error with file, line and field.
HardwareProfile load_hardware(const std::string& name_or_path);
HardwareProfile parse_hardware(const std::string& yaml_text, const std::string& source);
std::vector<std::string> builtin_hardware_names();
void apply_overrides(HardwareProfile& hw, const ClusterOverrides& o);
// A cluster YAML (configs/clusters/*.yaml or a path): {hardware: NAME, gpus_per_node, network_bandwidth, ...}
ClusterOverrides load_cluster_overrides(const std::string& name_or_path, std::string* hardware_name);
ClusterOverrides parse_cluster_overrides(const std::string& yaml_text, const std::string& source, std::string* hardware_name);

}  // namespace sixfold
