// Row-major GEMM through cuBLASLt: bf16 with fp32 accumulation, fp32 (or TF32), fp64.
// cuBLASLt is column-major: a row-major C[m, n] is the column-major C^T[n, m], so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T, i.e. with the operands swapped and each
// row-major buffer read as its column-major transpose (the usual trick; see the cuBLAS docs,
// "cublasLtMatmul"). The heuristic's first algorithm is cached per shape.
#include <map>
#include <string>
#include <tuple>

#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

namespace {

// m n k ta tb input-type output-type beta!=0
using ShapeKey = std::tuple<long, long, long, bool, bool, int, int, bool>;

struct MatmulPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

const char* type_name(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_16F: return "fp16";
    case CUDA_R_8F_E4M3: return "fp8 e4m3";
    case CUDA_R_32F: return "fp32";
    case CUDA_R_64F: return "fp64";
    default: return "?";
  }
}

cudaDataType_t cuda_type(GemmType t) {
  switch (t) {
    case GemmType::BF16: return CUDA_R_16BF;
    case GemmType::FP16: return CUDA_R_16F;
    case GemmType::FP8_E4M3: return CUDA_R_8F_E4M3;
    case GemmType::FP32: return CUDA_R_32F;
    case GemmType::FP64: return CUDA_R_64F;
  }
  return CUDA_R_32F;
}

// cuBLASLt has no algorithm for these types and shape on this device (not a failure of the call).
struct NoAlgorithm : Error {
  using Error::Error;
};

}  // namespace

struct CublasLtGemm::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  bool tf32 = false;
  std::map<ShapeKey, MatmulPlan> plans;

  ~Impl() {
    for (auto& [key, plan] : plans) {
      cublasLtMatrixLayoutDestroy(plan.layout_a);
      cublasLtMatrixLayoutDestroy(plan.layout_b);
      cublasLtMatrixLayoutDestroy(plan.layout_c);
      cublasLtMatmulDescDestroy(plan.desc);
    }
    if (workspace) cudaFree(workspace);
    if (handle) cublasLtDestroy(handle);
  }

  const MatmulPlan& plan(long m, long n, long k, bool trans_a, bool trans_b, cudaDataType_t in_type,
                         cudaDataType_t out_type, bool has_beta) {
    const ShapeKey key{m, n, k, trans_a, trans_b, int(in_type), int(out_type), has_beta};
    auto found = plans.find(key);
    if (found != plans.end()) return found->second;

    MatmulPlan p;
    // bf16 and fp32 inputs accumulate (and scale) in fp32, fp64 in fp64.
    const bool f64 = in_type == CUDA_R_64F;
    const cublasComputeType_t compute =
        f64 ? CUBLAS_COMPUTE_64F
            : (in_type == CUDA_R_32F && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&p.desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F));
    // Column-major view: D[n, m] = X[n, k] * Y[k, m], X = op(B)^T, Y = op(A)^T.
    const cublasOperation_t op_x = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_y = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof op_x));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof op_y));
    // Stored (before op) shapes of the column-major views: B row-major [k, n] is column-major
    // [n, k] with ld n; B^T stored row-major [n, k] is column-major [k, n] with ld k; same for A.
    if (trans_b) CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_a, in_type, k, n, k));
    else CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_a, in_type, n, k, n));
    if (trans_a) CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_b, in_type, m, k, m));
    else CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_b, in_type, k, m, k));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p.layout_c, out_type, n, m, n));

    cublasLtMatmulPreference_t preference = nullptr;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace_bytes, sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.layout_a, p.layout_b,
                                                                 p.layout_c, p.layout_c, preference, 1, &result,
                                                                 &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
      cublasLtMatrixLayoutDestroy(p.layout_a);
      cublasLtMatrixLayoutDestroy(p.layout_b);
      cublasLtMatrixLayoutDestroy(p.layout_c);
      cublasLtMatmulDescDestroy(p.desc);
      throw NoAlgorithm(std::string("cuBLASLt found no algorithm for ") + type_name(in_type) + " GEMM m=" +
                  std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " (status " +
                  cublasLtGetStatusName(status) + ")");
    }
    p.algo = result.algo;
    return plans.emplace(key, p).first->second;
  }

  // alpha, beta: float for bf16 and fp32 inputs, double for fp64.
  void run(const void* a, const void* b, void* c, cudaDataType_t in_type, cudaDataType_t out_type, long m, long n,
           long k, bool trans_a, bool trans_b, const void* alpha, const void* beta, bool has_beta, Stream stream) {
    if (m < 0 || n < 0 || k < 0)
      throw UsageError("CublasLtGemm::matmul: m=" + std::to_string(m) + " n=" + std::to_string(n) +
                       " k=" + std::to_string(k) + " (allowed: >= 0)");
    if (m == 0 || n == 0) return;
    const MatmulPlan& p = plan(m, n, k, trans_a, trans_b, in_type, out_type, has_beta);
    CHECK_CUBLAS(cublasLtMatmul(handle, p.desc, alpha, b, p.layout_a, a, p.layout_b, beta, c, p.layout_c, c,
                                p.layout_c, &p.algo, workspace, workspace_bytes, as_cuda(stream)));
  }
};

CublasLtGemm::CublasLtGemm(std::size_t workspace_bytes, bool tf32) : impl_(std::make_unique<Impl>()) {
  CHECK_CUBLAS(cublasLtCreate(&impl_->handle));
  impl_->workspace_bytes = workspace_bytes;
  impl_->tf32 = tf32;
  if (workspace_bytes > 0) CHECK_CUDA(cudaMalloc(&impl_->workspace, workspace_bytes));
}

CublasLtGemm::~CublasLtGemm() = default;

std::size_t CublasLtGemm::workspace_bytes() const { return impl_->workspace_bytes; }

bool CublasLtGemm::try_matmul(GemmType in, GemmType out, const void* a, const void* b, void* c, long m, long n,
                              long k, bool trans_a, bool trans_b, double alpha, double beta, Stream stream) {
  if (in == GemmType::FP8_E4M3 && (trans_a || !trans_b))
    throw UsageError("CublasLtGemm: fp8 GEMMs run only as C = A B^T (trans_a false, trans_b true)");
  // The scale type is the accumulation's: fp64 for fp64 inputs, fp32 otherwise.
  const float alpha32 = float(alpha), beta32 = float(beta);
  const bool f64 = in == GemmType::FP64;
  const void* alpha_p = f64 ? static_cast<const void*>(&alpha) : &alpha32;
  const void* beta_p = f64 ? static_cast<const void*>(&beta) : &beta32;
  try {
    impl_->run(a, b, c, cuda_type(in), cuda_type(out), m, n, k, trans_a, trans_b, alpha_p, beta_p, beta != 0.0, stream);
  } catch (const NoAlgorithm&) {
    return false;
  }
  return true;
}

void CublasLtGemm::matmul(const Bf16* a, const Bf16* b, Bf16* c, int m, int n, int k, bool trans_a, bool trans_b,
                          float alpha, float beta, Stream stream) {
  impl_->run(a, b, c, CUDA_R_16BF, CUDA_R_16BF, m, n, k, trans_a, trans_b, &alpha, &beta, beta != 0.0f, stream);
}

void CublasLtGemm::matmul(const Bf16* a, const Bf16* b, float* c, int m, int n, int k, bool trans_a, bool trans_b,
                          float alpha, float beta, Stream stream) {
  impl_->run(a, b, c, CUDA_R_16BF, CUDA_R_32F, m, n, k, trans_a, trans_b, &alpha, &beta, beta != 0.0f, stream);
}

void CublasLtGemm::matmul(const float* a, const float* b, float* c, long m, long n, long k, bool trans_a,
                          bool trans_b, float alpha, float beta, Stream stream) {
  impl_->run(a, b, c, CUDA_R_32F, CUDA_R_32F, m, n, k, trans_a, trans_b, &alpha, &beta, beta != 0.0f, stream);
}

void CublasLtGemm::matmul(const double* a, const double* b, double* c, long m, long n, long k, bool trans_a,
                          bool trans_b, double alpha, double beta, Stream stream) {
  impl_->run(a, b, c, CUDA_R_64F, CUDA_R_64F, m, n, k, trans_a, trans_b, &alpha, &beta, beta != 0.0, stream);
}

}  // namespace sixfold::cuda
