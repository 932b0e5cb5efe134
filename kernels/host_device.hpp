#pragma once
// SIXFOLD_HD marks the per-row and per-element functions of the reference kernels (*_ref.hpp):
// the CPU references loop over them and the CUDA backend's generic kernels (generic_kernels.cu)
// run one thread per row or element of the very same functions, so each kernel's arithmetic is
// written once. Math goes through the global-namespace <cmath> overloads, which CUDA also
// provides on the device.
#include <cmath>

#if defined(__CUDACC__)
#define SIXFOLD_HD __host__ __device__
#else
#define SIXFOLD_HD
#endif

namespace sixfold {
SIXFOLD_HD inline bool is_infinite(double x) { return x == HUGE_VAL || x == -HUGE_VAL; }
}  // namespace sixfold
