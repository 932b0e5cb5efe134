#include <doctest/doctest.h>

#include "common/error.hpp"
#include "executor/runtime/memory_tracker.hpp"

using namespace sixfold;

TEST_CASE("memory tracker: buffers charge and release their category, peaks persist") {
  MemoryTracker t;
  {
    TrackedBuffer<double> w(&t, MemoryCategory::Weights, 10);
    TrackedBuffer<float> a(&t, MemoryCategory::Activations, 4);
    CHECK(t.current(MemoryCategory::Weights) == 80);
    CHECK(t.current(MemoryCategory::Activations) == 16);
    TrackedBuffer<float> moved = std::move(a);
    CHECK(t.current(MemoryCategory::Activations) == 16);
  }
  CHECK(t.current_total() == 0);
  CHECK(t.peak(MemoryCategory::Weights) == 80);
  CHECK(t.peak_total() == 96);
  CHECK_THROWS_AS(t.release(MemoryCategory::Buffers, 1), Error);
}
