// The built-in model zoo and its YAML loader.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "models/model_zoo.hpp"

using namespace sixfold;

namespace {

// Runs f, which must throw E; returns the message.
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kDenseYaml = R"(name: tiny
layers: 2
hidden: 64
ffn: 256
heads: 4
vocab: 100
norm: rmsnorm
activation: swiglu
)";

}  // namespace

TEST_CASE("every built-in model loads, validates, and is named after its file") {
  const auto names = builtin_model_names();
  // The required zoo (task list); more may be added.
  for (const char* required :
       {"pythia-160m", "pythia-1.4b", "pythia-6.9b", "pythia-12b", "gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "gpt-18b",
        "gpt-39b", "gpt-76b", "gpt-145b", "gpt-310b", "gpt-530b", "gpt-1t", "gpt3-175b", "llama3-8b", "llama3-70b",
        "llama3.1-405b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "seed-tp", "seed-tp-sp",
        "seed-pp-1.5b", "seed-moe"}) {
    INFO(required);
    CHECK(std::find(names.begin(), names.end(), required) != names.end());
  }
  for (const auto& name : names) {
    INFO(name);
    ModelSpec m;
    CHECK_NOTHROW(m = load_model(name));
    CHECK(m.name == name);
    CHECK(m.head_dim > 0);
    CHECK(count_parameters(m).total > 0);
    CHECK(!builtin_model_source(name).empty());  // every entry cites where its numbers come from
  }
}

TEST_CASE("zoo entries carry the architecture facts they were written from") {
  const ModelSpec pythia = load_model("pythia-160m");
  CHECK(pythia.norm == NormKind::LayerNorm);
  CHECK(pythia.activation == Activation::GELU);
  CHECK(pythia.parallel_residual);
  CHECK(pythia.rotary_fraction == doctest::Approx(0.25));
  CHECK(pythia.linear_bias);
  CHECK(!pythia.tied_embeddings);
  CHECK(pythia.vocab == 50304);

  const ModelSpec gpt = load_model("gpt-1t");
  CHECK(gpt.layers == 128);
  CHECK(gpt.hidden == 25600);
  CHECK(gpt.heads == 160);
  CHECK(gpt.ffn == 4 * gpt.hidden);
  CHECK(gpt.learned_positions);
  CHECK(gpt.tied_embeddings);
  CHECK(gpt.vocab == 51200);
  CHECK(gpt.dropout);
  CHECK(!load_model("llama3-8b").dropout);

  const ModelSpec dsv3 = load_model("deepseek-v3");
  CHECK(dsv3.mla.enabled);
  CHECK(dsv3.moe.first_k_dense == 3);
  CHECK(dsv3.moe_layer_count() == 58);
  CHECK(dsv3.q_head_dim() == 192);
  CHECK(dsv3.v_head_dim() == 128);

  const ModelSpec moe = load_model("seed-moe");
  CHECK(moe.moe.num_experts == 4);
  CHECK(moe.moe.top_k == 2);
  CHECK(moe.moe.expert_ffn == 4 * 384);
  CHECK(moe.moe_layer_count() == 6);
  CHECK(load_model("seed-pp-1.5b").max_seq == 1024);
}

TEST_CASE("parse_model_yaml fills defaults") {
  const ModelSpec m = parse_model_yaml(kDenseYaml, "tiny.yaml");
  CHECK(m.kv_heads == 4);    // default: heads
  CHECK(m.head_dim == 16);   // default: hidden / heads
  CHECK(m.rotary_fraction == 1.0);
  CHECK(!m.moe.enabled());
  CHECK(!m.mla.enabled);
  // Without `name:`, the file stem names the model.
  std::string unnamed = kDenseYaml;
  unnamed.erase(0, unnamed.find('\n') + 1);
  CHECK(parse_model_yaml(unnamed, "dir/other-model.yaml").name == "other-model");
}

TEST_CASE("a zoo-style YAML file loads by path") {
  const auto path = std::filesystem::temp_directory_path() / "sixfold_test_zoo_model.yaml";
  {
    std::ofstream out(path);
    out << kDenseYaml;
  }
  const ModelSpec m = load_model(path.string());
  CHECK(m.name == "tiny");
  CHECK(m.layers == 2);
  std::filesystem::remove(path);
}

TEST_CASE("unknown model names list the built-in ones") {
  const std::string msg = message_of<UsageError>([] { load_model("llama-9000"); });
  CHECK(contains(msg, "llama-9000"));
  CHECK(contains(msg, "llama3-8b"));
  CHECK(contains(msg, "deepseek-v3"));
  CHECK(contains(msg, "seed-moe"));
}

TEST_CASE("malformed YAML names the source and the line") {
  // A syntax error on line 3.
  const std::string broken = "layers: 2\nhidden: 64\nheads: [4\nvocab: 100\n";
  const std::string msg = message_of<Error>([&] { parse_model_yaml(broken, "broken.yaml"); });
  CHECK(contains(msg, "broken.yaml:"));
  CHECK(contains(msg, "malformed YAML"));
}

TEST_CASE("bad fields name the file, the line and the field") {
  std::string text = kDenseYaml;
  SUBCASE("wrong type") {
    text.replace(text.find("hidden: 64"), 10, "hidden: sixty-four");
    const std::string msg = message_of<Error>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "m.yaml:3:"));
    CHECK(contains(msg, "'hidden'"));
  }
  SUBCASE("missing required field") {
    text.replace(text.find("vocab: 100\n"), 11, "");
    const std::string msg = message_of<Error>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "m.yaml:"));
    CHECK(contains(msg, "'vocab'"));
    CHECK(contains(msg, "missing"));
  }
  SUBCASE("unknown value lists the allowed ones") {
    text.replace(text.find("rmsnorm"), 7, "batchnorm");
    const std::string msg = message_of<Error>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "m.yaml:7:"));
    CHECK(contains(msg, "layernorm, rmsnorm"));
  }
  SUBCASE("an unknown activation lists the three") {
    text.replace(text.find("swiglu"), 6, "geglu");
    const std::string msg = message_of<Error>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "gelu, swiglu, squared-relu"));
  }
  SUBCASE("misspelt field") {
    text += "kv_head: 2\n";
    const std::string msg = message_of<Error>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "m.yaml:9:"));
    CHECK(contains(msg, "'kv_head'"));
    CHECK(contains(msg, "kv_heads"));
  }
  SUBCASE("misspelt MoE field") {
    text += "moe:\n  experts: 4\n  topk: 2\n  expert_ffn: 128\n";
    const std::string msg = message_of<Error>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "m.yaml:11:"));
    CHECK(contains(msg, "'moe.topk'"));
  }
  SUBCASE("inconsistent values fail validation with the field") {
    text.replace(text.find("heads: 4"), 8, "heads: 4\nkv_heads: 3");
    const std::string msg = message_of<UsageError>([&] { parse_model_yaml(text, "m.yaml"); });
    CHECK(contains(msg, "kv_heads"));
  }
}

TEST_CASE("every models/zoo/*.yaml file in the source tree is embedded") {
  // The embedded copy is the file itself, so edits reach the binary (cmake/embed_data.cmake).
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SIXFOLD_SOURCE_DIR) + "/models/zoo")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    std::ifstream in(entry.path());
    const std::string on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto embedded = builtin_text("models/zoo/" + entry.path().filename().string());
    INFO(entry.path().string());
    REQUIRE(embedded.has_value());
    CHECK(std::string(*embedded) == on_disk);
  }
  CHECK(files == static_cast<int>(builtin_model_names().size()));
}

TEST_CASE("validate_model rejects descriptions the counts cannot handle") {
  ModelSpec m = parse_model_yaml(kDenseYaml, "tiny.yaml");
  m.learned_positions = true;  // a position table needs max_seq rows
  CHECK(contains(message_of<UsageError>([&] { validate_model(m, "tiny.yaml"); }), "'max_seq'"));
  m = load_model("mixtral-8x7b");
  m.moe.layer_frequency = 0;
  CHECK(contains(message_of<UsageError>([&] { validate_model(m, "mixtral"); }), "'moe.layer_frequency'"));
}

TEST_CASE("moe_layers_in counts what is_moe_layer says, over every range") {
  for (const char* name : {"deepseek-v3", "mixtral-8x7b", "qwen3-30b-a3b", "llama3-8b", "seed-moe"}) {
    ModelSpec m = load_model(name);
    for (int frequency : {1, 2, 3}) {
      if (m.moe.enabled()) m.moe.layer_frequency = frequency;
      INFO(name << " every " << frequency);
      for (int begin = 0; begin <= m.layers; ++begin)
        for (int end = begin; end <= m.layers; ++end) {
          int loop = 0;
          for (int l = begin; l < end; ++l) loop += m.is_moe_layer(l);
          REQUIRE(m.moe_layers_in(begin, end) == loop);
        }
    }
  }
}
