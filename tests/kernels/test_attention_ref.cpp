#include <doctest/doctest.h>

#include <cmath>

#include "kernels/attention_ref.hpp"
#include "gradcheck_util.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("GQA causal attention backward matches finite differences") {
  const int t = 5, heads = 4, kv_heads = 2, d = 3;
  std::vector<int> pos = {0, 1, 2, 3, 4};
  auto q = random_vector(t * heads * d, 41), k = random_vector(t * kv_heads * d, 42),
       v = random_vector(t * kv_heads * d, 43), r = random_vector(t * heads * d, 44);
  const double scale = 1.0 / std::sqrt(double(d));
  std::vector<double> out(t * heads * d), lse(heads * t);
  auto loss = [&] {
    attention_forward_ref(q.data(), k.data(), v.data(), out.data(), lse.data(), pos.data(), pos.data(), t, t, heads,
                          kv_heads, d, scale);
    return dot(out, r);
  };
  loss();
  std::vector<double> dq(q.size()), dk(k.size(), 0.0), dv(v.size(), 0.0);
  attention_backward_ref(r.data(), q.data(), k.data(), v.data(), out.data(), lse.data(), dq.data(), dk.data(),
                         dv.data(), pos.data(), pos.data(), t, t, heads, kv_heads, d, scale);
  CHECK(max_rel_error(dq, numeric_gradient(q, loss)) < 1e-7);
  CHECK(max_rel_error(dk, numeric_gradient(k, loss)) < 1e-7);
  CHECK(max_rel_error(dv, numeric_gradient(v, loss)) < 1e-7);
  // The first query sees only the first key: its output is v[0] of its kv head.
  loss();
  CHECK(out[0] == doctest::Approx(v[0]));
  CHECK(out[heads * d - 1] == doctest::Approx(v[kv_heads * d - 1]));
}

TEST_CASE("attention over two key blocks merged through lse equals attention over all keys") {
  const int tq = 3, tk = 6, heads = 2, kv_heads = 1, d = 4;
  std::vector<int> qpos = {2, 4, 5}, kpos = {0, 1, 2, 3, 4, 5};
  auto q = random_vector(tq * heads * d, 51), k = random_vector(tk * kv_heads * d, 52),
       v = random_vector(tk * kv_heads * d, 53);
  std::vector<double> full(tq * heads * d), lse_full(heads * tq);
  attention_forward_ref(q.data(), k.data(), v.data(), full.data(), lse_full.data(), qpos.data(), kpos.data(), tq, tk,
                        heads, kv_heads, d, 0.5);
  std::vector<double> a(full.size()), la(lse_full.size()), b(full.size()), lb(lse_full.size());
  // Keys 3..5 first (query 0 at position 2 sees none of them: lse -inf), then keys 0..2.
  attention_forward_ref(q.data(), k.data() + 3 * d, v.data() + 3 * d, a.data(), la.data(), qpos.data(),
                        kpos.data() + 3, tq, 3, heads, kv_heads, d, 0.5);
  CHECK(std::isinf(la[0]));
  attention_forward_ref(q.data(), k.data(), v.data(), b.data(), lb.data(), qpos.data(), kpos.data(), tq, 3, heads,
                        kv_heads, d, 0.5);
  merge_attention_partial_ref(a.data(), la.data(), b.data(), lb.data(), tq, heads, d);
  CHECK(max_rel_error(a, full) < 1e-13);
  CHECK(max_rel_error(la, lse_full) < 1e-13);
}
