// GPU MoE router and permutation vs topk_router_ref / topk_router_backward_ref /
// moe_permute_indices_ref; the gather and weighted scatter are checked against their definition.
#include "kernels/moe_ref.hpp"
#include "tests/kernels/gpu_test_util.hpp"

using namespace sixfold;
using namespace sixfold::gpu_test;

TEST_CASE("top-k router, its backward and the stable permutation match the reference") {
  const int tokens = 1000, experts = 40, k = 4, hidden = 72;  // experts > 32: lanes hold two
  auto logits = random_bf16_values(std::size_t(tokens) * experts, -3, 3, 70);
  for (int t = 0; t < tokens; t += 7) logits[std::size_t(t) * experts + 5] = logits[std::size_t(t) * experts + 9];  // ties
  std::vector<int> idx_ref(std::size_t(tokens) * k);
  std::vector<double> gate_ref(idx_ref.size());
  topk_router_ref(to_double(logits).data(), tokens, experts, k, idx_ref.data(), gate_ref.data());

  DeviceBuffer<float> dlogits(logits), dgate(idx_ref.size());
  DeviceBuffer<int> didx(idx_ref.size());
  cuda::topk_router(dlogits.get(), tokens, experts, k, didx.get(), dgate.get());
  const auto idx_gpu = didx.download();
  CHECK(idx_gpu == idx_ref);
  CHECK(max_relative_error(dgate.download(), gate_ref) < 1e-5);

  const auto dg = random_bf16_values(idx_ref.size(), -1, 1, 71);
  std::vector<double> dlogit_ref(logits.size());
  topk_router_backward_ref(to_double(dg).data(), idx_ref.data(), gate_ref.data(), dlogit_ref.data(), tokens, experts, k);
  DeviceBuffer<float> ddg(dg), ddlogits(logits.size());
  cuda::topk_router_backward(ddg.get(), didx.get(), dgate.get(), ddlogits.get(), tokens, experts, k);
  CHECK(max_relative_error(ddlogits.download(), dlogit_ref) < 1e-5);

  std::vector<int> slot_ref(idx_ref.size()), count_ref(experts);
  moe_permute_indices_ref(idx_ref.data(), tokens, k, experts, slot_ref.data(), count_ref.data());
  DeviceBuffer<int> dslot(slot_ref.size()), dcount(experts);
  DeviceBuffer<unsigned char> workspace(cuda::moe_permute_indices_workspace_bytes(tokens, k, experts));
  cuda::moe_permute_indices(didx.get(), tokens, k, experts, dslot.get(), dcount.get(), workspace.get());
  CHECK(dslot.download() == slot_ref);
  CHECK(dcount.download() == count_ref);

  const auto x = random_bf16_values(std::size_t(tokens) * hidden, -1, 1, 72);
  DeviceBuffer<Bf16> dx(to_bf16(x)), dpermuted(std::size_t(tokens) * k * hidden), dout(x.size());
  cuda::moe_permute(dx.get(), dslot.get(), tokens, k, hidden, dpermuted.get());
  const auto permuted = to_float(dpermuted.download());
  bool rows_match = true;
  for (int t = 0; t < tokens; ++t)
    for (int c = 0; c < k; ++c)
      for (int h = 0; h < hidden; ++h)
        rows_match = rows_match && permuted[std::size_t(slot_ref[t * k + c]) * hidden + h] == x[std::size_t(t) * hidden + h];
  CHECK(rows_match);

  // Unpermuting the permuted copy gives x times the sum of the gates, which is 1.
  cuda::moe_unpermute(dpermuted.get(), dslot.get(), dgate.get(), tokens, k, hidden, dout.get());
  CHECK(max_relative_error(to_float(dout.download()), x) < 1e-2);
}
