#include "executor/calibrate/cpu_calibration.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <unistd.h>

#include "executor/backend/cpu/cpu_backend.hpp"
#include "executor/comm/self_communicator.hpp"
#include "executor/runtime/measured_op_class.hpp"
#include "executor/runtime/run.hpp"
#include "kernels/activation_ref.hpp"
#include "kernels/attention_ref.hpp"
#include "kernels/rope_ref.hpp"
#include "simulator/cost_model.hpp"

namespace sixfold {

namespace {

using Clock = std::chrono::steady_clock;

// Best time of one call of f over 5 rounds, each round repeating f until it has run >= 2 ms (so
// that the clock's resolution and one-off cache misses do not dominate small ops).
template <class F>
Seconds best_time(F&& f) {
  f();  // warm-up: first touch of the buffers
  Seconds best = 1e30;
  for (int round = 0; round < 5; ++round) {
    long calls = 0;
    const auto start = Clock::now();
    Seconds elapsed = 0;
    do {
      f();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < 2e-3);
    best = std::min(best, elapsed / double(calls));
  }
  return best;
}

double s_of(double x, double half) { return x / (x + half); }

// GEMM shapes of the tiny transformers the executor runs (rows = micro-batch x sequence 32..512,
// hidden 64..256, head/FFN widths 16..512), plus larger squares that find the plateau.
std::vector<GemmSample> measure_gemms(Backend& cpu) {
  std::vector<GemmSample> out;
  std::vector<std::array<long, 3>> shapes;
  for (long m : {32L, 64L, 128L, 256L, 512L})
    for (long n : {16L, 64L, 128L, 256L})
      for (long k : {16L, 64L, 128L, 256L}) shapes.push_back({m, n, k});
  for (long x : {384L, 512L, 768L}) shapes.push_back({x, x, x});
  for (const auto& shape : shapes) {
    const long m = shape[0], n = shape[1], k = shape[2];  // not a structured binding: lambdas capture these (clang 14)
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n, 0.f);
    const Seconds t = best_time([&] { cpu.gemm(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data()); });
    out.push_back({m, n, k, t, 2.0 * double(m) * double(n) * double(k) / t});
  }
  return out;
}

// copy (8 B per element: read + write) and axpy (12 B: two reads, one write), 1 KiB to 64 MiB.
std::vector<SizeSample> measure_memory_ops() {
  std::vector<SizeSample> out;
  for (long n = 256; n <= (16L << 20); n *= 4) {
    std::vector<float> x(n, 1.0f), y(n, 2.0f);
    const Seconds copy = best_time([&] { std::copy(x.begin(), x.end(), y.begin()); });
    out.push_back({Bytes(8 * n), copy});
    const Seconds axpy = best_time([&] {
      for (long i = 0; i < n; ++i) y[i] += 0.5f * x[i];
    });
    out.push_back({Bytes(12 * n), axpy});
  }
  return out;
}

// The executor's element-wise kernels (SwiGLU, RoPE) at the tiny transformer's sizes, as rates over
// the bytes the cost model charges them (models/step_program.cpp: activation 3 T f a, rope
// 2 T (q + k) a): they compute transcendentals, so they run below the copy bandwidth.
std::vector<double> measure_elementwise_rates() {
  std::vector<double> rates;
  for (long tokens : {64L, 128L, 256L}) {
    const long f = 128;
    std::vector<float> gate(tokens * f, 0.3f), up(tokens * f, 0.7f), act(tokens * f);
    const Seconds t_act = best_time([&] { swiglu_forward_ref(gate.data(), up.data(), act.data(), tokens * f); });
    rates.push_back(3.0 * tokens * f * 4 / t_act);
    const int heads = 6, d = 16;  // q and k heads together
    std::vector<float> x(tokens * heads * d, 0.5f), y(tokens * heads * d);
    std::vector<int> pos(tokens);
    std::iota(pos.begin(), pos.end(), 0);
    const Seconds t_rope = best_time([&] {
      rope_forward_ref(x.data(), y.data(), pos.data(), int(tokens), heads, d, d, 10000.0);
    });
    rates.push_back(2.0 * tokens * heads * d * 4 / t_rope);
  }
  return rates;
}

struct AttentionCalibration {
  double efficiency = 0, lowest = 0, highest = 0;
};

// The reference attention (forward + backward) of one sequence, against the time the cost model
// would give it at efficiency 1.
double attention_efficiency_at(FlopsPerSec peak, int S, int d) {
  const int heads = 4, kv_heads = 2;
  std::vector<float> q(S * heads * d, 0.1f), k(S * kv_heads * d, 0.2f), v(S * kv_heads * d, 0.3f);
  std::vector<float> out(S * heads * d), lse(heads * S), dq(S * heads * d), dk(S * kv_heads * d), dv(S * kv_heads * d);
  std::vector<int> pos(S);
  std::iota(pos.begin(), pos.end(), 0);
  const float scale = 1.0f / std::sqrt(float(d));
  const Seconds t = best_time([&] {
    attention_forward_ref(q.data(), k.data(), v.data(), out.data(), lse.data(), pos.data(), pos.data(), S, S, heads,
                          kv_heads, d, scale);
    attention_backward_ref(out.data(), q.data(), k.data(), v.data(), out.data(), lse.data(), dq.data(), dk.data(),
                           dv.data(), pos.data(), pos.data(), S, S, heads, kv_heads, d, scale);
  });
  // simulator/op_cost.cpp prices attention as flops / (peak * efficiency * head factor), with the
  // forward's causal flops 2 T (s/2) heads (d_qk + d_v) and the backward 2.5 times that.
  const double flops = 3.5 * 2.0 * S * (S / 2.0) * heads * (2.0 * d);
  const double head = std::min(1.0, double(d) / (double(d) + 32.0) / (128.0 / 160.0));
  return std::clamp(flops / (t * peak * head), 1e-4, 1.0);
}

// One efficiency for the shapes CPU runs use (sequence 64-256, head dim 16-64): the geometric
// mean over that grid. The head-dim factor of the price is a GPU kernel's (flash attention gets
// faster per FLOP with wider heads); the reference kernel does not, so one shape alone (the
// calibration used seq 64, head dim 16 until 2026-12) misprices the others by up to 2x.
AttentionCalibration measure_attention_efficiency(FlopsPerSec peak) {
  AttentionCalibration a;
  double log_sum = 0;
  int n = 0;
  for (int S : {64, 128, 256})
    for (int d : {16, 32, 64}) {
      const double e = attention_efficiency_at(peak, S, d);
      a.lowest = n == 0 ? e : std::min(a.lowest, e);
      a.highest = std::max(a.highest, e);
      log_sum += std::log(e);
      ++n;
    }
  a.efficiency = std::exp(log_sum / n);
  return a;
}

std::vector<SizeSample> measure_all_reduce(Communicator& world) {
  std::vector<SizeSample> out;
  for (long n = 256; n <= (4L << 20); n *= 4) {
    std::vector<float> buf(n, 1.0f);
    world.barrier();
    // Every rank must run the same number of calls: a fixed count, sized from the message.
    const int calls = int(std::clamp(long(2e7 / (4.0 * double(n) + 2e4)), 4L, 2000L));
    Seconds best = 1e30;
    for (int round = 0; round < 3; ++round) {
      world.barrier();
      const auto start = Clock::now();
      for (int i = 0; i < calls; ++i) world.all_reduce_sum(buf.data(), n);
      double t = std::chrono::duration<double>(Clock::now() - start).count() / calls;
      world.all_reduce_max(&t, 1);
      best = std::min(best, t);
    }
    out.push_back({Bytes(4 * n), best});
  }
  return out;
}

// max_efficiency and half_dim minimising the squared log error of the efficiency (tile quantisation
// off: one rank is one core, sm_count 1).
void fit_gemm(CpuCalibration& c) {
  double best = 1e30;
  for (double half = 1; half <= 1024; half *= 1.05) {
    // For a fixed half_dim the optimal log(max) is the mean log residual.
    double sum = 0;
    for (const auto& g : c.gemms) sum += std::log(g.rate / c.peak_fp32) - std::log(s_of(g.m, half) * s_of(g.n, half) * s_of(g.k, half));
    const double log_max = std::min(0.0, sum / double(c.gemms.size()));
    double err = 0;
    for (const auto& g : c.gemms) {
      const double r = std::log(g.rate / c.peak_fp32) - log_max - std::log(s_of(g.m, half) * s_of(g.n, half) * s_of(g.k, half));
      err += r * r;
    }
    if (err < best) {
      best = err;
      c.gemm.max_efficiency = std::exp(log_max);
      c.gemm.half_dim = half;
    }
  }
  c.gemm.tile = 64;
  c.gemm_rms_log_error = std::sqrt(best / double(c.gemms.size()));
}

// time = overhead + bytes / effective_bandwidth, least squares on relative error (weights 1/t^2).
void fit_memory(CpuCalibration& c) {
  double s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0;
  for (const auto& s : c.memory_ops) {
    const double w = 1.0 / (s.time * s.time);
    s00 += w;
    s01 += w * s.bytes;
    s11 += w * s.bytes * s.bytes;
    r0 += w * s.time;
    r1 += w * s.bytes * s.time;
    c.memory_bandwidth = std::max(c.memory_bandwidth, s.bytes / s.time);
  }
  const double det = s00 * s11 - s01 * s01;
  const double overhead = (r0 * s11 - r1 * s01) / det, per_byte = (s00 * r1 - s01 * r0) / det;
  (void)per_byte;
  c.kernel_overhead = std::max(0.0, overhead);
  double log_sum = 0;
  // Efficiency: geometric mean, over the element-wise kernels and the copy/axpy runs up to 1 MiB
  // (the sizes of the tiny model's residual adds, norms and optimizer shards), of rate / best rate.
  // One efficiency cannot fit both: RoPE and SwiGLU (transcendentals) run ~100x below a copy.
  int count = 0;
  for (double r : c.elementwise_rates) log_sum += std::log(r / c.memory_bandwidth), ++count;
  for (const auto& s : c.memory_ops)
    if (s.bytes <= double(kMiB)) log_sum += std::log(s.bytes / s.time / c.memory_bandwidth), ++count;
  c.memory_efficiency = std::clamp(std::exp(log_sum / double(count)), 1e-3, 1.0);
}

void fit_all_reduce(CpuCalibration& c) {
  const double n = c.ranks, factor = 2.0 * (n - 1) / n;  // nccl-tests all-reduce bus factor
  for (const auto& s : c.all_reduces) c.mpi.peak_busbw = std::max(c.mpi.peak_busbw, factor * s.bytes / s.time);
  // latency and half_size jointly, minimising the squared log error of the time.
  double best = 1e30;
  for (double latency = 1e-7; latency <= 1e-3; latency *= 1.1) {
    for (double half = 64; half <= 256.0 * kMiB; half *= 1.1) {
      double err = 0;
      for (const auto& s : c.all_reduces) {
        const double busbw = c.mpi.peak_busbw * s.bytes / (s.bytes + half);
        const double r = std::log((latency + factor * s.bytes / busbw) / s.time);
        err += r * r;
      }
      if (err < best) {
        best = err;
        c.mpi.half_size = half;
        c.mpi.latency = latency;
      }
    }
  }
  c.mpi_rms_log_error = std::sqrt(best / double(c.all_reduces.size()));
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// The runner's own ops: a small model (2 layers, hidden 128, seq 64; smaller than anything a user
// would run, so that what is then predicted is not what was fitted) trained on this rank, its last
// step timed per op class, against the profile fitted so far. Attention and the memory-bound
// classes are rescaled so that their predicted time is the measured one: the kernel sweeps above
// time the kernels alone and miss what the runtime does around the same kernels (GQA head
// mapping, per-sequence loops over a micro-batch, copies). GEMMs keep the sweep's fit.
void fit_from_runner(CpuCalibration& c) {
  ModelSpec m;
  m.name = "calibration";
  m.layers = 2;
  m.hidden = 128;
  m.ffn = 344;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 32;
  m.vocab = 512;
  m.max_seq = 64;
  m.norm = NormKind::RMSNorm;
  m.activation = Activation::SwiGLU;
  Workload w;
  w.seq = 64;
  w.global_batch = 2;
  w.dtype = Dtype::FP32;
  Layout l;
  l.micro_batch = 2;
  RunOptions opt;
  opt.steps = 3;  // the last one is timed: the first touches every buffer
  const RunReport run = run_plan_on(m, l, w, opt, std::make_unique<SelfCommunicator>());
  std::map<std::string, Seconds> measured = last_step_by_class(run);
  const HardwareProfile hw = parse_hardware(cpu_profile_yaml(c, "calibration", "this host", "today"), "calibration");
  std::map<std::string, Seconds> predicted;
  for (const auto& [cls, t] : predict(m, hw, w, l).compute_by_op_class) predicted[cls] += t;
  auto ratio = [&](std::initializer_list<const char*> classes) {
    Seconds p = 0, q = 0;
    for (const char* cls : classes) p += predicted[cls], q += measured[cls];
    return p > 0 && q > 0 ? p / q : 1.0;
  };
  for (const auto& [cls, t] : measured) c.runner_classes.push_back({cls, t, predicted[cls]});
  c.runner_attention_ratio = ratio({"attention"});
  c.runner_memory_ratio = ratio({"norm", "elementwise", "embedding", "loss"});
  c.attention_efficiency = std::clamp(c.attention_efficiency * c.runner_attention_ratio, 1e-4, 1.0);
  c.memory_efficiency = std::clamp(c.memory_efficiency * c.runner_memory_ratio, 1e-4, 1.0);
}

}  // namespace

CpuCalibration calibrate_cpu(Communicator& world) {
  CpuCalibration c;
  c.ranks = world.size();
  CpuBackend cpu(std::make_unique<SelfCommunicator>());
  c.gemms = measure_gemms(cpu);
  for (const auto& g : c.gemms) c.peak_fp32 = std::max(c.peak_fp32, g.rate);
  fit_gemm(c);
  c.memory_ops = measure_memory_ops();
  c.elementwise_rates = measure_elementwise_rates();
  fit_memory(c);
  const AttentionCalibration attention = measure_attention_efficiency(c.peak_fp32);
  c.attention_efficiency = attention.efficiency;
  c.attention_efficiency_lowest = attention.lowest;
  c.attention_efficiency_highest = attention.highest;
  if (c.ranks > 1) {
    c.all_reduces = measure_all_reduce(world);
    fit_all_reduce(c);
  }
  c.host_memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  fit_from_runner(c);
  return c;
}

std::string cpu_profile_yaml(const CpuCalibration& c, const std::string& name, const std::string& host,
                             const std::string& date) {
  const std::string meas = "measurement: sixfold calibrate --backend cpu, " + host + ", " + date;
  auto q = [](const std::string& s) { return "\"" + s + "\""; };
  auto v = [&](const std::string& value, const std::string& source) { return "{value: " + value + ", source: " + q(source) + "}"; };
  const double tflops = c.peak_fp32 / 1e12;
  std::ostringstream y;
  y << "# CPU ranks of the executor (Eigen GEMMs, reference kernels, MPI), measured by `sixfold calibrate\n"
    << "# --backend cpu` on " << host << " (" << date << ", " << c.ranks << " rank(s)). One rank = one core.\n"
    << "# Format: docs/hardware-profiles.md. Fields a CPU lacks (NVLink, network) carry the MPI\n"
    << "# shared-memory figures measured between the ranks of the calibration, or priors that say so.\n";
  y << "name: " << name << "\n";
  y << "description: " << q("CPU rank of the sixfold executor on " + host + " (fp32, Eigen + MPI shared memory)") << "\n";
  y << "peak_tflops:\n";
  y << "  fp32: " << v(fmt("%.6g", tflops), meas + ", best Eigen fp32 GEMM rate of " + std::to_string(c.gemms.size()) + " shapes") << "\n";
  y << "  bf16: " << v(fmt("%.6g", tflops), "prior: the CPU backend has no bf16 path; the loader requires bf16, set to the measured fp32 GEMM rate") << "\n";
  y << "memory_capacity: " << v(fmt("%.0fB", c.host_memory), meas + ", physical memory of the host (sysconf)") << "\n";
  y << "memory_bandwidth: " << v(fmt("%.6gGB/s", c.memory_bandwidth / 1e9), meas + ", best copy/axpy rate over 1 KiB-192 MiB") << "\n";
  y << "sm_count: " << v("1", "prior: one rank runs one Eigen thread, so GEMM tiles are not spread over units (no wave quantisation)") << "\n";
  y << "gpus_per_node: " << v("64", "prior: ranks of one host share its memory; MPI shared-memory transport between any of them") << "\n";
  const bool mpi = !c.all_reduces.empty();
  const std::string mpi_src = mpi ? meas + ", MPI all_reduce of " + std::to_string(c.ranks) + " ranks over shared memory" : "";
  const double busbw = mpi ? c.mpi.peak_busbw : c.memory_bandwidth / 2;
  const std::string link_src = mpi ? mpi_src + ", plateau bus bandwidth"
                                   : "prior: calibrated on one rank; half the copy bandwidth (a message is written then read)";
  y << "intra_node_bandwidth: " << v(fmt("%.6gGB/s", busbw / 1e9), link_src) << "\n";
  y << "pcie_only: " << v("false", "prior: ranks exchange through shared memory, not PCIe") << "\n";
  y << "network_bandwidth: " << v(fmt("%.6gGB/s", busbw / 1e9), link_src + "; one host has no network, the shared-memory figure stands in") << "\n";
  const double lat = mpi ? c.mpi.latency : 5e-6;
  y << "network_latency: " << v(fmt("%.6gus", lat * 1e6), mpi ? "fit: " + mpi_src + ", all_reduce latency of the busbw fit" : "prior: 5 us per MPI call over shared memory, not measured (one rank)") << "\n";
  y << "gemm:\n";
  y << "  max_efficiency: " << v(fmt("%.4f", c.gemm.max_efficiency), "fit: " + meas + ", efficiency = max * s(m) s(n) s(k) over the measured shapes, rms log error " + fmt("%.3f", c.gemm_rms_log_error)) << "\n";
  y << "  half_dim: " << v(fmt("%.4g", c.gemm.half_dim), "fit: same fit as gemm.max_efficiency") << "\n";
  y << "  tile: " << v(std::to_string(c.gemm.tile), "prior: unused with sm_count 1") << "\n";
  y << "attention_efficiency: " << v(fmt("%.4g", c.attention_efficiency), "fit: " + meas + ", geometric mean over the reference attention forward+backward at seq 64/128/256 x head dim 16/32/64 (4 heads, 2 KV heads; " + fmt("%.4g", c.attention_efficiency_lowest) + " to " + fmt("%.4g", c.attention_efficiency_highest) + ") against the cost model's attention price at efficiency 1, times " + fmt("%.3f", c.runner_attention_ratio) + " so that the runner's attention in a step of a 2-layer hidden-128 model is priced as measured") << "\n";
  y << "memory_efficiency: " << v(fmt("%.4f", c.memory_efficiency), "fit: " + meas + ", geometric mean of rate / memory_bandwidth over the executor's SwiGLU and RoPE reference kernels (cost-model bytes) and copy/axpy up to 1 MiB, times " + fmt("%.3f", c.runner_memory_ratio) + " so that the runner's norm, element-wise, embedding and loss ops in a step of a 2-layer hidden-128 model are priced as measured") << "\n";
  for (const char* level : {"intra_node", "inter_node"}) {
    y << level << ":\n";
    y << "  peak_busbw: " << v(fmt("%.6gGB/s", busbw / 1e9), link_src) << "\n";
    const std::string fit_src = "fit: " + mpi_src + ", latency and half size by log-time least squares 1 KiB-16 MiB, rms log error " + fmt("%.3f", c.mpi_rms_log_error);
    y << "  half_size: " << v(fmt("%.6gKiB", (mpi ? c.mpi.half_size : 65536.0) / 1024), mpi ? fit_src : "prior: 64 KiB, not measured (one rank)") << "\n";
    y << "  latency: " << v(fmt("%.6gus", lat * 1e6), mpi ? fit_src : "prior: 5 us, not measured (one rank)") << "\n";
  }
  y << "context_memory: " << v("0B", "prior: a CPU rank holds no CUDA context or library workspaces") << "\n";
  y << "kernel_overhead: " << v(fmt("%.6gus", c.kernel_overhead * 1e6), "fit: " + meas + ", fixed time per op of the copy/axpy fit") << "\n";
  return y.str();
}

}  // namespace sixfold
