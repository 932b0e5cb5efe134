// The CUDA backend against the CPU backend: the same GEMMs on device tensors, the same tiny-model
// losses with every tensor in GPU memory, the same memory accounting by category.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "executor/backend/cpu/cpu_backend.hpp"
#include "executor/backend/cuda/cuda_backend.hpp"
#include "executor/runtime/model_runtime.hpp"
#include "executor/runtime/run.hpp"
#include "executor/comm/self_communicator.hpp"
#include "tiny_model.hpp"

using namespace sixfold;
using namespace sixfold::test;

namespace {

template <class T>
std::vector<T> random_matrix(long n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = T(u(rng));
  return v;
}

template <class T>
void check_gemm_against_cpu(Backend& gpu, Backend& cpu, double tolerance) {
  std::mt19937 rng(7);
  // Odd shapes (no multiple of 8 or 16) and every transpose combination, beta 0 and 1.
  for (auto [m, n, k] : {std::tuple{37L, 19L, 53L}, std::tuple{1L, 64L, 3L}, std::tuple{96L, 33L, 1L}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (T beta : {T(0), T(1)}) {
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(beta);
          const auto a = random_matrix<T>(m * k, rng), b = random_matrix<T>(k * n, rng);
          auto c_gpu = random_matrix<T>(m * n, rng);
          auto c_cpu = c_gpu;
          // The GPU's operands are device tensors, as the runtime's are.
          TrackedBuffer<T> da(&gpu.memory(), MemoryCategory::Buffers, m * k), db(&gpu.memory(), MemoryCategory::Buffers, k * n),
              dc(&gpu.memory(), MemoryCategory::Buffers, m * n);
          CHECK(cuda_is_device_memory(dc.data()));
          da.upload(a.data(), m * k);
          db.upload(b.data(), k * n);
          dc.upload(c_gpu.data(), m * n);
          gpu.gemm(ta, tb, m, n, k, T(0.5), da.data(), db.data(), beta, dc.data());
          dc.download(c_gpu.data(), m * n);
          cpu.gemm(ta, tb, m, n, k, T(0.5), a.data(), b.data(), beta, c_cpu.data());
          double worst = 0;
          for (long i = 0; i < m * n; ++i) worst = std::max(worst, std::abs(double(c_gpu[i]) - double(c_cpu[i])));
          CHECK(worst <= tolerance);
        }
}

}  // namespace

TEST_CASE("cuda backend: cuBLASLt fp32 and fp64 GEMMs on device tensors equal the CPU backend's") {
  auto gpu = make_cuda_backend(std::make_unique<SelfCommunicator>(), CudaBackendOptions{});
  CpuBackend cpu(std::make_unique<SelfCommunicator>());
  CHECK(gpu->name() == "cuda");
  check_gemm_against_cpu<float>(*gpu, cpu, 1e-4);
  check_gemm_against_cpu<double>(*gpu, cpu, 1e-12);
  const CudaDeviceMemory d = cuda_device_memory(*gpu);
  CHECK(d.workspace > 0);
  CHECK(d.comm_staging_peak == 0);  // one GPU: no NCCL
  CHECK(!cuda_device_name(*gpu).empty());
  CHECK(cuda_device_name(cpu).empty());
}

// Three float64 steps of `m` on one rank, on the GPU and on the CPU: the same losses.
static void check_gpu_losses_equal_cpu(const ModelSpec& m) {
  Layout l;
  RunOptions opt;
  opt.steps = 3;
  opt.precision = Precision::Float64;
  const RunReport cpu = run_plan(m, l, tiny_workload(), opt);
  opt.backend = "cuda";
  const RunReport gpu = run_plan(m, l, tiny_workload(), opt);
  REQUIRE(gpu.losses.size() == cpu.losses.size());
  for (size_t s = 0; s < cpu.losses.size(); ++s) CHECK(gpu.losses[s] == doctest::Approx(cpu.losses[s]).epsilon(1e-10));
}

TEST_CASE("cuda backend: LayerNorm + GELU with tied embeddings matches the CPU backend") {
  check_gpu_losses_equal_cpu(tiny_gpt_model());
}

TEST_CASE("cuda backend: a squared-ReLU MLP matches the CPU backend") {
  ModelSpec m = tiny_gpt_model();
  m.activation = Activation::SquaredReLU;
  check_gpu_losses_equal_cpu(m);
}

TEST_CASE("cuda backend: tiny model losses match the CPU backend (float32 and float64)") {
  Layout l;
  l.micro_batch = 2;  // 4 micro-batches: gradient accumulation through beta = 1 GEMMs
  RunOptions opt;
  opt.steps = 4;
  for (Precision p : {Precision::Float32, Precision::Float64}) {
    CAPTURE(to_string(p));
    opt.precision = p;
    opt.backend = "cpu";
    const RunReport cpu = run_plan(tiny_model(), l, tiny_workload(), opt);
    opt.backend = "cuda";
    const RunReport gpu = run_plan(tiny_model(), l, tiny_workload(), opt);
    REQUIRE(gpu.losses.size() == cpu.losses.size());
    // fp32: cuBLASLt and Eigen sum in different orders; 4 AdamW steps keep the losses within 1e-4.
    const double tolerance = p == Precision::Float32 ? 1e-4 : 1e-10;
    for (size_t s = 0; s < cpu.losses.size(); ++s) CHECK(gpu.losses[s] == doctest::Approx(cpu.losses[s]).epsilon(tolerance));
    CHECK(gpu.losses.back() < gpu.losses.front());
    CHECK(gpu.ops.size() == cpu.ops.size());
    for (size_t i = 0; i < gpu.ops.size() && i < cpu.ops.size(); ++i) CHECK(gpu.ops[i].id == cpu.ops[i].id);
  }
}

TEST_CASE("cuda backend: the runtime's parameters, gradients and optimizer state are in GPU memory") {
  auto gpu = make_cuda_backend(std::make_unique<SelfCommunicator>(), CudaBackendOptions{});
  Layout l;
  ProcessGroups groups = make_process_groups(l, gpu->world());
  ModelRuntime<float> runtime(tiny_model(true), l, tiny_workload(), groups, *gpu, 7, TrainingHyperparameters{});
  runtime.train_step(0);
  for (ParamGroup<float>* g : runtime.param_groups()) {
    CAPTURE(g->name());
    CHECK(cuda_is_device_memory(g->weight(0)));
    CHECK(cuda_is_device_memory(g->grad(0)));
  }
  CHECK(std::isfinite(runtime.weight_checksum()));
}

TEST_CASE("cuda backend: memory accounting by category equals the CPU backend's") {
  Layout l;
  l.micro_batch = 4;
  RunOptions opt;
  opt.steps = 2;
  const RunReport cpu = run_plan(tiny_model(true), l, tiny_workload(), opt);
  opt.backend = "cuda";
  const RunReport gpu = run_plan(tiny_model(true), l, tiny_workload(), opt);
  REQUIRE(gpu.memory_per_rank.size() == 1);
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    CAPTURE(to_string(MemoryCategory(c)));
    CHECK(gpu.memory_per_rank[0].peak_by_category[c] == cpu.memory_per_rank[0].peak_by_category[c]);
  }
  CHECK(gpu.memory_per_rank[0].peak_total == cpu.memory_per_rank[0].peak_total);
  CHECK(gpu.memory_per_rank[0].peak_by_category[int(MemoryCategory::Weights)] > 0);
}

TEST_CASE("cuda backend: an emulated rank of a bigger layout runs on one GPU, with the CPU's losses") {
  // No NCCL world for an emulated rank; its collectives copy device tensors through the backend.
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.pp = 2;
  l.dp = 2;
  l.zero = 3;
  RunOptions opt;
  opt.steps = 2;
  opt.precision = Precision::Float64;
  opt.emulate_rank = 5;
  const RunReport cpu = run_plan(tiny_model(), l, tiny_workload(), opt);
  opt.backend = "cuda";
  const RunReport gpu = run_plan(tiny_model(), l, tiny_workload(), opt);
  REQUIRE(gpu.losses.size() == cpu.losses.size());
  for (size_t s = 0; s < cpu.losses.size(); ++s) CHECK(gpu.losses[s] == doctest::Approx(cpu.losses[s]).epsilon(1e-10));
}
