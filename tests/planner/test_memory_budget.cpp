// The planner's default memory budget leaves room for the memory model's own error, measured: the
// under-prediction of peak memory that 90% of new runs stay within, from the measured runs' peak
// memory (planner/planner.hpp, kMemoryUnderPredictionMargin).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "common/csv.hpp"
#include "planner/planner.hpp"
#include "simulator/fit/validation.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

TEST_CASE("the default budget's margin is the 90% conformal bound of the measured peak-memory under-predictions") {
  // Nothing in the cost model is fitted to memory, so the fit-free errors are out of source.
  const CsvTable table = read_csv(std::string(SIXFOLD_DATA_DIR) + "/validation/published_runs.csv");
  const ValidationReport rep = validate_runs(table, ValidationOptions{});
  std::vector<double> under;  // how far below the measured peak each prediction fell, as a fraction
  for (const RowResult& r : rep.rows) {
    auto it = r.error_pct.find("peak_mem_gib");
    if (r.scored && it != r.error_pct.end()) under.push_back(std::max(0.0, -it->second / 100));
  }
  REQUIRE(under.size() >= 10);
  std::sort(under.begin(), under.end());
  const size_t n = under.size(), k = size_t(std::ceil(0.9 * double(n + 1) - 1e-9));
  REQUIRE(k <= n);
  // If the memory model changes, this changes: update kMemoryUnderPredictionMargin and README.
  CHECK_MESSAGE(kMemoryUnderPredictionMargin == doctest::Approx(under[k - 1]).epsilon(0.002),
                "the " << k << "-th smallest of " << n << " under-predictions is " << under[k - 1]);
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  CHECK(default_memory_budget(hw) == doctest::Approx(hw.memory_capacity / (1 + kMemoryUnderPredictionMargin)));
  // A layout planned at the budget still fits when the model under-predicts it by the margin.
  CHECK(default_memory_budget(hw) * (1 + under[k - 1]) <= hw.memory_capacity * 1.0001);
}
