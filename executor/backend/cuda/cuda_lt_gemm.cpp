// cuBLASLt is column-major. A row-major C[m,n] is the column-major C^T[n,m], so C = op(A) op(B)
// is computed as C^T = op(B)^T op(A)^T with the operands swapped and each row-major buffer read as
// its column-major transpose (cuBLAS documentation, "cublasLtMatmul"; the same view as
// kernels/gemm_cublaslt.cu). The heuristic's first algorithm is cached per shape.
#include "executor/backend/cuda/cuda_lt_gemm.hpp"

#include <string>

#include "kernels/cuda_check.cuh"

namespace sixfold {

LtGemm::LtGemm(bool tf32, std::size_t workspace_bytes) : tf32_(tf32), workspace_bytes_(workspace_bytes) {
  CHECK_CUBLAS(cublasLtCreate(&handle_));
  CHECK_CUDA(cudaMalloc(&workspace_, workspace_bytes_));
}

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.layout_x);
    cublasLtMatrixLayoutDestroy(p.layout_y);
    cublasLtMatrixLayoutDestroy(p.layout_c);
    cublasLtMatmulDescDestroy(p.desc);
  }
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

const LtGemm::Plan& LtGemm::plan(long m, long n, long k, bool trans_a, bool trans_b, cudaDataType_t type,
                                 bool has_beta) {
  const Key key{m, n, k, trans_a, trans_b, int(type), has_beta};
  if (auto found = plans_.find(key); found != plans_.end()) return found->second;
  Plan p;
  const bool f64 = type == CUDA_R_64F;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : (tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&p.desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F));
  // Column-major: C^T[n,m] = X[n,k] Y[k,m] with X = op(B)^T, Y = op(A)^T.
  const cublasOperation_t op_x = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_y = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof op_x));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof op_y));
  // Stored shapes: B row-major [k,n] is column-major [n,k] (ld n); B stored [n,k] is [k,n] (ld k).
  if (trans_b) CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_x, type, k, n, k));
  else CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_x, type, n, k, n));
  if (trans_a) CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_y, type, m, k, m));
  else CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_y, type, k, m, k));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_c, type, n, m, n));

  cublasLtMatmulPreference_t preference = nullptr;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes_, sizeof workspace_bytes_));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.layout_x, p.layout_y, p.layout_c,
                                                               p.layout_c, preference, 1, &result, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
    cublasLtMatrixLayoutDestroy(p.layout_x);
    cublasLtMatrixLayoutDestroy(p.layout_y);
    cublasLtMatrixLayoutDestroy(p.layout_c);
    cublasLtMatmulDescDestroy(p.desc);
    throw Error(std::string("cuBLASLt found no algorithm for ") + (f64 ? "fp64" : "fp32") +
                " GEMM m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                " (status " + cublasLtGetStatusName(status) + ")");
  }
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

void LtGemm::run(const void* a, const void* b, void* c, long m, long n, long k, bool trans_a, bool trans_b,
                 cudaDataType_t type, const void* alpha, const void* beta, bool has_beta, cudaStream_t stream) {
  const Plan& p = plan(m, n, k, trans_a, trans_b, type, has_beta);
  CHECK_CUBLAS(cublasLtMatmul(handle_, p.desc, alpha, b, p.layout_x, a, p.layout_y, beta, c, p.layout_c, c,
                              p.layout_c, &p.algo, workspace_, workspace_bytes_, stream));
}

void LtGemm::matmul(const float* a, const float* b, float* c, long m, long n, long k, bool trans_a, bool trans_b,
                    float alpha, float beta, cudaStream_t stream) {
  run(a, b, c, m, n, k, trans_a, trans_b, CUDA_R_32F, &alpha, &beta, beta != 0.0f, stream);
}

void LtGemm::matmul(const double* a, const double* b, double* c, long m, long n, long k, bool trans_a,
                    bool trans_b, double alpha, double beta, cudaStream_t stream) {
  run(a, b, c, m, n, k, trans_a, trans_b, CUDA_R_64F, &alpha, &beta, beta != 0.0, stream);
}

}  // namespace sixfold
