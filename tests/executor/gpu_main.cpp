// Main of the executor's GPU tests: without a CUDA device it returns 77, which CTest reports as
// "skipped" (SKIP_RETURN_CODE in tests/executor/CMakeLists.txt), so CPU-only machines stay green.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "kernels/cuda_kernels.hpp"

int main(int argc, char** argv) {
  if (sixfold::cuda::device_count() == 0) {
    std::printf("no CUDA device: executor GPU tests skipped\n");
    return 77;
  }
  std::printf("executor GPU tests on %s\n", sixfold::cuda::device_name(0).c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
