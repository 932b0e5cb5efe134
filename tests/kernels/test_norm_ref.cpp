#include <doctest/doctest.h>

#include "kernels/norm_ref.hpp"
#include "gradcheck_util.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("rmsnorm backward matches finite differences") {
  const int rows = 3, cols = 7;
  auto x = random_vector(rows * cols, 1), w = random_vector(cols, 2), r = random_vector(rows * cols, 3);
  std::vector<double> y(rows * cols), rstd(rows);
  auto loss = [&] {
    rmsnorm_forward_ref(x.data(), w.data(), y.data(), rstd.data(), rows, cols, 1e-5);
    return dot(y, r);
  };
  loss();
  std::vector<double> dx(rows * cols), dw(cols, 0.0);
  rmsnorm_backward_ref(r.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), rows, cols);
  CHECK(max_rel_error(dx, numeric_gradient(x, loss)) < 1e-7);
  CHECK(max_rel_error(dw, numeric_gradient(w, loss)) < 1e-7);
  // The value itself: row of ones with unit weights normalises to ones.
  std::vector<double> ones(cols, 1.0), out(cols), rs(1);
  rmsnorm_forward_ref(ones.data(), ones.data(), out.data(), rs.data(), 1, cols, 0.0);
  CHECK(out[3] == doctest::Approx(1.0));
}

TEST_CASE("layernorm backward matches finite differences") {
  const int rows = 4, cols = 5;
  auto x = random_vector(rows * cols, 4), w = random_vector(cols, 5), b = random_vector(cols, 6),
       r = random_vector(rows * cols, 7);
  std::vector<double> y(rows * cols), mean(rows), rstd(rows);
  auto loss = [&] {
    layernorm_forward_ref(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5);
    return dot(y, r);
  };
  loss();
  std::vector<double> dx(rows * cols), dw(cols, 0.0), db(cols, 0.0);
  layernorm_backward_ref(r.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dw.data(), db.data(),
                         rows, cols);
  CHECK(max_rel_error(dx, numeric_gradient(x, loss)) < 1e-7);
  CHECK(max_rel_error(dw, numeric_gradient(w, loss)) < 1e-7);
  CHECK(max_rel_error(db, numeric_gradient(b, loss)) < 1e-7);
}
