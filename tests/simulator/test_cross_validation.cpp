// Out-of-source cross-validation (`calibrate --cv source`, simulator/fit/profile_fit.hpp): each
// source is scored with terms fitted on the others only, and what is reported per fold and pooled.
#include <doctest/doctest.h>

#include <set>

#include "common/csv.hpp"
#include "simulator/fit/profile_fit.hpp"

using namespace sixfold;

namespace {

// Three sources of the project's published runs: Megatron-Core's README (D1-D4), NeMo's
// performance table (M1, M3) and torchtitan's December 2024 benchmarks (G1-G3).
CsvTable three_sources(double scale_megatron_readme = 1.0) {
  const CsvTable all = read_csv(std::string(SIXFOLD_DATA_DIR) + "/validation/published_runs.csv");
  CsvTable t;
  t.source = "three_sources.csv";
  t.header = all.header;
  const std::set<std::string> keep = {"D1", "D2", "D3", "D4", "M1", "M3", "G1", "G2", "G3"};
  for (size_t r = 0; r < all.rows.size(); ++r) {
    const std::string id = all.field(r, "id");
    if (!keep.count(id)) continue;
    std::vector<std::string> row = all.rows[r];
    if (id[0] == 'D')  // a different measurement of the same runs: only its own fold may see it
      for (const char* metric : {"mfu_pct", "tflops_model"}) {
        const int c = t.column(metric);
        if (c >= 0 && !row[size_t(c)].empty()) row[size_t(c)] = std::to_string(std::stod(row[size_t(c)]) * scale_megatron_readme);
      }
    t.rows.push_back(row);
    t.row_lines.push_back(all.row_lines[r]);
  }
  REQUIRE(t.rows.size() == keep.size());
  return t;
}

const CvFold& fold_of(const CrossValidation& cv, const std::string& prefix) {
  for (const CvFold& f : cv.folds)
    if (f.source.rfind(prefix, 0) == 0) return f;
  FAIL("no fold for " << prefix);
  return cv.folds.front();
}

}  // namespace

TEST_CASE("cross-validation by source: one fold per source, fitted without it, pooled over the folds") {
  // The kernels' sustained rate: the README rows below, scaled, would pull it if they were fitted.
  const std::vector<std::string> terms = {"kernel_slowdown"};
  const CrossValidation cv = cross_validate_by_source({three_sources()}, terms, 1);
  REQUIRE(cv.folds.size() == 3);
  const CvFold& readme = fold_of(cv, "NVIDIA/Megatron-LM README");
  CHECK(readme.rows == 4);
  CHECK(fold_of(cv, "NVIDIA/NeMo").rows == 2);
  CHECK(fold_of(cv, "pytorch/torchtitan").rows == 3);
  // Pooled = every fold's rows once.
  CHECK(cv.rows.size() == 9);
  CHECK(cv.metrics.at("mfu_pct").n == 4);
  CHECK(cv.metrics.at("tokens_per_gpu_s").n == 3 + 2);
  CHECK(cv.metrics.at("peak_mem_gib").n == 3);
  // The null model prices time only: no memory figure, every throughput metric.
  CHECK(cv.null_metrics.count("peak_mem_gib") == 0);
  CHECK(cv.null_metrics.at("mfu_pct").n == 4);
  for (const CvRow& r : cv.rows) {
    CHECK_FALSE(r.codebase.empty());  // the `framework` column, kept for the error bands
    if (r.id[0] == 'G') CHECK(r.codebase == "torchtitan");
  }

  // Out of fold: the README fold's terms do not move when the README's own figures do, while its
  // errors do; the other folds (which fit on the README rows) may move.
  const CrossValidation moved = cross_validate_by_source({three_sources(1.5)}, terms, 1);
  const CvFold& readme_moved = fold_of(moved, "NVIDIA/Megatron-LM README");
  REQUIRE(readme_moved.parameters.size() == readme.parameters.size());
  for (size_t i = 0; i < readme.parameters.size(); ++i)
    CHECK(readme_moved.parameters[i].value == doctest::Approx(readme.parameters[i].value));
  CHECK(readme_moved.metrics.at("mfu_pct").mape_pct != doctest::Approx(readme.metrics.at("mfu_pct").mape_pct));
}

TEST_CASE("cross-validation needs two sources and fittable terms") {
  CsvTable one = three_sources();
  one.rows.resize(4);  // D1-D4: one source
  one.row_lines.resize(4);
  CHECK_THROWS_WITH(cross_validate_by_source({one}, {}, 1), doctest::Contains("at least two sources"));
  CHECK_THROWS_WITH(cross_validate_by_source({three_sources()}, {"gemm.tile"}, 1), doctest::Contains("cannot fit 'gemm.tile'"));
}
