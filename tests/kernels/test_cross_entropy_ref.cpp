#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/cross_entropy_ref.hpp"
#include "gradcheck_util.hpp"

using namespace sixfold;
using namespace sixfold::test;

namespace {
// Mean cross-entropy over rows computed from two vocabulary shards, combining the pieces the way
// a TP all-reduce would (max, sum, sum).
struct TwoShardLoss {
  int rows, vocab, split;
  std::vector<int> targets;
  std::vector<double> gmax, gsum;
  double operator()(const std::vector<double>& logits) {
    std::vector<double> a(rows * split), b(rows * (vocab - split));
    for (int r = 0; r < rows; ++r) {
      std::copy_n(&logits[r * vocab], split, &a[r * split]);
      std::copy_n(&logits[r * vocab + split], vocab - split, &b[r * (vocab - split)]);
    }
    std::vector<double> ma(rows), mb(rows), sa(rows), sb(rows), ta(rows), tb(rows);
    logits_rowmax_ref(a.data(), ma.data(), rows, split);
    logits_rowmax_ref(b.data(), mb.data(), rows, vocab - split);
    gmax.assign(rows, 0);
    for (int r = 0; r < rows; ++r) gmax[r] = std::max(ma[r], mb[r]);
    logits_sumexp_ref(a.data(), gmax.data(), sa.data(), rows, split);
    logits_sumexp_ref(b.data(), gmax.data(), sb.data(), rows, vocab - split);
    target_logit_ref(a.data(), targets.data(), 0, ta.data(), rows, split);
    target_logit_ref(b.data(), targets.data(), split, tb.data(), rows, vocab - split);
    gsum.assign(rows, 0);
    double loss = 0;
    for (int r = 0; r < rows; ++r) {
      gsum[r] = sa[r] + sb[r];
      loss += std::log(gsum[r]) + gmax[r] - (ta[r] + tb[r]);
    }
    return loss / rows;
  }
};
}  // namespace

TEST_CASE("vocab-parallel cross-entropy: value and backward match finite differences") {
  const int rows = 3, vocab = 7, split = 3;
  TwoShardLoss ce{rows, vocab, split, {1, 5, 3}, {}, {}};
  auto logits = random_vector(rows * vocab, 31);
  // Direct log-softmax of row 0 for the value.
  double m = *std::max_element(logits.begin(), logits.begin() + vocab), s = 0;
  for (int v = 0; v < vocab; ++v) s += std::exp(logits[v] - m);
  const double row0 = std::log(s) + m - logits[1];
  TwoShardLoss single{1, vocab, split, {1}, {}, {}};
  CHECK(single(std::vector<double>(logits.begin(), logits.begin() + vocab)) == doctest::Approx(row0).epsilon(1e-12));

  ce(logits);
  std::vector<double> dlogits(rows * vocab);
  cross_entropy_backward_ref(logits.data(), ce.gmax.data(), ce.gsum.data(), ce.targets.data(), 0, 1.0 / rows,
                             dlogits.data(), rows, vocab);
  auto numeric = numeric_gradient(logits, [&] { return ce(logits); });
  CHECK(max_rel_error(dlogits, numeric) < 1e-7);
}

TEST_CASE("cross-entropy: an ignored row (target -1) has zero gradient") {
  double logits[3] = {0.1, 0.2, 0.3}, gmax = 0.3, gsum = 2.0, d[3] = {1, 1, 1};
  int target = -1;
  cross_entropy_backward_ref(logits, &gmax, &gsum, &target, 0, 1.0, d, 1, 3);
  CHECK(d[0] == 0.0);
  CHECK(d[2] == 0.0);
}
