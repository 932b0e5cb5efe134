// The whole model's backward (embedding, RoPE attention with GQA, norms, SwiGLU/GELU MLP, MoE
// router and experts, LM head and cross-entropy) against central finite differences of its loss,
// in float64, on a sample of parameters of every group.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "executor/backend/cpu/cpu_backend.hpp"
#include "executor/runtime/model_runtime.hpp"
#include "executor/comm/self_communicator.hpp"
#include "tiny_model.hpp"

using namespace sixfold;
using namespace sixfold::test;

namespace {

// Largest relative error over sampled parameters: |analytic - numeric| / max(1e-6, |numeric|).
double model_gradcheck(const ModelSpec& model) {
  CpuBackend backend(std::make_unique<SelfCommunicator>());
  Layout layout;
  layout.micro_batch = 2;  // two micro-batches: accumulation is covered too
  const Workload work = tiny_workload(4, 8);
  ProcessGroups groups = make_process_groups(layout, backend.world());
  ModelRuntime<double> runtime(model, layout, work, groups, backend, 7, TrainingHyperparameters{});
  runtime.forward_backward(0);
  std::mt19937 pick(3);
  double worst = 0;
  for (ParamGroup<double>* group : runtime.param_groups()) {
    for (int t = 0; t < int(group->tensors().size()); ++t) {
      const long n = group->tensors()[t].numel;
      for (int sample = 0; sample < 3; ++sample) {
        const long i = long(pick() % n);
        // Gradients are refilled by every forward_backward, so read the analytic one first.
        const double analytic = group->grad(t)[i];
        double* w = group->mutable_weight(t) + i;
        const double keep = *w, h = 1e-5;
        *w = keep + h;
        const double up = runtime.forward_backward(0);
        *w = keep - h;
        const double down = runtime.forward_backward(0);
        *w = keep;
        runtime.forward_backward(0);
        const double numeric = (up - down) / (2 * h);
        const double err = std::abs(analytic - numeric) / std::max(1e-6, std::abs(numeric));
        if (err > 1e-4) MESSAGE(group->tensors()[t].name << "[" << i << "]: analytic " << analytic << " numeric " << numeric);
        worst = std::max(worst, err);
      }
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("model gradient check: dense RMSNorm + SwiGLU") {
  CHECK(model_gradcheck(tiny_model()) < 1e-4);
}

TEST_CASE("model gradient check: LayerNorm + GELU, tied embeddings, partial rotary") {
  const ModelSpec m = tiny_gpt_model();
  CHECK(model_gradcheck(m) < 1e-4);
}

TEST_CASE("model gradient check: squared-ReLU MLPs, dense and MoE (Nemotron-4's activation)") {
  ModelSpec m = tiny_gpt_model();
  m.activation = Activation::SquaredReLU;
  CHECK(model_gradcheck(m) < 1e-4);
  ModelSpec moe = tiny_model(true);
  moe.activation = Activation::SquaredReLU;
  CHECK(model_gradcheck(moe) < 1e-4);
}

TEST_CASE("model gradient check: MoE top-2 of 4 experts") {
  CHECK(model_gradcheck(tiny_model(true)) < 1e-4);
}

TEST_CASE("model gradient check: MoE with GELU experts (the routing weight inside the activation)") {
  ModelSpec m = tiny_model(true);
  m.activation = Activation::GELU;
  CHECK(model_gradcheck(m) < 1e-4);
}
