#include <doctest/doctest.h>

#include "kernels/rope_ref.hpp"
#include "gradcheck_util.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("rope backward matches finite differences, partial rotary") {
  const int tokens = 3, heads = 2, head_dim = 8, rotary_dim = 4;
  const int positions[] = {0, 5, 17};
  auto x = random_vector(tokens * heads * head_dim, 11), r = random_vector(tokens * heads * head_dim, 12);
  std::vector<double> y(x.size());
  auto loss = [&] {
    rope_forward_ref(x.data(), y.data(), positions, tokens, heads, head_dim, rotary_dim, 10000.0);
    return dot(y, r);
  };
  std::vector<double> dx(x.size());
  rope_backward_ref(r.data(), dx.data(), positions, tokens, heads, head_dim, rotary_dim, 10000.0);
  CHECK(max_rel_error(dx, numeric_gradient(x, loss)) < 1e-7);
  loss();
  // Position 0 is the identity; channels past rotary_dim pass through.
  for (int i = 0; i < heads * head_dim; ++i) CHECK(y[i] == x[i]);
  CHECK(y[head_dim * heads + 6] == x[head_dim * heads + 6]);
  CHECK(y[head_dim * heads + 0] != x[head_dim * heads + 0]);
}
