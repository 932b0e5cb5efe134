#pragma once
// Every CUDA runtime and cuBLAS(Lt) call goes through these macros (the TransformerEngine habit):
// a failure throws sixfold::Error carrying the file, the line, the call and the library's own
// message, so the CLI can print one clear line instead of crashing later on a poisoned context.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "common/error.hpp"

namespace sixfold::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": CUDA error " + cudaGetErrorName(status) +
              " (" + cudaGetErrorString(status) + ") in " + call);
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": cuBLAS error " + cublasLtGetStatusName(status) +
              " (" + cublasLtGetStatusString(status) + ") in " + call);
}

}  // namespace sixfold::cuda::detail

#define CHECK_CUDA(call)                                                                      \
  do {                                                                                        \
    const cudaError_t sixfold_status_ = (call);                                               \
    if (sixfold_status_ != cudaSuccess)                                                       \
      ::sixfold::cuda::detail::throw_cuda_error(sixfold_status_, #call, __FILE__, __LINE__);  \
  } while (0)

#define CHECK_CUBLAS(call)                                                                      \
  do {                                                                                          \
    const cublasStatus_t sixfold_status_ = (call);                                              \
    if (sixfold_status_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::sixfold::cuda::detail::throw_cublas_error(sixfold_status_, #call, __FILE__, __LINE__);  \
  } while (0)

// A kernel launch reports configuration errors only through cudaGetLastError.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())
