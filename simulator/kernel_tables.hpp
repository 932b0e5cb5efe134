#pragma once
// Measured kernel prices of one GPU type: GEMM latency over (m, n, k) and dtype, prefill-attention
// forward latency over (batch, seq, heads, kv heads, head dim), and NCCL collective latency over
// (collective, GPUs, message size) inside one NVLink domain. The tables are public measurements
// with provenance (configs/kernel_tables/*.yaml, made by tools/import_kernel_tables.py from
// NVIDIA's aiconfigurator-core); docs/kernel-tables.md gives the format and the interpolation
// rules. Every query returns nullopt where no table covers the case, so that the caller falls back
// to the hardware profile's priors; it never guesses outside what the rules below say.
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "models/layout.hpp"
#include "models/step_program.hpp"

namespace sixfold {

// Where one section's measurements came from (the "source" map of a table file).
struct KernelTableSource {
  std::string file;           // path of the parquet file inside the package
  std::string sha256;         // of that parquet file
  std::string device;         // the device string recorded in the data, e.g. "NVIDIA H100 80GB HBM3"
  std::string framework;      // the collecting framework (TRTLLM, VLLM, ...)
  std::string version;        // its version (the NCCL version for collectives)
  std::string kernel_source;  // which kernel of several was measured (torch_flow, vllm_flash_attn_fa3, NCCL)
};

// One dtype's GEMM latencies on the full grid m x n x k (sorted axes).
struct GemmTable {
  Dtype dtype = Dtype::BF16;
  std::vector<Count> m, n, k;
  std::vector<Seconds> latency;  // latency[(i_m * n.size() + i_n) * k.size() + i_k]
  std::vector<size_t> filled;    // flat indices the importer filled (not measured), sorted
  Seconds at(size_t i_m, size_t i_n, size_t i_k) const { return latency[(i_m * n.size() + i_n) * k.size() + i_k]; }
};

// One measured (head_dim, heads, kv_heads) of the attention table. For seq[i] the batches
// batch[0 .. latency_by_seq[i].size()) were measured (a prefix: the package stops at a token budget).
struct AttentionSeries {
  Count head_dim = 0, heads = 0, kv_heads = 0;
  std::vector<std::vector<Seconds>> latency_by_seq;
};

struct AttentionTable {
  bool causal = true;            // what was measured (prefill attention is causal)
  std::vector<Count> batch, seq;  // sorted axes
  std::vector<AttentionSeries> series;
};

// Forward+backward speed of the flash-attention kernels training runs (measured by their authors,
// not by aiconfigurator), for one GPU: per (kernel, causal, head dim) the average FLOP rate over
// seq, NaN where the source does not show it. forward_backward_rate_ratio: the forward's FLOP rate
// over the backward's for one kernel, measured; 0 = none recorded.
struct TrainingAttentionSeries {
  AttentionKernel kernel = AttentionKernel::Flash2;
  bool causal = true;
  Count head_dim = 0;
  std::vector<FlopsPerSec> rate;  // one per seq; NaN: not measured
};

struct TrainingAttentionTable {
  std::vector<Count> seq;  // sorted
  double forward_backward_rate_ratio = 0;
  std::string chart_gpu;   // the GPU the source measured, e.g. "H100 80GB SXM5"
  std::vector<TrainingAttentionSeries> series;
};

// One collective on one GPU count, latency over message size (nccl-tests "size": the whole buffer).
struct CollectiveSeries {
  Collective kind = Collective::AllReduce;
  int gpus = 0;
  std::vector<Bytes> message;  // sorted
  std::vector<Seconds> latency;
};

class KernelTables {
 public:
  // A table file's text; `source` names it in errors. Malformed or inconsistent content throws
  // Error("SOURCE:LINE: field 'F': ... got V, allowed ...").
  static KernelTables parse(const std::string& yaml_text, const std::string& source);
  // Built-in name (configs/kernel_tables/NAME.yaml, e.g. "h100-sxm") or a path to a file.
  static KernelTables load(const std::string& name_or_path);

  // GEMM C[m,n] = A[m,k] B[k,n] (one product; the caller multiplies by a batch count). Inside the
  // grid: trilinear interpolation of log latency in (log m, log n, log k), which is the same as
  // interpolating log FLOP rate because log(2mnk) is linear in those coordinates; so a region of
  // constant efficiency is reproduced exactly and a latency floor stays flat. Outside the grid the
  // FLOP rate at the nearest grid point (each coordinate clamped) is held. nullopt: no table for
  // the dtype (e.g. FP8 on A100, FP32/TF32 anywhere) or a non-positive dimension.
  std::optional<Seconds> gemm_time(Dtype dtype, Count m, Count n, Count k) const;

  // Forward of flash attention over `batch` sequences of `seq` tokens, `heads` query heads and
  // `kv_heads` KV heads of `head_dim` (one rank's share). nullopt when causal differs from the
  // table's (only causal is measured), head_dim lies outside the measured head dims, or an argument
  // is not positive. Rules in kernel_tables.cpp (attention_forward_time).
  std::optional<Seconds> attention_forward_time(Count batch, Count seq, Count heads, Count kv_heads, Count head_dim,
                                                bool causal) const;

  // Average FLOP rate of one forward plus backward of `kernel` (Flash1 or Flash2) over sequences of
  // `seq` tokens with `head_dim`, in the source's convention (forward 4*b*s^2*h*d, halved when
  // causal; backward 2.5x). Along seq: log-log between measured points, the rate held beyond them;
  // between the measured head dims log-log, outside them the nearest one's rate (a prior: FA2's
  // speed varies less than 15% over head dims 64-256 in the FlashAttention-3 paper's charts).
  // nullopt: no series of that kernel and causality.
  std::optional<FlopsPerSec> training_attention_rate(AttentionKernel kernel, bool causal, Count head_dim, Count seq) const;
  const TrainingAttentionTable& training_attention() const { return training_attention_; }

  // One NCCL collective on `gpus` GPUs of one NVLink domain with nccl-tests' message size (bytes of
  // the whole buffer). nullopt: no such collective in the table (ring exchange, send/receive), gpus
  // outside the measured counts, or a table without collectives (kernel_tables_for drops them
  // where the link differs from the measured machine's). Rules in kernel_tables.cpp.
  std::optional<Seconds> collective_time(Collective kind, int gpus, Bytes message) const;

  const std::string& device() const { return device_; }       // e.g. "h100-sxm"
  const std::string& source() const { return source_; }       // e.g. "built-in configs/kernel_tables/h100-sxm.yaml"
  // One line per section: package, version, licence, conversion date, parquet file, device string,
  // framework/version and kernel source, plus any note added by kernel_tables_for.
  std::vector<std::string> provenance() const;

  const std::vector<GemmTable>& gemm_tables() const { return gemm_; }
  const AttentionTable& attention_table() const { return attention_; }
  const std::vector<CollectiveSeries>& collective_series() const { return collectives_; }
  const KernelTableSource& gemm_source() const { return gemm_source_; }
  const KernelTableSource& attention_source() const { return attention_source_; }
  const KernelTableSource& collective_source() const { return collective_source_; }

  // The same tables with only the named sections kept; `note` says why in provenance().
  KernelTables restricted(bool gemm, bool attention, bool collectives, const std::string& note) const;

 private:
  std::string device_, source_, package_line_;
  std::vector<std::string> notes_;
  KernelTableSource gemm_source_, attention_source_, collective_source_;
  std::vector<GemmTable> gemm_;
  AttentionTable attention_;
  TrainingAttentionTable training_attention_;
  std::string training_attention_source_;
  std::vector<CollectiveSeries> collectives_;
  // Names these tables' contents for the per-thread lookup cache: a new one for every parse and
  // every restricted() copy, never an address that a later table could reuse.
  long long cache_id_ = next_cache_id();
  static long long next_cache_id();

  std::optional<Seconds> attention_at_head_dim(size_t first_series_of_head_dim, Count batch, Count seq, Count heads,
                                               Count kv_heads) const;
  // The interpolations behind gemm_time and attention_forward_time, which remember their answers.
  std::optional<Seconds> gemm_time_uncached(Dtype dtype, Count m, Count n, Count k) const;
  std::optional<Seconds> attention_forward_time_uncached(Count batch, Count seq, Count heads, Count kv_heads,
                                                         Count head_dim, bool causal) const;
};

// The measured tables that price a hardware profile (configs/hardware/NAME.yaml), or nullptr
// where none applies; sections that do not carry over to that profile are removed (H800: the
// H100's GEMM and attention, not its NVLink collectives). Loaded once, kept for the process.
const KernelTables* kernel_tables_for(const std::string& hardware_profile_name);

}  // namespace sixfold
