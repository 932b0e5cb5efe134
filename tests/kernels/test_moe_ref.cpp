#include <doctest/doctest.h>

#include "kernels/moe_ref.hpp"
#include "gradcheck_util.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("top-k router: picks the largest, renormalises, ties to the lower index") {
  const double logits[] = {0.0, 2.0, 1.0, 2.0};
  int idx[2];
  double gate[2];
  topk_router_ref(logits, 1, 4, 2, idx, gate);
  CHECK(idx[0] == 1);
  CHECK(idx[1] == 3);
  CHECK(gate[0] == doctest::Approx(0.5));
  CHECK(gate[0] + gate[1] == doctest::Approx(1.0));
}

TEST_CASE("top-k router backward matches finite differences") {
  const int tokens = 3, experts = 5, k = 2;
  auto logits = random_vector(tokens * experts, 61), r = random_vector(tokens * k, 62);
  std::vector<int> idx(tokens * k);
  std::vector<double> gate(tokens * k);
  auto loss = [&] {
    topk_router_ref(logits.data(), tokens, experts, k, idx.data(), gate.data());
    return dot(gate, r);
  };
  loss();
  std::vector<double> dlogits(logits.size());
  topk_router_backward_ref(r.data(), idx.data(), gate.data(), dlogits.data(), tokens, experts, k);
  CHECK(max_rel_error(dlogits, numeric_gradient(logits, loss)) < 1e-7);
}

TEST_CASE("moe permutation is a stable sort by expert") {
  const int expert_index[] = {2, 0, 0, 1, 2, 0};  // tokens 0..2, k = 2
  int slot[6], count[3];
  moe_permute_indices_ref(expert_index, 3, 2, 3, slot, count);
  CHECK(count[0] == 3);
  CHECK(count[1] == 1);
  CHECK(count[2] == 2);
  // Expert 0 rows: assignments 1, 2, 5 in order; expert 1: 3; expert 2: 0, 4.
  CHECK(slot[1] == 0);
  CHECK(slot[2] == 1);
  CHECK(slot[5] == 2);
  CHECK(slot[3] == 3);
  CHECK(slot[0] == 4);
  CHECK(slot[4] == 5);
}
