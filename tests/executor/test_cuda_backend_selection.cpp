// `--backend cuda` either runs or says why not: "built without CUDA" in a CPU-only build, "no
// CUDA device" in a CUDA build on a machine without a GPU.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "executor/runtime/run.hpp"
#include "tiny_model.hpp"
#ifdef SIXFOLD_HAVE_CUDA
#include "kernels/cuda_kernels.hpp"
#endif

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("run --backend cuda: runs on a GPU, else a usage error saying why") {
  RunOptions opt;
  opt.backend = "cuda";
  opt.steps = 1;
  Layout l;
  l.micro_batch = 4;
  bool has_device = false;
#ifdef SIXFOLD_HAVE_CUDA
  has_device = cuda::device_count() > 0;
#endif
  if (has_device) {
    CHECK(run_plan(tiny_model(), l, tiny_workload(), opt).losses.size() == 1);
    return;
  }
  std::string message;
  try {
    run_plan(tiny_model(), l, tiny_workload(), opt);
  } catch (const UsageError& e) {
    message = e.what();
  }
#ifdef SIXFOLD_HAVE_CUDA
  CHECK(message.find("no CUDA device") != std::string::npos);
#else
  CHECK(message.find("built without CUDA") != std::string::npos);
#endif
  opt.backend = "tpu";
  CHECK_THROWS_AS(run_plan(tiny_model(), l, tiny_workload(), opt), UsageError);
}

#ifdef SIXFOLD_HAVE_CUDA
#include <cublasLt.h>

#include <fstream>
#include <sstream>

namespace {
bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(library) != std::string::npos;
}
}  // namespace

// kernels/cublaslt_loader.cu: the first cuBLASLt call loads the real library (no GPU needed to
// ask it for a status name); a failure to load would answer the loader's own fallback text.
TEST_CASE("cuBLASLt is loaded on its first call, from the real library") {
  CHECK(std::string(cublasLtGetStatusName(CUBLAS_STATUS_SUCCESS)) == "CUBLAS_STATUS_SUCCESS");
  CHECK(std::string(cublasLtGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(mapped("libcublasLt.so"));
}
#endif
