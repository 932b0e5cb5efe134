// The cuBLASLt entry points sixfold calls, each forwarding to libcublasLt loaded with dlopen on its
// first use. Why not link it: mapping and relocating libcublasLt costs every process 0.13 s and
// ~200 MiB before main() (an empty main() linked against it measures the same; bench/RESULTS.md,
// "Commands that run no kernel"), and only `run --backend cuda`, `calibrate --backend cuda` and the
// GPU tests ever call it. NCCL and CUPTI cost nothing measurable to link and stay linked.
//
// The library is found as the dynamic loader finds any: LD_LIBRARY_PATH, then the RUNPATH the build
// gives the binary (the toolkit's library folder). A missing library is a sixfold::Error naming it.
#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "common/error.hpp"

namespace {

// The soname of the cuBLAS major version the headers were compiled against.
const std::string& library_name() {
  static const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  return name;
}

void* library() {
  static void* handle = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    handle = dlopen(library_name().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      failure = why ? why : "unknown dlopen failure";
    }
  });
  if (!handle)
    throw sixfold::Error("cannot load " + library_name() + " (" + failure +
                         "); point LD_LIBRARY_PATH at the CUDA libraries (the toolkit's lib folder, or a PyTorch "
                         "install's nvidia/cublas/lib)");
  return handle;
}

// The address of `name` in the library, with the type of the declaration the header gives it.
template <class Fn>
Fn entry(Fn /*declared*/, const char* name) {
  void* address = dlsym(library(), name);
  if (!address) throw sixfold::Error(library_name() + " has no symbol " + name + " (a cuBLAS older than the headers?)");
  return reinterpret_cast<Fn>(address);
}

}  // namespace

// One line per function: a function-local static resolves the symbol once, thread-safely.
#define SIXFOLD_LT(name) static const auto fn = entry(&::name, #name)

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  SIXFOLD_LT(cublasLtCreate);
  return fn(handle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  SIXFOLD_LT(cublasLtDestroy);
  return fn(handle);
}

// Called while reporting another failure: never throws, names the status by number instead.
const char* cublasLtGetStatusName(cublasStatus_t status) {
  try {
    SIXFOLD_LT(cublasLtGetStatusName);
    return fn(status);
  } catch (const sixfold::Error&) {
    return "cuBLAS status (library not loaded)";
  }
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
  try {
    SIXFOLD_LT(cublasLtGetStatusString);
    return fn(status);
  } catch (const sixfold::Error&) {
    return "library not loaded";
  }
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t a_layout, const void* b, cublasLtMatrixLayout_t b_layout,
                              const void* beta, const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  SIXFOLD_LT(cublasLtMatmul);
  return fn(handle, desc, alpha, a, a_layout, b, b_layout, beta, c, c_layout, d, d_layout, algo, workspace,
            workspace_bytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  SIXFOLD_LT(cublasLtMatmulAlgoGetHeuristic);
  return fn(handle, desc, a, b, c, d, preference, requested, results, returned);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  SIXFOLD_LT(cublasLtMatmulDescCreate);
  return fn(desc, compute, scale);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  SIXFOLD_LT(cublasLtMatmulDescDestroy);
  return fn(desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  SIXFOLD_LT(cublasLtMatmulDescSetAttribute);
  return fn(desc, attr, buf, bytes);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  SIXFOLD_LT(cublasLtMatmulPreferenceCreate);
  return fn(pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  SIXFOLD_LT(cublasLtMatmulPreferenceDestroy);
  return fn(pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  SIXFOLD_LT(cublasLtMatmulPreferenceSetAttribute);
  return fn(pref, attr, buf, bytes);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  SIXFOLD_LT(cublasLtMatrixLayoutCreate);
  return fn(layout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  SIXFOLD_LT(cublasLtMatrixLayoutDestroy);
  return fn(layout);
}

}  // extern "C"
