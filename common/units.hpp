#pragma once
// Units live in the type names. Memory is counted in bytes and printed in binary GiB; link
// bandwidths are decimal (GB/s = 1e9 B/s), as NCCL and GPU vendors state them.
#include <cstdint>

namespace sixfold {

using Bytes = double;        // integer-valued where exact (weights, gradients, optimizer state)
using Seconds = double;
using Flops = double;        // floating-point operations (multiply and add counted as 2)
using FlopsPerSec = double;
using BytesPerSec = double;
using Count = std::int64_t;  // elements, tokens, parameters

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;
inline constexpr double kTera = 1e12;

inline double to_gib(Bytes b) { return b / kGiB; }

}  // namespace sixfold
