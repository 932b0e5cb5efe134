#include <doctest/doctest.h>

#include <cmath>

#include "kernels/activation_ref.hpp"
#include "gradcheck_util.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("swiglu backward matches finite differences") {
  const long n = 9;
  auto gate = random_vector(n, 21), up = random_vector(n, 22), r = random_vector(n, 23);
  std::vector<double> out(n);
  auto loss = [&] {
    swiglu_forward_ref(gate.data(), up.data(), out.data(), n);
    return dot(out, r);
  };
  std::vector<double> dgate(n), dup(n);
  swiglu_backward_ref(r.data(), gate.data(), up.data(), dgate.data(), dup.data(), n);
  CHECK(max_rel_error(dgate, numeric_gradient(gate, loss)) < 1e-7);
  CHECK(max_rel_error(dup, numeric_gradient(up, loss)) < 1e-7);
}

TEST_CASE("gelu backward matches finite differences, gelu(0) = 0, gelu(large) = x") {
  const long n = 9;
  auto x = random_vector(n, 24, 2.0), r = random_vector(n, 25);
  std::vector<double> y(n);
  auto loss = [&] {
    gelu_forward_ref(x.data(), y.data(), n);
    return dot(y, r);
  };
  std::vector<double> dx(n);
  gelu_backward_ref(r.data(), x.data(), dx.data(), n);
  CHECK(max_rel_error(dx, numeric_gradient(x, loss)) < 1e-7);
  double in[2] = {0.0, 10.0}, out[2];
  gelu_forward_ref(in, out, 2);
  CHECK(out[0] == 0.0);
  CHECK(out[1] == doctest::Approx(10.0));
}

TEST_CASE("squared ReLU backward matches finite differences, zero below 0, x^2 above") {
  const long n = 9;
  auto x = random_vector(n, 26, 2.0), r = random_vector(n, 27);
  for (double& v : x)
    if (std::abs(v) < 1e-3) v = 0.5;  // away from the kink at 0, where the difference quotient straddles it
  std::vector<double> y(n);
  auto loss = [&] {
    squared_relu_forward_ref(x.data(), y.data(), n);
    return dot(y, r);
  };
  std::vector<double> dx(n);
  squared_relu_backward_ref(r.data(), x.data(), dx.data(), n);
  CHECK(max_rel_error(dx, numeric_gradient(x, loss)) < 1e-7);
  double in[3] = {-3.0, 0.0, 3.0}, out[3];
  squared_relu_forward_ref(in, out, 3);
  CHECK(out[0] == 0.0);
  CHECK(out[1] == 0.0);
  CHECK(out[2] == 9.0);
}
