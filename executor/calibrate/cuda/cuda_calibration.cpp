#include "executor/calibrate/cuda/cuda_calibration.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "kernels/cuda_check.cuh"
#include "kernels/cuda_kernels.hpp"

#define CHECK_NCCL(call)                                                                                \
  do {                                                                                                  \
    const ncclResult_t sixfold_nccl_ = (call);                                                          \
    if (sixfold_nccl_ != ncclSuccess)                                                                   \
      throw ::sixfold::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": NCCL error " + \
                             ncclGetErrorString(sixfold_nccl_) + " in " #call);                         \
  } while (0)

namespace sixfold {

namespace {

using cuda::Bf16;

// Device memory freed on scope exit (the calibration throws on any CUDA error).
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { CHECK_CUDA(cudaMalloc(&ptr, bytes)); CHECK_CUDA(cudaMemset(ptr, 0, bytes)); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(ptr); }
};

// Best time of one launch over 3 rounds of CUDA-event-timed repeats, the repeat count chosen so a
// round lasts ~2 ms (event resolution is ~0.5 us; CUDA Runtime API, cudaEventElapsedTime).
Seconds time_launches(const std::function<void()>& launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  auto timed = [&](int reps) {
    CHECK_CUDA(cudaEventRecord(start));
    for (int i = 0; i < reps; ++i) launch();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return Seconds(ms) * 1e-3 / reps;
  };
  timed(1);  // warm-up: algorithm selection, first touch
  const Seconds one = timed(1);
  const int reps = int(std::clamp(2e-3 / std::max(one, 1e-7), 1.0, 200.0));
  Seconds best = one;
  for (int round = 0; round < 3; ++round) best = std::min(best, timed(reps));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

// GEMM shapes of transformer layers: tokens x (QKV 3h, output h, MLP up 4h, down from 4h), the
// forward (m = tokens) and the weight gradient (k = tokens), for a few hidden sizes.
std::vector<std::array<long, 3>> transformer_shapes() {
  std::vector<std::array<long, 3>> out;
  for (long h : {2048L, 4096L, 8192L})
    for (long tokens : {1024L, 8192L})
      for (auto [n, k] : {std::pair<long, long>{3 * h, h}, {h, h}, {4 * h, h}, {h, 4 * h}}) {
        out.push_back({tokens, n, k});
        out.push_back({n, k, tokens});
      }
  return out;
}

void measure_gemms(CudaCalibration& c, const HardwareProfile& base, int cc) {
  const auto shapes = transformer_shapes();
  long max_a = 0, max_b = 0, max_c = 0;
  for (const auto& [m, n, k] : shapes) max_a = std::max(max_a, m * k), max_b = std::max(max_b, k * n), max_c = std::max(max_c, m * n);
  DeviceBuffer a(max_a * 2), b(max_b * 2), out(max_c * 4);
  std::vector<Dtype> dtypes;
  if (cc >= 80) dtypes = {Dtype::BF16, Dtype::FP16};
  else c.notes.push_back("bf16/fp16 GEMMs skipped: compute capability below 8.0");
  if (cc >= 89) dtypes.push_back(Dtype::FP8);
  else c.notes.push_back("fp8 GEMMs skipped: FP8 tensor cores need compute capability 8.9 or higher");
  cuda::CublasLtGemm gemm(std::size_t(64) << 20);
  // fp16 and fp8 timed as C^T[n, m] = B[n, k] A[m, k]^T: the layout FP8 requires (cuBLASLt's
  // "TN"), fp16 alike; bf16 as the executor runs it.
  auto time_typed = [&](cuda::GemmType in, cuda::GemmType out_type, long m, long n, long k) -> std::optional<Seconds> {
    auto once = [&] { return gemm.try_matmul(in, out_type, b.ptr, a.ptr, out.ptr, n, m, k, false, true, 1.0, 0.0, nullptr); };
    if (!once()) return std::nullopt;
    return time_launches([&] { once(); });
  };
  for (Dtype d : dtypes) {
    if (!base.peak_flops.count(d)) {
      c.notes.push_back(to_string(d) + " GEMMs skipped: the base profile '" + base.name + "' has no peak for it");
      continue;
    }
    for (const auto& [m, n, k] : shapes) {
      std::optional<Seconds> t;
      if (d == Dtype::BF16) {
        t = time_launches([&] {
          gemm.matmul(a.as<Bf16>(), b.as<Bf16>(), out.as<Bf16>(), int(m), int(n), int(k), false, false);
        });
      } else if (d == Dtype::FP16) {
        t = time_typed(cuda::GemmType::FP16, cuda::GemmType::FP16, m, n, k);
      } else {
        t = time_typed(cuda::GemmType::FP8_E4M3, cuda::GemmType::BF16, m, n, k);
      }
      if (!t) {
        c.notes.push_back(to_string(d) + " GEMM " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                          " skipped: cuBLASLt offered no algorithm");
        continue;
      }
      c.gemms.push_back({d, m, n, k, *t, 2.0 * double(m) * double(n) * double(k) / *t});
    }
  }
}

void measure_memory(CudaCalibration& c) {
  const long max_elements = 64L << 20;  // 128 MiB of bf16 per buffer
  DeviceBuffer x(max_elements * 2), y(max_elements * 2), z(max_elements * 2), w(8192 * 2), rstd((max_elements / 1024) * 4);
  for (long n = 1L << 20; n <= max_elements; n *= 4) {
    c.memory_ops.push_back({"copy", Bytes(4 * n), time_launches([&] {
                              CHECK_CUDA(cudaMemcpyAsync(y.ptr, x.ptr, 2 * n, cudaMemcpyDeviceToDevice));
                            })});
    c.memory_ops.push_back({"swiglu_forward", Bytes(6 * n), time_launches([&] {
                              cuda::swiglu_forward(x.as<Bf16>(), y.as<Bf16>(), z.as<Bf16>(), n);
                            })});
    const int cols = 4096, rows = int(n / cols);
    c.memory_ops.push_back({"rmsnorm_forward", Bytes(4.0 * n + 4.0 * rows + 2.0 * cols), time_launches([&] {
                              cuda::rmsnorm_forward(x.as<Bf16>(), w.as<Bf16>(), y.as<Bf16>(), rstd.as<float>(), rows, cols, 1e-5f);
                            })});
  }
}

void measure_attention(CudaCalibration& c, const HardwareProfile& base) {
  const int heads = 16, kv_heads = 8, max_seq = 8192, max_d = 128;
  DeviceBuffer q(size_t(max_seq) * heads * max_d * 2), k(size_t(max_seq) * kv_heads * max_d * 2),
      v(size_t(max_seq) * kv_heads * max_d * 2), out(size_t(max_seq) * heads * max_d * 2), lse(size_t(heads) * max_seq * 4),
      dq(size_t(max_seq) * heads * max_d * 4), dk(size_t(max_seq) * kv_heads * max_d * 4),
      dv(size_t(max_seq) * kv_heads * max_d * 4), pos(size_t(max_seq) * 4),
      work(cuda::flash_attention_backward_workspace_bytes(max_seq, heads));
  std::vector<int> positions(max_seq);
  for (int i = 0; i < max_seq; ++i) positions[i] = i;
  CHECK_CUDA(cudaMemcpy(pos.ptr, positions.data(), positions.size() * 4, cudaMemcpyHostToDevice));
  const FlopsPerSec peak = base.peak(Dtype::BF16);
  for (int d : {64, 128})
    for (int s : {1024, 2048, 4096, 8192}) {
      const float scale = 1.0f / std::sqrt(float(d));
      const Seconds t = time_launches([&] {
        cuda::flash_attention_forward(q.as<Bf16>(), k.as<Bf16>(), v.as<Bf16>(), out.as<Bf16>(), lse.as<float>(), pos.as<int>(),
                                      pos.as<int>(), s, s, heads, kv_heads, d, scale);
        cuda::flash_attention_backward(out.as<Bf16>(), q.as<Bf16>(), k.as<Bf16>(), v.as<Bf16>(), out.as<Bf16>(), lse.as<float>(),
                                       dq.as<float>(), dk.as<float>(), dv.as<float>(), pos.as<int>(), pos.as<int>(), s, s,
                                       heads, kv_heads, d, scale, work.ptr);
      });
      // simulator/op_cost.cpp: causal forward 2 s (s/2) heads (d + d), backward 2.5x, over
      // peak * efficiency * min(1, d / (d + 32) / (128 / 160)).
      const double flops = 3.5 * 2.0 * s * (s / 2.0) * heads * (2.0 * d);
      const double head = std::min(1.0, double(d) / (d + 32.0) / (128.0 / 160.0));
      c.attention.push_back({s, heads, kv_heads, d, t, flops / (t * peak * head)});
    }
}

// All devices of this process in one NCCL clique (ncclCommInitAll); each call is a group over
// the devices, timed on the host around stream synchronisation.
void measure_nccl(CudaCalibration& c, int devices) {
  std::vector<ncclComm_t> comms(devices);
  CHECK_NCCL(ncclCommInitAll(comms.data(), devices, nullptr));
  const std::size_t max_bytes = std::size_t(256) << 20;
  std::vector<void*> send(devices), recv(devices);
  std::vector<cudaStream_t> streams(devices);
  for (int d = 0; d < devices; ++d) {
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_CUDA(cudaStreamCreate(&streams[d]));
    CHECK_CUDA(cudaMalloc(&send[d], max_bytes));
    CHECK_CUDA(cudaMalloc(&recv[d], max_bytes));
    CHECK_CUDA(cudaMemset(send[d], 0, max_bytes));
  }
  auto sync_all = [&] {
    for (int d = 0; d < devices; ++d) {
      CHECK_CUDA(cudaSetDevice(d));
      CHECK_CUDA(cudaStreamSynchronize(streams[d]));
    }
  };
  for (Collective kind : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    for (std::size_t bytes = std::size_t(256) << 10; bytes <= max_bytes; bytes *= 4) {
      const std::size_t total = bytes / 2, shard = total / devices;  // bf16 elements
      auto once = [&] {
        CHECK_NCCL(ncclGroupStart());
        for (int d = 0; d < devices; ++d) {
          if (kind == Collective::AllReduce)
            CHECK_NCCL(ncclAllReduce(send[d], recv[d], total, ncclBfloat16, ncclSum, comms[d], streams[d]));
          else if (kind == Collective::AllGather)
            CHECK_NCCL(ncclAllGather(send[d], recv[d], shard, ncclBfloat16, comms[d], streams[d]));
          else
            CHECK_NCCL(ncclReduceScatter(send[d], recv[d], shard, ncclBfloat16, ncclSum, comms[d], streams[d]));
        }
        CHECK_NCCL(ncclGroupEnd());
      };
      once();
      once();
      sync_all();
      const int iters = bytes <= (std::size_t(4) << 20) ? 50 : 10;
      Seconds best = 1e30;
      for (int round = 0; round < 3; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) once();
        sync_all();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters);
      }
      c.collectives.push_back({kind, devices, Bytes(bytes), best});
    }
  }
  for (int d = 0; d < devices; ++d) {
    cudaSetDevice(d);
    cudaFree(send[d]);
    cudaFree(recv[d]);
    cudaStreamDestroy(streams[d]);
    ncclCommDestroy(comms[d]);
  }
  CHECK_CUDA(cudaSetDevice(0));
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

CudaCalibration calibrate_cuda(const HardwareProfile& base) {
  CudaCalibration c;
  c.devices = cuda::device_count();
  if (c.devices == 0) throw Error("calibrate --backend cuda: no CUDA device (cudaGetDeviceCount found none)");
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  c.device = prop.name;
  c.sm_count = prop.multiProcessorCount;
  c.memory_total = double(prop.totalGlobalMem);
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  c.driver = "driver CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  c.runtime = "runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  const int cc = prop.major * 10 + prop.minor;

  measure_gemms(c, base, cc);
  std::vector<GemmPoint> points;
  for (const auto& g : c.gemms) points.push_back({g.m, g.n, g.k, 1, g.rate / base.peak(g.dtype)});
  if (points.size() >= 2) c.gemm = fit_gemm_efficiency(points, c.sm_count);

  measure_memory(c);
  // One efficiency for every memory-bound op (op_cost.cpp): the geometric mean of achieved /
  // datasheet bandwidth over kernels of >= 5 us (shorter ones are launch-bound).
  double log_sum = 0;
  int count = 0;
  for (const auto& m : c.memory_ops)
    if (m.time >= 5e-6) log_sum += std::log(m.bytes / m.time / base.memory_bandwidth), ++count;
  if (count == 0) throw Error("calibrate --backend cuda: every memory-bound kernel ran under 5 us");
  c.memory_efficiency = std::clamp(std::exp(log_sum / count), 1e-3, 1.0);
  double sq = 0;
  for (const auto& m : c.memory_ops)
    if (m.time >= 5e-6) sq += std::pow(std::log(m.bytes / m.time / base.memory_bandwidth / c.memory_efficiency), 2);
  c.memory_rms_log_error = std::sqrt(sq / count);

  measure_attention(c, base);
  log_sum = 0;
  for (const auto& a : c.attention) log_sum += std::log(a.efficiency);
  c.attention_efficiency = std::clamp(std::exp(log_sum / double(c.attention.size())), 1e-3, 1.0);

  if (c.devices > 1) {
    measure_nccl(c, c.devices);
    c.nccl = fit_collective_curve(c.collectives, base.intra_node.latency);
  } else {
    c.notes.push_back("NCCL curves kept from the base profile: one GPU");
  }
  return c;
}

HardwareProfile cuda_calibrated_profile(const CudaCalibration& c, const HardwareProfile& base, const std::string& date) {
  HardwareProfile hw = base;
  const std::string meas = "measurement: sixfold calibrate --backend cuda, " + c.device + ", " + c.driver + ", " + date;
  hw.description = base.description + " (calibrated on " + c.device + ", " + date + ")";
  hw.sm_count = c.sm_count;
  hw.provenance["sm_count"] = meas + ", cudaDeviceProp.multiProcessorCount";
  if (c.gemm) {
    hw.gemm = c.gemm->curve;
    const std::string src = meas + "; fit of max * s(m) s(n) s(k) * waves to " + std::to_string(c.gemm->points) +
                            " cuBLASLt GEMMs (transformer shapes, dtypes measured vs their datasheet peaks), rms log error " +
                            fmt("%.3g", c.gemm->rms_log_error);
    for (const char* p : {"gemm.max_efficiency", "gemm.half_dim", "gemm.tile"}) hw.provenance[p] = src;
  }
  hw.memory_efficiency = c.memory_efficiency;
  hw.provenance["memory_efficiency"] = meas + "; geometric mean of achieved / memory_bandwidth over copy, SwiGLU and "
                                              "RMSNorm kernels 2 MiB-512 MiB, rms log error " + fmt("%.3g", c.memory_rms_log_error);
  hw.attention_efficiency = c.attention_efficiency;
  hw.provenance["attention_efficiency"] = meas + "; geometric mean over sixfold flash attention forward+backward, seq "
                                                 "1024-8192, head dim 64 and 128, 16 heads, 8 KV heads";
  if (c.nccl) {
    hw.intra_node = c.nccl->curve;
    const std::string src = meas + "; NCCL all_reduce/all_gather/reduce_scatter on " + std::to_string(c.devices) +
                            " GPUs, 256 KiB-256 MiB, latency + busbw curve least squares, rms log error " +
                            fmt("%.3g", c.nccl->rms_log_error);
    hw.provenance["intra_node.peak_busbw"] = src;
    hw.provenance["intra_node.half_size"] = src;
    if (c.nccl->latency_fitted) hw.provenance["intra_node.latency"] = src;
  }
  return hw;
}

std::string cuda_calibration_json(const CudaCalibration& c, const std::string& date) {
  nlohmann::ordered_json j;
  j["device"] = c.device;
  j["driver"] = c.driver;
  j["runtime"] = c.runtime;
  j["date"] = date;
  j["devices"] = c.devices;
  j["sm_count"] = c.sm_count;
  j["memory_total_bytes"] = c.memory_total;
  for (const auto& g : c.gemms)
    j["gemms"].push_back({{"dtype", to_string(g.dtype)}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"time_s", g.time}, {"flops_per_s", g.rate}});
  for (const auto& m : c.memory_ops) j["memory_ops"].push_back({{"kernel", m.kernel}, {"bytes", m.bytes}, {"time_s", m.time}});
  for (const auto& a : c.attention)
    j["attention"].push_back({{"seq", a.seq}, {"heads", a.heads}, {"kv_heads", a.kv_heads}, {"head_dim", a.head_dim},
                              {"time_s", a.time}, {"efficiency", a.efficiency}});
  for (const auto& p : c.collectives) {
    const char* name = p.collective == Collective::AllReduce ? "all_reduce" : p.collective == Collective::AllGather ? "all_gather" : "reduce_scatter";
    j["collectives"].push_back({{"collective", name}, {"ranks", p.ranks}, {"bytes", p.message}, {"time_s", p.time}});
  }
  j["notes"] = c.notes;
  if (c.gemm)
    j["fit"]["gemm"] = {{"max_efficiency", c.gemm->curve.max_efficiency}, {"half_dim", c.gemm->curve.half_dim},
                        {"tile", c.gemm->curve.tile}, {"rms_log_error", c.gemm->rms_log_error}};
  j["fit"]["memory_efficiency"] = c.memory_efficiency;
  j["fit"]["attention_efficiency"] = c.attention_efficiency;
  if (c.nccl)
    j["fit"]["intra_node"] = {{"peak_busbw", c.nccl->curve.peak_busbw}, {"half_size", c.nccl->curve.half_size},
                              {"latency", c.nccl->curve.latency}, {"latency_fitted", c.nccl->latency_fitted},
                              {"rms_log_error", c.nccl->rms_log_error}};
  return j.dump(2) + "\n";
}

}  // namespace sixfold
