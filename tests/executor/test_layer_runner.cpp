// A transformer layer runs from its step program: it walks the op list in the program's order,
// and an op it has no work for stops the run naming the op.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "executor/backend/cpu/cpu_backend.hpp"
#include "executor/comm/self_communicator.hpp"
#include "executor/runtime/model_runtime.hpp"
#include "tiny_model.hpp"

using namespace sixfold;
using namespace sixfold::test;

namespace {

struct Run {
  double loss = 0;
  std::vector<std::string> order;  // the dense backward's op ids as the last step ran them
};

// One step of the tiny model on one rank with `edit` applied to its program first.
template <class Edit>
Run run_with(Edit edit) {
  CpuBackend backend(std::make_unique<SelfCommunicator>());
  Layout layout;
  const ModelSpec model = tiny_model();
  const Workload work = tiny_workload(4, 8);
  ProcessGroups groups = make_process_groups(layout, backend.world());
  auto program = std::make_shared<RankProgram>(rank_program(model, layout, work, 0));
  edit(*program);
  ModelRuntime<double> runtime(model, layout, work, groups, backend, 7, TrainingHyperparameters{}, program);
  Run r;
  r.loss = runtime.train_step(0);
  r.loss = runtime.train_step(1);
  for (const OpEvent& e : backend.op_events())
    if (std::string_view(e.name).rfind("s0.dense.bwd.", 0) == 0 &&
        (r.order.empty() || r.order.back() != e.name))
      r.order.push_back(e.name);
  return r;
}

size_t position(const std::vector<std::string>& order, const std::string& id) {
  return size_t(std::find(order.begin(), order.end(), id) - order.begin());
}

}  // namespace

TEST_CASE("a layer runs its program's ops in the program's order") {
  const Run as_built = run_with([](RankProgram&) {});
  // The weight-gradient GEMMs of the MLP's up projection and of QKV moved ahead of their
  // input-gradient GEMMs: the same step, in the new order.
  std::string up_dgrad, up_wgrad;
  const Run reordered = run_with([&](RankProgram& p) {
    auto& ops = p.dense_bwd.ops;
    for (const char* name : {"mlp_up", "qkv_proj"})
      for (size_t i = 0; i + 1 < ops.size(); ++i)
        if (std::string_view(ops[i].op->name) == name && std::string_view(ops[i + 1].op->name) == name) {
          if (std::string_view(name) == "mlp_up") {
            const bool wgrad_first = ops[i].op->weight_grad;
            up_dgrad = ops[wgrad_first ? i + 1 : i].id;
            up_wgrad = ops[wgrad_first ? i : i + 1].id;
          }
          std::swap(ops[i], ops[i + 1]);
          break;
        }
  });
  REQUIRE_FALSE(up_dgrad.empty());
  CHECK(reordered.loss == doctest::Approx(as_built.loss).epsilon(1e-12));
  CHECK(position(as_built.order, up_dgrad) < position(as_built.order, up_wgrad));
  CHECK(position(reordered.order, up_wgrad) < position(reordered.order, up_dgrad));
}

TEST_CASE("an op of the program the layer has no work for stops the run, naming it") {
  static Op bogus;
  bogus.name = "bogus_op";
  CHECK_THROWS_WITH_AS(run_with([](RankProgram& p) { p.dense_fwd.ops.push_back({"s0.dense.fwd.99.bogus_op", &bogus}); }),
                       doctest::Contains("s0.dense.fwd.99.bogus_op"), Error);
}
