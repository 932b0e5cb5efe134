// The planner's interleaved schedules for meshes whose stages no vpp divides (DeepSeek-V3's 61
// layers): Megatron's custom pipeline layout keeping each rank's layers, only where neither the
// even nor the embedding/loss split gives an interleave, and never for torchtitan.
#include <doctest/doctest.h>

#include <algorithm>

#include "models/model_zoo.hpp"
#include "planner/search_space.hpp"

using namespace sixfold;

namespace {
Mesh pipeline_mesh(int pp, int dp) {
  Mesh m;
  m.pp = pp;
  m.dp = dp;
  m.micro_batches = {1};
  return m;
}
std::vector<Variant> custom_of(const std::vector<Variant>& all) {
  std::vector<Variant> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), [](const Variant& v) { return !v.pipeline_layout.empty(); });
  return out;
}
}  // namespace

TEST_CASE("planner: custom pipeline layouts interleave a mesh no vpp divides, keeping each rank's layers") {
  ModelSpec m = load_model("llama3-8b");
  m.layers = 61;  // on pp 8: ranks of 8, 8, 8, 8, 8, 7, 7, 7 layers
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  SearchOptions o;
  PruneCounts pruned;
  const Mesh mesh = pipeline_mesh(8, 1);
  const auto custom = custom_of(variants(m, w, mesh, 1, o, pruned));
  REQUIRE_FALSE(custom.empty());
  for (const Variant& v : custom) {
    CAPTURE(v.pipeline_layout);
    CHECK(v.schedule == Schedule::Interleaved);
    CHECK(v.vpp <= kMaxCustomLayoutVpp);
    const Layout l = make_layout(mesh, ProgramKey{}, v);
    CHECK_NOTHROW(validate_layout(m, l, w, 8));
    // The same stage totals as the mesh: the step program the planner built for it still holds.
    CHECK(stage_layer_counts(m, l) == std::vector<int>{8, 8, 8, 8, 8, 7, 7, 7});
  }
  CHECK(std::any_of(custom.begin(), custom.end(), [](const Variant& v) { return v.vpp == 2; }));
  // torchtitan splits the virtual stages itself; Megatron with a layer count some vpp divides
  // runs its own flags.
  Workload titan = w;
  titan.framework = Framework::Torchtitan;
  CHECK(custom_of(variants(m, titan, mesh, 1, o, pruned)).empty());
  m.layers = 64;
  CHECK(custom_of(variants(m, w, mesh, 1, o, pruned)).empty());
  m.layers = 61;
  SearchOptions off = o;
  off.custom_pipeline_layouts = false;
  CHECK(custom_of(variants(m, w, mesh, 1, off, pruned)).empty());
}
