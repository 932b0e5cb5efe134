#pragma once
// Row-major fp32 and fp64 GEMM on device pointers through cuBLASLt, for the CUDA backend of the
// float/double model runtime (kernels/ CublasLtGemm is bf16 only). fp32 computes in full fp32
// (CUBLAS_COMPUTE_32F) unless tf32 is asked for (CUBLAS_COMPUTE_32F_FAST_TF32, 10-bit mantissa
// inputs: faster, but losses then differ from the CPU backend at the 1e-3 level).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <tuple>

namespace sixfold {

class LtGemm {
 public:
  explicit LtGemm(bool tf32 = false, std::size_t workspace_bytes = std::size_t(32) << 20);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // C[m,n] = alpha op(A) op(B) + beta C, row-major; A is [m,k] ([k,m] when trans_a), B [k,n]
  // ([n,k] when trans_b). m, n, k > 0. Asynchronous on `stream`.
  void matmul(const float* a, const float* b, float* c, long m, long n, long k, bool trans_a, bool trans_b,
              float alpha, float beta, cudaStream_t stream);
  void matmul(const double* a, const double* b, double* c, long m, long n, long k, bool trans_a, bool trans_b,
              double alpha, double beta, cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t layout_x = nullptr, layout_y = nullptr, layout_c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<long, long, long, bool, bool, int, bool>;  // m n k ta tb dtype beta!=0
  const Plan& plan(long m, long n, long k, bool trans_a, bool trans_b, cudaDataType_t type, bool has_beta);
  void run(const void* a, const void* b, void* c, long m, long n, long k, bool trans_a, bool trans_b,
           cudaDataType_t type, const void* alpha, const void* beta, bool has_beta, cudaStream_t stream);

  bool tf32_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::map<Key, Plan> plans_;
};

}  // namespace sixfold
