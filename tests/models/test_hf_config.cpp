// Hugging Face config.json import against the zoo entries written from the same configs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "models/hf_config.hpp"
#include "models/model_zoo.hpp"

using namespace sixfold;

namespace {

std::string fixture(const std::string& file) { return std::string(SIXFOLD_SOURCE_DIR) + "/tests/models/fixtures/" + file; }

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

// Every architecture fact that the cost model reads, and the parameter counts.
void check_same_architecture(const ModelSpec& imported, const ModelSpec& zoo) {
  CHECK(imported.layers == zoo.layers);
  CHECK(imported.hidden == zoo.hidden);
  CHECK(imported.ffn == zoo.ffn);
  CHECK(imported.heads == zoo.heads);
  CHECK(imported.kv_heads == zoo.kv_heads);
  CHECK(imported.head_dim == zoo.head_dim);
  CHECK(imported.vocab == zoo.vocab);
  CHECK(imported.max_seq == zoo.max_seq);
  CHECK(imported.tied_embeddings == zoo.tied_embeddings);
  CHECK(imported.norm == zoo.norm);
  CHECK(imported.activation == zoo.activation);
  CHECK(imported.parallel_residual == zoo.parallel_residual);
  CHECK(imported.rotary_fraction == doctest::Approx(zoo.rotary_fraction));
  CHECK(imported.qkv_bias == zoo.qkv_bias);
  CHECK(imported.linear_bias == zoo.linear_bias);
  CHECK(imported.qk_norm == zoo.qk_norm);
  CHECK(imported.learned_positions == zoo.learned_positions);
  CHECK(imported.dropout == zoo.dropout);
  CHECK(imported.moe.num_experts == zoo.moe.num_experts);
  CHECK(imported.moe.top_k == zoo.moe.top_k);
  CHECK(imported.moe.expert_ffn == zoo.moe.expert_ffn);
  CHECK(imported.moe.shared_experts == zoo.moe.shared_experts);
  CHECK(imported.moe.first_k_dense == zoo.moe.first_k_dense);
  CHECK(imported.moe.layer_frequency == zoo.moe.layer_frequency);
  CHECK(imported.moe.router_bias == zoo.moe.router_bias);
  CHECK(imported.mla.enabled == zoo.mla.enabled);
  CHECK(imported.mla.q_lora_rank == zoo.mla.q_lora_rank);
  CHECK(imported.mla.kv_lora_rank == zoo.mla.kv_lora_rank);
  CHECK(imported.mla.qk_nope_head_dim == zoo.mla.qk_nope_head_dim);
  CHECK(imported.mla.qk_rope_head_dim == zoo.mla.qk_rope_head_dim);
  CHECK(imported.mla.v_head_dim == zoo.mla.v_head_dim);
  const auto a = count_parameters(imported), b = count_parameters(zoo);
  CHECK(a.total == b.total);
  CHECK(a.active == b.active);
  CHECK(a.embedding == b.embedding);
  CHECK(a.attention_per_layer == b.attention_per_layer);
}

const char* kMinimalLlama = R"({
  "model_type": "llama",
  "hidden_size": 256,
  "intermediate_size": 1024,
  "num_attention_heads": 8,
  "num_hidden_layers": 2,
  "vocab_size": 1000
})";

}  // namespace

TEST_CASE("HF config.json fixtures import to the same architecture as their zoo entries") {
  const struct {
    const char* file;
    const char* zoo;
  } pairs[] = {{"llama3-8b.json", "llama3-8b"},
               {"llama3.1-405b-rope-parameters.json", "llama3.1-405b"},
               {"mixtral-8x7b.json", "mixtral-8x7b"},
               {"qwen3-30b-a3b.json", "qwen3-30b-a3b"},
               {"deepseek-v3.json", "deepseek-v3"},
               {"pythia-6.9b.json", "pythia-6.9b"},
               // Nemotron-4 340B's Table 1 written in transformers' NemotronConfig fields.
               {"nemotron4-340b.json", "nemotron4-340b"}};
  for (const auto& p : pairs) {
    INFO(p.file);
    const ModelSpec imported = load_model(fixture(p.file));  // detected as JSON by load_model
    CHECK(imported.name == std::string(p.file).substr(0, std::string(p.file).size() - 5));
    check_same_architecture(imported, load_model(p.zoo));
  }
}

TEST_CASE("a file named config.json takes its folder's name") {
  const auto folder = std::filesystem::temp_directory_path() / "sixfold-test-Tiny-Llama";
  std::filesystem::create_directories(folder);
  {
    std::ofstream out(folder / "config.json");
    out << kMinimalLlama;
  }
  const ModelSpec m = load_model((folder / "config.json").string());
  const ModelSpec from_folder = load_model(folder.string());  // the checkpoint folder itself
  std::filesystem::remove_all(folder);
  CHECK(m.name == "sixfold-test-Tiny-Llama");
  CHECK(from_folder.name == "sixfold-test-Tiny-Llama");
  CHECK(from_folder.hidden == 256);
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 32);
  CHECK(!m.tied_embeddings);
}

TEST_CASE("rope_theta and rope_parameters styles both import") {
  std::string legacy = kMinimalLlama;
  legacy.insert(legacy.rfind('}'), R"(, "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
    "partial_rotary_factor": 0.5)");
  CHECK(parse_hf_config(legacy, "legacy.json", "m").rotary_fraction == doctest::Approx(0.5));

  std::string grouped = kMinimalLlama;
  grouped.insert(grouped.rfind('}'), R"(, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
    "partial_rotary_factor": 0.25})");
  CHECK(parse_hf_config(grouped, "grouped.json", "m").rotary_fraction == doctest::Approx(0.25));

  // Per-attention-type parameters (transformers v5 for models with sliding layers).
  std::string per_type = kMinimalLlama;
  per_type.insert(per_type.rfind('}'), R"(, "rope_parameters": {"full_attention": {"rope_type": "default",
    "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})");
  CHECK(parse_hf_config(per_type, "per_type.json", "m").rotary_fraction == doctest::Approx(1.0));

  // GPT-NeoX in the grouped style keeps its partial rotary share there instead of rotary_pct.
  const std::string neox = R"({"model_type": "gpt_neox", "hidden_size": 512, "intermediate_size": 2048,
    "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 1000,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25}})";
  const ModelSpec m = parse_hf_config(neox, "neox.json", "m");
  CHECK(m.rotary_fraction == doctest::Approx(0.25));
  CHECK(m.parallel_residual);
  CHECK(m.norm == NormKind::LayerNorm);

  std::string bad = kMinimalLlama;
  bad.insert(bad.rfind('}'), R"(, "rope_theta": "fast")");
  CHECK(contains(message_of<Error>([&] { parse_hf_config(bad, "bad.json", "m"); }), "'rope_theta'"));
}

TEST_CASE("model families map their quirks") {
  std::string qwen2 = kMinimalLlama;
  qwen2.replace(qwen2.find("llama"), 5, "qwen2");
  CHECK(parse_hf_config(qwen2, "q.json", "m").qkv_bias);
  std::string qwen3 = kMinimalLlama;
  qwen3.replace(qwen3.find("llama"), 5, "qwen3");
  CHECK(parse_hf_config(qwen3, "q.json", "m").qk_norm);

  // Qwen3-MoE decoder_sparse_step 2: layers 1, 3, 5, ... are sparse.
  const std::string sparse = R"({"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 1024,
    "moe_intermediate_size": 128, "num_experts": 8, "num_experts_per_tok": 2, "decoder_sparse_step": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 6, "vocab_size": 1000})";
  const ModelSpec q = parse_hf_config(sparse, "s.json", "m");
  CHECK(!q.is_moe_layer(0));
  CHECK(q.is_moe_layer(1));
  CHECK(!q.is_moe_layer(2));
  CHECK(q.is_moe_layer(5));
  CHECK(q.moe_layer_count() == 3);

  // DeepSeek's rule i >= first_k_dense_replace and i % moe_layer_freq == 0, with 1 and 2: 2, 4.
  const std::string ds = R"({"model_type": "deepseek_v2", "hidden_size": 256, "intermediate_size": 1024,
    "moe_intermediate_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 2,
    "first_k_dense_replace": 1, "moe_layer_freq": 2, "num_attention_heads": 4, "num_hidden_layers": 6,
    "vocab_size": 1000, "q_lora_rank": null, "kv_lora_rank": 64, "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 16, "v_head_dim": 32})";
  const ModelSpec d = parse_hf_config(ds, "d.json", "m");
  CHECK(d.mla.enabled);
  CHECK(d.mla.q_lora_rank == 0);
  CHECK(!d.moe.router_bias);
  CHECK(d.moe.shared_experts == 2);
  CHECK(!d.is_moe_layer(1));
  CHECK(d.is_moe_layer(2));
  CHECK(!d.is_moe_layer(3));
  CHECK(d.is_moe_layer(4));
  CHECK(d.moe_layer_count() == 2);
}

TEST_CASE("unsupported model_type lists the supported ones") {
  std::string text = kMinimalLlama;
  text.replace(text.find("llama"), 5, "gemma3");
  const std::string msg = message_of<UsageError>([&] { parse_hf_config(text, "g.json", "m"); });
  CHECK(contains(msg, "g.json"));
  CHECK(contains(msg, "gemma3"));
  CHECK(contains(msg, "llama, mistral, mixtral, nemotron, qwen2, qwen3, qwen3_moe"));
  CHECK(contains(msg, "deepseek_v3"));
  CHECK(contains(msg, "gpt_neox"));
}

TEST_CASE("a missing field names the file and the field") {
  std::string text = kMinimalLlama;
  text.replace(text.find(R"("vocab_size": 1000)"), 18, R"("torch_dtype": "bfloat16")");
  const std::string msg = message_of<Error>([&] { parse_hf_config(text, "cfg/config.json", "m"); });
  CHECK(contains(msg, "cfg/config.json"));
  CHECK(contains(msg, "'vocab_size'"));
  CHECK(contains(msg, "missing"));

  std::string mixtral = kMinimalLlama;
  mixtral.replace(mixtral.find("llama"), 5, "mixtral");
  CHECK(contains(message_of<Error>([&] { parse_hf_config(mixtral, "x.json", "m"); }), "'num_local_experts'"));

  std::string wrong_type = kMinimalLlama;
  wrong_type.replace(wrong_type.find("256"), 3, "\"256\"");
  CHECK(contains(message_of<Error>([&] { parse_hf_config(wrong_type, "x.json", "m"); }), "'hidden_size'"));
}

TEST_CASE("malformed JSON gives the file, line and column") {
  // A missing comma at the end of line 3.
  const std::string text = "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 256\n  \"vocab_size\": 1000\n}\n";
  const std::string msg = message_of<Error>([&] { parse_hf_config(text, "broken.json", "m"); });
  CHECK(contains(msg, "broken.json:4:"));  // the unexpected token is on line 4
  CHECK(contains(msg, "malformed JSON"));
}

TEST_CASE("load_model reports a missing file as a file it cannot open, a misspelt name with a suggestion") {
  std::string msg = message_of<Error>([] { load_model("/nonexistent/config.json"); });
  CHECK(contains(msg, "cannot open '/nonexistent/config.json'"));
  msg = message_of<UsageError>([] { load_model("lama3-8b"); });
  CHECK(contains(msg, "did you mean 'llama3-8b'?"));
}

TEST_CASE("a number too large for a double is malformed JSON, not an escaping exception") {
  const std::string text = "{\"model_type\": \"llama\", \"intermediate_size\": 3e5248}";
  CHECK(contains(message_of<Error>([&] { parse_hf_config(text, "big.json", "m"); }), "big.json: malformed JSON"));
}
