// gpu_kernels_bench: throughput of the two kernels that dominate a training step, timed with CUDA
// events after warm-up (median of the timed repetitions):
//   - cuBLASLt bf16 GEMM, fp32 accumulation, 8192^3 (FLOPs = 2 m n k);
//   - sixfold's flash attention, causal, seq 4096, head dim 128, 32 query / 8 KV heads, forward
//     and backward (FLOPs of causal attention: forward 4 t^2 d h / 2, backward 2.5x forward, the
//     FlashAttention-2 paper's convention).
// The GEMM result is spot-checked against fp64 dot products on the host (nccl-tests habit: a
// benchmark that computes garbage fast must not report a figure).
// Usage: gpu_kernels_bench [--json] [--iters N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda_common.cuh"

using namespace sixfold;
using namespace sixfold::cuda;

namespace {

// Deterministic pseudo-random bf16 in [-1, 1) from an integer hash (no host round trip).
__global__ void fill_random_kernel(bf16* out, long n, unsigned seed) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ (seed * 0x9e3779b9u) ^ unsigned(i >> 32);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    out[i] = to_bf16(float(h & 0xffffff) / float(0x800000) - 1.0f);
  }
}

bf16* random_device(long n, unsigned seed) {
  void* p = device_alloc(sizeof(bf16) * n);
  fill_random_kernel<<<elementwise_blocks(n, 256), 256>>>(static_cast<bf16*>(p), n, seed);
  CHECK_LAUNCH();
  return static_cast<bf16*>(p);
}

// Median milliseconds of `iters` timed runs after `warmup` untimed ones.
double time_ms(const std::function<void()>& run, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) run();
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    run();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms[i], start, stop));
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[iters / 2];
}

struct Result {
  std::string name, shape;
  double flops, ms;
  bool checked;
  double max_error;
};

std::vector<float> download_bf16(const bf16* p, long offset, long n) {
  std::vector<Bf16> raw(n);
  copy_to_host(raw.data(), p + offset, sizeof(bf16) * n);
  std::vector<float> out(n);
  for (long i = 0; i < n; ++i) out[i] = bf16_to_float(raw[i]);
  return out;
}

Result bench_gemm(int size, int iters) {
  const long n = long(size) * size;
  bf16* a = random_device(n, 1);
  bf16* b = random_device(n, 2);
  bf16* c = static_cast<bf16*>(device_alloc(sizeof(bf16) * n));
  CublasLtGemm gemm;
  auto run = [&] {
    gemm.matmul(reinterpret_cast<Bf16*>(a), reinterpret_cast<Bf16*>(b), reinterpret_cast<Bf16*>(c), size, size, size,
                false, false);
  };
  const double ms = time_ms(run, 3, iters);
  // Spot check 16 entries of C = A B against fp64 on the host.
  // The error is relative to the typical magnitude of an entry, sqrt(k)/sqrt(3) for uniform [-1, 1).
  double max_error = 0;
  const auto b_host = download_bf16(b, 0, n);
  for (int s = 0; s < 16; ++s) {
    const long i = (s * 2654435761u) % size, j = (s * 40503u + 7) % size;
    const auto row = download_bf16(a, i * size, size);
    double want = 0;
    for (int p = 0; p < size; ++p) want += double(row[p]) * b_host[long(p) * size + j];
    const double got = download_bf16(c, i * size + j, 1)[0];
    max_error = std::max(max_error, std::fabs(got - want) / (std::sqrt(double(size) / 3.0)));
  }
  device_free(a);
  device_free(b);
  device_free(c);
  const std::string shape = std::to_string(size) + "x" + std::to_string(size) + "x" + std::to_string(size);
  return {"gemm_bf16_cublaslt", shape, 2.0 * size * double(size) * size, ms, max_error < 0.05, max_error};
}

std::vector<Result> bench_attention(int seq, int heads, int kv_heads, int d, int iters) {
  const long nq = long(seq) * heads * d, nk = long(seq) * kv_heads * d;
  bf16* q = random_device(nq, 3);
  bf16* k = random_device(nk, 4);
  bf16* v = random_device(nk, 5);
  bf16* dout = random_device(nq, 6);
  bf16* out = static_cast<bf16*>(device_alloc(sizeof(bf16) * nq));
  float* lse = static_cast<float*>(device_alloc(sizeof(float) * heads * seq));
  float* dq = static_cast<float*>(device_alloc(sizeof(float) * nq));
  float* dk = static_cast<float*>(device_alloc(sizeof(float) * nk));
  float* dv = static_cast<float*>(device_alloc(sizeof(float) * nk));
  void* workspace = device_alloc(flash_attention_backward_workspace_bytes(seq, heads));
  std::vector<int> positions(seq);
  for (int i = 0; i < seq; ++i) positions[i] = i;
  int* pos = static_cast<int*>(device_alloc(sizeof(int) * seq));
  copy_to_device(pos, positions.data(), sizeof(int) * seq);
  const float scale = 1.0f / std::sqrt(float(d));
  auto* Q = reinterpret_cast<Bf16*>(q);
  auto* K = reinterpret_cast<Bf16*>(k);
  auto* V = reinterpret_cast<Bf16*>(v);
  auto* O = reinterpret_cast<Bf16*>(out);
  auto* dO = reinterpret_cast<Bf16*>(dout);
  const double ms_fwd = time_ms([&] { flash_attention_forward(Q, K, V, O, lse, pos, pos, seq, seq, heads, kv_heads, d, scale); }, 3, iters);
  const double ms_bwd = time_ms(
      [&] {
        flash_attention_backward(dO, Q, K, V, O, lse, dq, dk, dv, pos, pos, seq, seq, heads, kv_heads, d, scale,
                                 workspace);
      },
      2, iters);
  // A forward output must be finite and bounded by max |v| = 1 (a convex combination of rows of V).
  const auto sample = download_bf16(out, 0, std::min<long>(nq, 1 << 16));
  double max_abs = 0;
  bool finite = true;
  for (float x : sample) {
    finite = finite && std::isfinite(x);
    max_abs = std::max(max_abs, double(std::fabs(x)));
  }
  for (void* p : std::initializer_list<void*>{q, k, v, dout, out, lse, dq, dk, dv, workspace, pos}) device_free(p);
  const double fwd_flops = 4.0 * double(seq) * seq * d * heads / 2.0;
  const std::string shape = "seq" + std::to_string(seq) + " h" + std::to_string(heads) + "/" +
                            std::to_string(kv_heads) + " d" + std::to_string(d);
  const bool ok = finite && max_abs <= 1.0 + 1e-2;
  return {{"flash_attention_fwd", shape, fwd_flops, ms_fwd, ok, max_abs},
          {"flash_attention_bwd", shape, 2.5 * fwd_flops, ms_bwd, ok, max_abs}};
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) iters = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--json] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  if (device_count() == 0) {
    std::fprintf(stderr, "gpu_kernels_bench: no CUDA device\n");
    return 77;
  }
  try {
    const std::string device = device_name(0);
    std::vector<Result> results;
    results.push_back(bench_gemm(8192, iters));
    for (auto& r : bench_attention(4096, 32, 8, 128, iters)) results.push_back(r);
    if (json) {
      std::printf("{\n  \"schema\": \"sixfold.gpu_kernels_bench.v1\",\n  \"device\": \"%s\",\n  \"iters\": %d,\n"
                  "  \"results\": [\n", device.c_str(), iters);
      for (std::size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        std::printf("    {\"name\": \"%s\", \"shape\": \"%s\", \"flops\": %.6e, \"median_ms\": %.6f, "
                    "\"tflops_per_s\": %.3f, \"check_passed\": %s, \"check_value\": %.6g}%s\n",
                    r.name.c_str(), r.shape.c_str(), r.flops, r.ms, r.flops / (r.ms * 1e-3) / 1e12,
                    r.checked ? "true" : "false", r.max_error, i + 1 < results.size() ? "," : "");
      }
      std::printf("  ]\n}\n");
    } else {
      std::printf("# device: %s, median of %d timed runs (CUDA events)\n", device.c_str(), iters);
      std::printf("%-22s %-22s %12s %12s %8s\n", "kernel", "shape", "time (ms)", "TFLOP/s", "check");
      for (const Result& r : results)
        std::printf("%-22s %-22s %12.3f %12.1f %8s\n", r.name.c_str(), r.shape.c_str(), r.ms,
                    r.flops / (r.ms * 1e-3) / 1e12, r.checked ? "ok" : "FAIL");
    }
    bool all_ok = true;
    for (const Result& r : results) all_ok = all_ok && r.checked;
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_kernels_bench: %s\n", e.what());
    return 1;
  }
}
