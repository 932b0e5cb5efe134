// models/layout_fields.hpp: the one table of layout fields, and the plan-YAML reader and writer,
// the layout JSON and describe() that walk it.
#include <doctest/doctest.h>

#include <set>

#include "common/error.hpp"
#include "models/layout_fields.hpp"
#include "simulator/io/prediction_json.hpp"
#include "simulator/io/scenario.hpp"

using namespace sixfold;

namespace {
Layout every_field_set() {
  Layout l;
  l.dp = 2, l.tp = 4, l.pp = 3, l.vpp = 2, l.cp = 2, l.ep = 2, l.etp = 2, l.sp = true, l.zero = 1, l.micro_batch = 3;
  l.dp_shard = 1;
  l.recompute = Recompute::Selective;
  l.recompute_modules = parse_recompute_modules("core_attn,mlp");
  l.recompute_num_layers = 2;  // (valid only under full recompute: this layout is for the fields, not priced)
  l.recompute_every = 3;
  l.dp_overlap = DpOverlap::PerLayer;
  l.bucket_bytes = 64.0 * 1024 * 1024;
  l.tp_overlap = true;
  l.schedule = Schedule::GPipe;
  l.first_stage_layers = 3, l.last_stage_layers = 2;
  l.embedding_in_pipeline_split = l.loss_in_pipeline_split = true;
  l.pipeline_layout = "Et*2|(tt|)*4,tL";
  return l;
}

Layout round_trip(const Layout& l) {
  YAML::Emitter o;
  emit_layout(o, l);
  const YamlDoc doc = parse_yaml(o.c_str(), "layout.yaml");
  return parse_layout(doc, doc.root);
}
}  // namespace

TEST_CASE("layout fields: plan YAML reads back what it wrote, and the JSON has one key per field") {
  const Layout l = every_field_set();
  CHECK(round_trip(l) == l);
  CHECK(round_trip(Layout{}) == Layout{});
  std::set<std::string> keys, expected;
  const auto json = layout_json(l);
  for (const auto& [k, v] : json.items()) keys.insert(k);
  for (const LayoutField& f : layout_fields()) expected.insert(f.json_key ? f.json_key : f.key);
  CHECK(keys == expected);
  // At their defaults the optional fields are left out, and read back as defaults.
  const auto defaults = layout_json(Layout{});
  CHECK(!defaults.contains("bucket_bytes"));
  CHECK(!defaults.contains("first_stage_layers"));
  CHECK(defaults["micro_batch"] == 1);
}

TEST_CASE("layout fields: describe() shows each field as the table says, in the table's order") {
  CHECK(describe(every_field_set()) == "dp=2 tp=4 pp=3 vpp=2 cp=2 ep=2 etp=2 sp zero=1 dp-shard=1 mbs=3 recompute=selective(" +
                                           recompute_modules_string(parse_recompute_modules("core_attn,mlp")) +
                                           ") first-stage-layers=3 last-stage-layers=2 pp-split=embedding,loss pp-layout=Et*2|(tt|)*4,tL");
  CHECK(describe(Layout{}) == "dp=1 tp=1 pp=1 zero=0 mbs=1 recompute=none");
}

TEST_CASE("layout fields: a bad value names where it came from and what is allowed") {
  for (const LayoutField& f : layout_fields()) {
    CAPTURE(f.key);
    Layout l;
    try {
      f.set(l, "bogus", std::string("layout.") + f.key);
      FAIL("accepted 'bogus'");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(std::string("layout.") + f.key) != std::string::npos);
      CHECK(std::string(e.what()).find("bogus") != std::string::npos);
    }
  }
  CHECK(find_layout_field("mbs") == find_layout_field("micro_batch"));
  CHECK(find_layout_field("mb") == nullptr);
}
