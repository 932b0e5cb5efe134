#include <doctest/doctest.h>

#include <cmath>

#include "kernels/adamw_ref.hpp"

using namespace sixfold;

TEST_CASE("adamw: first step moves each weight by lr against the gradient sign, plus decay") {
  double p[2] = {1.0, -2.0}, g[2] = {0.3, -5.0}, m[2] = {0, 0}, v[2] = {0, 0};
  adamw_ref(p, g, m, v, 2, 0.1, 0.9, 0.999, 0.0, 0.01, 1);
  // With bias correction the first update is exactly lr * sign(g); decay multiplies by 1 - lr*wd.
  CHECK(p[0] == doctest::Approx(1.0 * (1 - 0.001) - 0.1));
  CHECK(p[1] == doctest::Approx(-2.0 * (1 - 0.001) + 0.1));
  CHECK(m[0] == doctest::Approx(0.03));
  CHECK(v[1] == doctest::Approx(0.001 * 25.0));
}

TEST_CASE("adamw: second step matches the hand-computed update") {
  double p = 0.5, m = 0, v = 0;
  const double g1 = 1.0, g2 = -0.5;
  adamw_ref(&p, &g1, &m, &v, 1, 0.01, 0.9, 0.99, 1e-8, 0.0, 1);
  adamw_ref(&p, &g2, &m, &v, 1, 0.01, 0.9, 0.99, 1e-8, 0.0, 2);
  const double m2 = 0.9 * 0.1 + 0.1 * g2, v2 = 0.99 * 0.01 + 0.01 * 0.25;
  const double p1 = 0.5 - 0.01 * 1.0 / (1.0 + 1e-8);
  const double expected = p1 - 0.01 * (m2 / (1 - 0.81)) / (std::sqrt(v2 / (1 - 0.9801)) + 1e-8);
  CHECK(p == doctest::Approx(expected).epsilon(1e-12));
}
