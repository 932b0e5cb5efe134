#include "executor/runtime/measured_op_class.hpp"

namespace sixfold {

namespace {
bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
}  // namespace

std::string measured_op_class(const std::string& op) {
  if (starts_with(op, "recompute_")) return "";
  // The cost model prices the router's GEMM as class router and its top-k with the permutation.
  if (starts_with(op, "moe_router_gemm")) return "router";
  if (has(op, "permute")) return "permute";
  if (has(op, "gemm")) return "gemm";
  if (starts_with(op, "attention_")) return "attention";
  if (starts_with(op, "norm_")) return "norm";
  if (starts_with(op, "activation_") || starts_with(op, "rope_")) return "elementwise";
  if (starts_with(op, "embedding_")) return "embedding";
  if (starts_with(op, "cross_entropy_")) return "loss";
  if (starts_with(op, "optimizer")) return "optimizer";
  if (starts_with(op, "tp_") || starts_with(op, "cp_") || starts_with(op, "pp_") || starts_with(op, "dp_") ||
      starts_with(op, "ep_"))
    return "communication";
  return "other";
}

}  // namespace sixfold
