// Megatron fp8 weights in memory: TransformerEngine keeps an fp8 copy and transpose of each linear
// weight beside the bf16 weight under plain DDP; with the distributed optimizer the export runs fp8
// primary weights (--fp8-param-gather) and the weights take what bf16 weights take.
#include <doctest/doctest.h>

#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

namespace {
Prediction megatron(Dtype dtype, int zero) {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8;
  l.zero = zero;
  l.recompute = Recompute::Full;
  Workload w;
  w.seq = 4096;
  w.global_batch = 16;
  w.dtype = dtype;
  validate_layout(m, l, w, 8);
  return predict(m, load_hardware("h100-sxm-80g"), w, l);
}
}  // namespace

TEST_CASE("Megatron fp8: TE's cached fp8 weight and transpose under DDP, none with fp8 primary weights") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8;
  Workload w;
  w.seq = 4096;
  const Count linear = expand_step_program(m, l, w).stages[0].linear_weight_params;
  CHECK(linear == 32LL * (4096LL * (4096 + 2 * 1024) + 4096LL * 4096 + 3 * 4096LL * 14336));
  const Prediction ddp_fp8 = megatron(Dtype::FP8, 0), ddp_bf16 = megatron(Dtype::BF16, 0);
  CHECK(ddp_fp8.memory.weights - ddp_bf16.memory.weights == doctest::Approx(2.0 * double(linear)));
  const Prediction dist_fp8 = megatron(Dtype::FP8, 1), dist_bf16 = megatron(Dtype::BF16, 1);
  CHECK(dist_fp8.memory.weights == dist_bf16.memory.weights);
  CHECK(ddp_fp8.peak_memory > dist_fp8.peak_memory);
}

TEST_CASE("Megatron fp8 primary weights: the distributed optimizer gathers the linear weights at 1 byte") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8;
  l.zero = 1;
  Workload bf16, fp8;
  bf16.seq = fp8.seq = 4096;
  bf16.global_batch = fp8.global_batch = 16;
  fp8.dtype = Dtype::FP8;
  CHECK(megatron_fp8_primary_weights(fp8, l));
  CHECK_FALSE(megatron_fp8_primary_weights(bf16, l));
  auto gathered = [&](const Workload& w) {
    const StepProgram p = expand_step_program(m, l, w);
    for (const DpOp& o : dp_ops(m, w, l, p.stages[0], 1).ops)
      if (o.role == DpRole::ParamGather) return o.op.message;
    return Bytes(0);
  };
  const StageProgram st = expand_step_program(m, l, fp8).stages[0];
  CHECK(gathered(bf16) == doctest::Approx(2.0 * double(st.dense_params)));
  CHECK(gathered(fp8) == doctest::Approx(2.0 * double(st.dense_params) - double(st.linear_weight_params)));
  // Plain DDP gathers nothing and keeps bf16 weights: no fp8 primary weights there.
  l.zero = 0;
  CHECK_FALSE(megatron_fp8_primary_weights(fp8, l));
}
