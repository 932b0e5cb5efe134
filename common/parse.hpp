#pragma once
// One parser for the numbers users type, on the command line and in files: counts, sizes,
// bandwidths, durations and plain numbers, each checked against the range its flag or field
// allows. Every error names what was read (`what`: "--gpus", "layout.tp"), the text, and what
// is allowed, and is a UsageError; file readers re-throw it with the file and line in front.
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/units.hpp"

namespace sixfold {

// Largest values anything reads: far above any real training run, low enough that the
// products sixfold forms (tokens x hidden x bytes, parameters x bytes) stay inside 64 bits.
namespace limits {
inline constexpr long long kGpus = 1LL << 20;              // GPUs in a job
inline constexpr long long kSeq = 1LL << 24;               // tokens per sequence
inline constexpr long long kGlobalBatch = 1LL << 24;       // sequences per step
inline constexpr long long kMicroBatchTokens = 1LL << 30;  // micro-batch x seq
inline constexpr long long kLayers = 1LL << 14;
inline constexpr long long kHidden = 1LL << 18;
inline constexpr long long kFfn = 1LL << 21;
inline constexpr long long kHeads = 1LL << 14;
inline constexpr long long kHeadDim = 1LL << 14;
inline constexpr long long kVocab = 1LL << 24;
inline constexpr long long kExperts = 1LL << 12;
inline constexpr long long kTopK = 256;
inline constexpr long long kLoraRank = 1LL << 16;
inline constexpr double kParameters = 1e15;                // total parameters of a model
inline constexpr long long kMtpLayers = 16;
inline constexpr long long kThreads = 4096;
inline constexpr long long kListItems = 256;               // items of a comma-separated list
inline constexpr double kBytes = 1LL << 60;                // any size (1 EiB)
inline constexpr double kRate = 1e18;                      // any bandwidth, B/s
inline constexpr double kSeconds = 365.0 * 24 * 3600;      // any duration
inline constexpr std::size_t kConfigFileBytes = 4u << 20;  // YAML and JSON configs, plans, profiles
inline constexpr std::size_t kCsvFileBytes = 64u << 20;    // validation CSVs
inline constexpr std::size_t kTraceFileBytes = 1u << 30;   // profiler traces
inline constexpr long long kCsvRows = 1000000;
inline constexpr long long kCsvColumns = 1024;
}  // namespace limits

// "NAME: MESSAGE" as a UsageError.
[[noreturn]] void value_error(const std::string& what, const std::string& message);

// A whole number in [min, max]: decimal digits with an optional sign, nothing else (no "8.0",
// "1e3", "eight", ""), and no overflow.
long long parse_count(const std::string& text, const std::string& what, long long min, long long max);
// A finite number (decimal or exponent notation) in [min, max].
double parse_number(const std::string& text, const std::string& what, double min, double max);

// Sizes: "80GiB", "141GB", "25MB", "512KiB", "4096B". Binary suffixes (KiB, MiB, GiB, TiB) are
// powers of 1024, decimal ones (KB, MB, GB, TB) of 1000. A bare number is refused: it has no unit.
// Positive unless allow_zero.
Bytes parse_size(const std::string& text, const std::string& what, bool allow_zero = false);
// Bandwidths: "900GB/s", "3.35TB/s", "25GiB/s", "400Gb/s", "400Gbps" (bits: / 8), "1e9B/s".
// A bare number is refused. Always positive.
BytesPerSec parse_rate(const std::string& text, const std::string& what);
// Durations: "5", "5s", "1.5ms", "25us", "100ns", "2min", "1h" (a bare number is seconds),
// in [min_s, max_s].
Seconds parse_duration(const std::string& text, const std::string& what, Seconds min_s = 0,
                       Seconds max_s = limits::kSeconds);

// Older spellings: the value named by its kind.
inline Bytes parse_size(const std::string& text) { return parse_size(text, "size", true); }
inline BytesPerSec parse_rate(const std::string& text) { return parse_rate(text, "rate"); }

// "a,b,,c" -> {"a", "b", "c"}, at most limits::kListItems items; an empty list is an error.
std::vector<std::string> split_list(const std::string& text, const std::string& what);

// a * b and a + b, throwing Error("WHAT: ... too large") instead of overflowing.
long long checked_mul(long long a, long long b, const std::string& what);
long long checked_add(long long a, long long b, const std::string& what);

}  // namespace sixfold
