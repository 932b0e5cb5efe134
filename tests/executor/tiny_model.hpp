#pragma once
// The tiny model of the executor's equivalence tests: 4 layers, hidden 64, 4 heads, 2 KV heads.
#include "models/layout.hpp"
#include "models/model_spec.hpp"

namespace sixfold::test {

inline ModelSpec tiny_model(bool moe = false) {
  ModelSpec m;
  m.name = moe ? "tiny-moe" : "tiny";
  m.layers = 4;
  m.hidden = 64;
  m.ffn = 128;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 16;
  m.vocab = 128;
  m.max_seq = 16;
  m.norm = NormKind::RMSNorm;
  m.activation = Activation::SwiGLU;
  if (moe) {
    m.moe.num_experts = 4;
    m.moe.top_k = 2;
    m.moe.expert_ffn = 64;
  }
  return m;
}

// The GPT-2-style variant: LayerNorm, GELU, tied embeddings, half the head dim rotated.
inline ModelSpec tiny_gpt_model() {
  ModelSpec m = tiny_model();
  m.name = "tiny-gpt";
  m.norm = NormKind::LayerNorm;
  m.activation = Activation::GELU;
  m.tied_embeddings = true;
  m.rotary_fraction = 0.5;
  return m;
}

inline Workload tiny_workload(Count global_batch = 8, Count seq = 16) {
  Workload w;
  w.seq = seq;
  w.global_batch = global_batch;
  w.dtype = Dtype::FP32;
  return w;
}

}  // namespace sixfold::test
