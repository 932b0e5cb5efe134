// One libFuzzer executable per target: SIXFOLD_FUZZ_TARGET names the body in fuzz_targets.cpp.
#include <cstdio>

#include "tests/fuzz/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sixfold::fuzz::SIXFOLD_FUZZ_TARGET(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
