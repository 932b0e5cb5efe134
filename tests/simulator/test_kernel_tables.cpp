// Measured kernel tables: exact at measured points (read back from the YAML independently),
// monotone where the data are, plausible FLOP rates and bus bandwidths, the profile mapping, and
// errors that name the field.
#include <doctest/doctest.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "simulator/collective_cost.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/kernel_tables.hpp"

using namespace sixfold;

namespace {

const std::vector<std::string> kDevices = {"a100-sxm", "h100-sxm", "h200-sxm", "b200-sxm", "gb200"};

YAML::Node raw(const std::string& device) {
  auto text = builtin_text("configs/kernel_tables/" + device + ".yaml");
  REQUIRE(text);
  return YAML::Load(std::string(*text));
}

// A long list as the files write it (a block string of comma-separated numbers) or as a YAML list.
std::vector<double> numbers(const YAML::Node& n) {
  if (n.IsSequence()) return n.as<std::vector<double>>();
  std::string text = n.as<std::string>();
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::vector<double> out;
  for (double v; in >> v;) out.push_back(v);
  return out;
}

const KernelTables& tables(const std::string& device) {
  static std::map<std::string, KernelTables> cache;
  auto it = cache.find(device);
  if (it == cache.end()) it = cache.emplace(device, KernelTables::load(device)).first;
  return it->second;
}

double tflops(Count m, Count n, Count k, Seconds t) { return 2.0 * m * n * k / t / 1e12; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A small well-formed table; the malformed-table tests break one field at a time.
const char* kSmallTable = R"(schema_version: 1
device: test-gpu
provenance: {package: p, package_version: "1", licence: Apache-2.0, converted: 2026-01-01, converter: test}
gemm:
  source: {file: f, device: d, framework: x, version: "1", kernel_source: k}
  tables:
    - dtype: bf16
      m: [128, 1024]
      n: [128, 1024]
      k: [128, 1024]
      latency_us: [10, 20, 20, 40, 20, 40, 40, 80]
collectives:
  source: {file: f, device: d, framework: x, version: "1", kernel_source: NCCL}
  series:
    - collective: all_reduce
      gpus: 8
      message_bytes: [1024, 1048576]
      latency_us: [10, 100]
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("kernel tables: every built-in table loads and says where its numbers come from") {
  for (const auto& device : kDevices) {
    CAPTURE(device);
    const KernelTables& t = tables(device);
    CHECK(t.device() == device);
    auto prov = t.provenance();
    REQUIRE(prov.size() >= 4);
    CHECK(contains(prov[0], "aiconfigurator-core 0.12.0"));
    CHECK(contains(prov[0], "Apache-2.0"));
    CHECK(contains(t.gemm_source().file, "gemm_perf.parquet"));
    CHECK(contains(t.gemm_source().device, "NVIDIA"));
    CHECK(t.gemm_source().kernel_source == "torch_flow");
    CHECK(contains(t.attention_source().file, "context_attention_perf.parquet"));
    CHECK(contains(t.collective_source().file, "nccl_perf.parquet"));
    CHECK(t.gemm_time(Dtype::BF16, 4096, 4096, 4096).has_value());
    CHECK_FALSE(t.gemm_time(Dtype::FP32, 4096, 4096, 4096).has_value());
    CHECK_FALSE(t.gemm_time(Dtype::FP16, 4096, 4096, 4096).has_value());  // not measured: no alias to bf16 here
  }
  CHECK_FALSE(tables("a100-sxm").gemm_time(Dtype::FP8, 4096, 4096, 4096).has_value());  // Ampere has no fp8
  CHECK_THROWS_AS(KernelTables::load("no-such-gpu"), UsageError);
}

TEST_CASE("kernel tables: GEMM is exact at grid points and between its neighbours off them") {
  for (const auto& device : kDevices) {
    YAML::Node doc = raw(device);
    for (const auto& table : doc["gemm"]["tables"]) {
      auto m = table["m"].as<std::vector<Count>>();
      auto n = table["n"].as<std::vector<Count>>();
      auto k = table["k"].as<std::vector<Count>>();
      const auto lat = numbers(table["latency_us"]);
      Dtype dtype = table["dtype"].as<std::string>() == "fp8" ? Dtype::FP8 : Dtype::BF16;
      CAPTURE(device);
      CAPTURE(table["dtype"].as<std::string>());
      for (size_t im = 0; im < m.size(); im += 3)
        for (size_t in = 0; in < n.size(); in += 4)
          for (size_t ik = 1; ik < k.size(); ik += 5) {
            double expected = lat[(im * n.size() + in) * k.size() + ik] * 1e-6;
            auto got = tables(device).gemm_time(dtype, m[im], n[in], k[ik]);
            REQUIRE(got);
            CHECK(*got == doctest::Approx(expected).epsilon(1e-9));
            // Halfway (in log) to the next k: between the two measured neighbours.
            if (ik + 1 < k.size()) {
              Count mid = static_cast<Count>(std::sqrt(static_cast<double>(k[ik]) * static_cast<double>(k[ik + 1])));
              double next = lat[(im * n.size() + in) * k.size() + ik + 1] * 1e-6;
              auto between = tables(device).gemm_time(dtype, m[im], n[in], mid);
              REQUIRE(between);
              CHECK(*between >= std::min(expected, next) * (1 - 1e-12));
              CHECK(*between <= std::max(expected, next) * (1 + 1e-12));
            }
          }
    }
  }
}

TEST_CASE("kernel tables: GEMM is monotone along an axis wherever the measured data are") {
  const KernelTables& t = tables("h100-sxm");
  const GemmTable& g = t.gemm_tables().front();
  int lines_checked = 0;
  // Each axis in turn; the other two indices fixed on a coarse sub-grid.
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<Count>& along = axis == 0 ? g.m : axis == 1 ? g.n : g.k;
    for (size_t a = 0; a < 22; a += 3)
      for (size_t b = 0; b < 22; b += 3) {
        auto cell = [&](size_t i) -> std::array<size_t, 3> {
          if (axis == 0) return {i, a, b};
          if (axis == 1) return {std::min(a, g.m.size() - 1), i, b};
          return {std::min(a, g.m.size() - 1), b, i};
        };
        bool monotone = true;
        for (size_t i = 1; i < along.size() && monotone; ++i) {
          auto p = cell(i - 1), q = cell(i);
          monotone = g.at(q[0], q[1], q[2]) >= g.at(p[0], p[1], p[2]);
        }
        if (!monotone) continue;
        ++lines_checked;
        Seconds previous = 0;
        for (size_t i = 0; i + 1 < along.size(); ++i)
          for (int step = 0; step < 4; ++step) {
            double x = std::exp(std::log(static_cast<double>(along[i])) +
                                step / 4.0 * (std::log(static_cast<double>(along[i + 1])) - std::log(static_cast<double>(along[i]))));
            auto c = cell(0);
            Count m = g.m[c[0]], n = g.n[c[1]], k = g.k[c[2]];
            (axis == 0 ? m : axis == 1 ? n : k) = static_cast<Count>(std::llround(x));
            Seconds now = *t.gemm_time(Dtype::BF16, m, n, k);
            CHECK(now >= previous * (1 - 1e-12));
            previous = now;
          }
      }
  }
  CHECK(lines_checked >= 20);  // the test must see data, not skip everything
}

TEST_CASE("kernel tables: GEMM FLOP rates are plausible and FP8 beats BF16 on Hopper") {
  Seconds h100 = *tables("h100-sxm").gemm_time(Dtype::BF16, 8192, 8192, 8192);
  Seconds a100 = *tables("a100-sxm").gemm_time(Dtype::BF16, 8192, 8192, 8192);
  MESSAGE("H100 bf16 8192^3: " << tflops(8192, 8192, 8192, h100) << " TFLOP/s; A100: " << tflops(8192, 8192, 8192, a100));
  CHECK(tflops(8192, 8192, 8192, h100) > 550);  // cuBLASLt at 700 W: ~80% of the 989 TFLOP/s peak
  CHECK(tflops(8192, 8192, 8192, h100) < 800);
  CHECK(tflops(8192, 8192, 8192, a100) > 200);  // of 312
  CHECK(tflops(8192, 8192, 8192, a100) < 300);
  for (auto [m, n, k] : {std::array<Count, 3>{8192, 8192, 8192}, {16384, 8192, 8192}, {8192, 28672, 8192}, {4096, 16384, 4096}}) {
    CAPTURE(m);
    CAPTURE(n);
    Seconds bf16 = *tables("h100-sxm").gemm_time(Dtype::BF16, m, n, k);
    Seconds fp8 = *tables("h100-sxm").gemm_time(Dtype::FP8, m, n, k);
    CHECK(fp8 < 0.8 * bf16);
    CHECK(tflops(m, n, k, fp8) < 1979);  // below the dense fp8 peak
  }
  // Off the grid the edge's FLOP rate is held: twice the largest m takes twice as long.
  const GemmTable& g = tables("h100-sxm").gemm_tables().front();
  Count m_max = g.m.back();
  Seconds edge = *tables("h100-sxm").gemm_time(Dtype::BF16, m_max, 4096, 4096);
  CHECK(*tables("h100-sxm").gemm_time(Dtype::BF16, 2 * m_max, 4096, 4096) == doctest::Approx(2 * edge));
  CHECK_FALSE(tables("h100-sxm").gemm_time(Dtype::BF16, 0, 4096, 4096).has_value());
}

TEST_CASE("kernel tables: attention forward is exact where measured and plausible elsewhere") {
  const KernelTables& h100 = tables("h100-sxm");
  YAML::Node att = raw("h100-sxm")["attention"];
  auto batch = att["batch"].as<std::vector<Count>>();
  auto seq = att["seq"].as<std::vector<Count>>();
  int checked = 0;
  for (const auto& s : att["series"]) {
    auto counts = s["counts"].as<std::vector<size_t>>();
    const auto lat = numbers(s["latency_us"]);
    size_t at = 0;
    for (size_t i = 0; i < seq.size(); ++i) {
      for (size_t b = 0; b < counts[i]; ++b, ++at) {
        if ((at % 37) != 0) continue;
        auto got = h100.attention_forward_time(batch[b], seq[i], s["heads"].as<Count>(), s["kv_heads"].as<Count>(),
                                               s["head_dim"].as<Count>(), true);
        REQUIRE(got);
        CHECK(*got == doctest::Approx(lat[at] * 1e-6).epsilon(1e-9));
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
  // FlashAttention-3 forward, causal, head dim 128: ~600 TFLOP/s at long sequences on H100.
  auto long_seq = h100.attention_forward_time(1, 16384, 32, 8, 128, true);
  REQUIRE(long_seq);
  double flops = 4.0 * 16384.0 * 16384.0 * 32 * 128 / 2;
  MESSAGE("H100 FA3 causal fwd s=16k h=32 d=128: " << flops / *long_seq / 1e12 << " TFLOP/s");
  CHECK(flops / *long_seq / 1e12 > 400);
  CHECK(flops / *long_seq / 1e12 < 800);
  // Not covered: non-causal, head dims outside the measured ones.
  CHECK_FALSE(h100.attention_forward_time(1, 4096, 32, 8, 128, false).has_value());
  CHECK_FALSE(h100.attention_forward_time(1, 4096, 32, 8, 512, false).has_value());
  CHECK_FALSE(h100.attention_forward_time(1, 4096, 32, 8, 32, true).has_value());
  // Longer sequences take longer; beyond the table the FLOP rate is held (time ~ seq^2).
  Seconds previous = 0;
  for (Count s : {512, 1000, 2048, 3000, 4096, 8192, 16384, 32768}) {
    Seconds t = *h100.attention_forward_time(2, s, 32, 8, 128, true);
    CHECK(t > previous);
    previous = t;
  }
  CHECK(*h100.attention_forward_time(1, 32768, 32, 8, 128, true) == doctest::Approx(4 * *long_seq));
  // batch x heads is what counts: 2 x 16 heads costs about what 1 x 32 heads does.
  Seconds wide = *h100.attention_forward_time(1, 8192, 32, 8, 128, true);
  Seconds split = *h100.attention_forward_time(2, 8192, 16, 4, 128, true);
  CHECK(split == doctest::Approx(wide).epsilon(0.15));
  // An unmeasured head dim sits between its neighbours.
  Seconds d128 = *h100.attention_forward_time(4, 4096, 16, 2, 128, true);
  Seconds d192 = *h100.attention_forward_time(4, 4096, 16, 2, 192, true);
  Seconds d160 = *h100.attention_forward_time(4, 4096, 16, 2, 160, true);
  CHECK(d160 >= std::min(d128, d192));
  CHECK(d160 <= std::max(d128, d192));
}

TEST_CASE("kernel tables: collectives are exact where measured and grow with the message") {
  for (const auto& device : kDevices) {
    CAPTURE(device);
    const KernelTables& t = tables(device);
    for (const auto& s : raw(device)["collectives"]["series"]) {
      auto bytes = s["message_bytes"].as<std::vector<double>>();
      const auto lat = numbers(s["latency_us"]);
      const auto& kind_name = s["collective"].as<std::string>();
      Collective kind = kind_name == "all_reduce"       ? Collective::AllReduce
                        : kind_name == "all_gather"     ? Collective::AllGather
                        : kind_name == "reduce_scatter" ? Collective::ReduceScatter
                                                        : Collective::AllToAll;
      int gpus = s["gpus"].as<int>();
      for (size_t i = 0; i < bytes.size(); i += 4) CHECK(*t.collective_time(kind, gpus, bytes[i]) == doctest::Approx(lat[i] * 1e-6));
      // From 1 MiB up (smaller messages sit on the latency floor, where timing noise dominates).
      Seconds previous = 0;
      for (double b = kMiB; b <= 4 * kGiB; b *= 1.7) {
        Seconds now = *t.collective_time(kind, gpus, b);
        CHECK(now > previous);
        previous = now;
      }
    }
    CHECK_FALSE(t.collective_time(Collective::RingExchange, 4, kMiB).has_value());
    CHECK_FALSE(t.collective_time(Collective::AllReduce, 1, kMiB).has_value());
    CHECK_FALSE(t.collective_time(Collective::AllReduce, 16, kMiB).has_value());
  }
  // NVLink 4 all-reduce of 1 GiB on 8 H100: busbw = size / time x 2(n-1)/n, a few hundred GB/s.
  Seconds t = *tables("h100-sxm").collective_time(Collective::AllReduce, 8, kGiB);
  double busbw = kGiB / t * 2 * 7 / 8 / 1e9;
  MESSAGE("H100 all_reduce 1 GiB on 8 GPUs: busbw " << busbw << " GB/s");
  CHECK(busbw > 250);
  CHECK(busbw < 600);
  // A GPU count between measured ones lies between them in time.
  Seconds four = *tables("h100-sxm").collective_time(Collective::AllGather, 4, 64 * kMiB);
  Seconds six = *tables("h100-sxm").collective_time(Collective::AllGather, 6, 64 * kMiB);
  Seconds eight = *tables("h100-sxm").collective_time(Collective::AllGather, 8, 64 * kMiB);
  CHECK(six >= std::min(four, eight));
  CHECK(six <= std::max(four, eight));
}

TEST_CASE("kernel tables: hardware profiles map to tables, with sections that do not carry over removed") {
  const KernelTables* h100 = kernel_tables_for("h100-sxm-80g");
  const KernelTables* h800 = kernel_tables_for("h800-sxm-80g");
  REQUIRE(h100);
  REQUIRE(h800);
  CHECK(h100 == kernel_tables_for("h100-sxm-80g"));  // loaded once
  CHECK(*h800->gemm_time(Dtype::BF16, 8192, 8192, 8192) == *h100->gemm_time(Dtype::BF16, 8192, 8192, 8192));
  CHECK(h800->attention_forward_time(1, 4096, 32, 8, 128, true).has_value());
  CHECK(h100->collective_time(Collective::AllReduce, 8, kGiB).has_value());
  CHECK_FALSE(h800->collective_time(Collective::AllReduce, 8, kGiB).has_value());  // 400 GB/s NVLink, not measured
  CHECK(contains(h800->provenance().back(), "400 GB/s"));
  const KernelTables* capped = kernel_tables_for("h100-96g-500w");
  REQUIRE(capped);
  CHECK_FALSE(capped->gemm_time(Dtype::BF16, 8192, 8192, 8192).has_value());
  CHECK(capped->collective_time(Collective::AllReduce, 8, kGiB).has_value());
  CHECK(kernel_tables_for("rtx-4090") == nullptr);
  CHECK(kernel_tables_for("cpu-dev") == nullptr);
  CHECK(kernel_tables_for("no-such-profile") == nullptr);
  // Every profile with a table exists (guards the mapping against typos).
  int mapped = 0;
  for (const auto& name : builtin_names("configs/hardware")) mapped += kernel_tables_for(name) != nullptr;
  CHECK(mapped == 8);
  CHECK(kernel_tables_for("gb200")->collective_time(Collective::AllReduce, 4, kMiB).has_value());
  CHECK_FALSE(kernel_tables_for("gb200")->collective_time(Collective::AllReduce, 8, kMiB).has_value());
}

TEST_CASE("kernel tables: a malformed table is an Error naming the file, the field and what is allowed") {
  auto parse = [](const std::string& text) { KernelTables::parse(text, "bad.yaml"); };
  // The well-formed base parses and answers.
  KernelTables ok = KernelTables::parse(kSmallTable, "small.yaml");
  CHECK(*ok.gemm_time(Dtype::BF16, 128, 128, 128) == doctest::Approx(10e-6));
  CHECK(*ok.gemm_time(Dtype::BF16, 1024, 1024, 1024) == doctest::Approx(80e-6));
  CHECK(*ok.collective_time(Collective::AllReduce, 8, 1048576) == doctest::Approx(100e-6));

  std::string e = error_of([&] { parse(replaced(kSmallTable, "[10, 20, 20, 40, 20, 40, 40, 80]", "[10, 20]")); });
  CHECK(contains(e, "bad.yaml"));
  CHECK(contains(e, "gemm.tables[0].latency_us"));
  CHECK(contains(e, "exactly 8"));

  e = error_of([&] { parse(replaced(kSmallTable, "[10, 20, 20, 40,", "[10, -20, 20, 40,")); });
  CHECK(contains(e, "gemm.tables[0].latency_us[1]"));
  CHECK(contains(e, "-20"));

  // The block form the generator writes reads the same, and names a bad cell by its index.
  const std::string block = replaced(kSmallTable, "latency_us: [10, 20, 20, 40, 20, 40, 40, 80]",
                                     "latency_us: |\n        10, 20, 20, 40,\n        20, 40, 40, 80");
  CHECK(*KernelTables::parse(block, "block.yaml").gemm_time(Dtype::BF16, 1024, 1024, 1024) == doctest::Approx(80e-6));
  e = error_of([&] { parse(replaced(block, "20, 40, 40, 80", "20, 40, x40, 80")); });
  CHECK(contains(e, "gemm.tables[0].latency_us[6]"));
  CHECK(contains(e, "x40"));
  e = error_of([&] { parse(replaced(block, "20, 40, 40, 80", "20, 40, 0, 80")); });
  CHECK(contains(e, "gemm.tables[0].latency_us[6]"));
  CHECK(contains(e, "positive latency"));
  e = error_of([&] { parse(replaced(block, "20, 40, 40, 80", "20, 40, 40")); });
  CHECK(contains(e, "exactly 8"));

  e = error_of([&] { parse(replaced(kSmallTable, "dtype: bf16", "dtype: int4")); });
  CHECK(contains(e, "gemm.tables[0].dtype"));
  CHECK(contains(e, "int4"));
  CHECK(contains(e, "allowed: bf16, fp16, fp8"));

  e = error_of([&] { parse(replaced(kSmallTable, "m: [128, 1024]", "m: [1024, 128]")); });
  CHECK(contains(e, "gemm.tables[0].m[1]"));
  CHECK(contains(e, "increasing"));

  e = error_of([&] { parse(replaced(kSmallTable, "collective: all_reduce", "collective: broadcast")); });
  CHECK(contains(e, "collectives.series[0].collective"));
  CHECK(contains(e, "broadcast"));

  e = error_of([&] { parse(replaced(kSmallTable, "gpus: 8", "gpus: 1")); });
  CHECK(contains(e, "collectives.series[0].gpus"));

  e = error_of([&] { parse(replaced(kSmallTable, "schema_version: 1", "schema_version: 7")); });
  CHECK(contains(e, "schema_version"));
  CHECK(contains(e, "allowed: 1"));

  e = error_of([&] { parse(replaced(kSmallTable, "licence: Apache-2.0, ", "")); });
  CHECK(contains(e, "provenance.licence"));
  CHECK(contains(e, "missing"));

  e = error_of([&] { parse(replaced(kSmallTable, "latency_us: [10, 100]", "latency_us: [10, fast]")); });
  CHECK(contains(e, "collectives.series[0].latency_us[1]"));
  CHECK(contains(e, "fast"));
}

TEST_CASE("collectives inside a node are priced from the measured NCCL table, an overridden NVLink falls back to the curve") {
  HardwareProfile hw = load_hardware("h100-sxm-80g");
  GroupPlacement eight;
  eight.size = 8;
  eight.ranks_per_node = 8;
  const Bytes message = 256.0 * 1024 * 1024;
  const KernelTables* tables = kernel_tables_for("h100-sxm-80g");
  REQUIRE(tables);
  const auto measured = tables->collective_time(Collective::AllReduce, 8, message);
  REQUIRE(measured);
  CHECK(collective_time(Collective::AllReduce, message, eight, hw) == doctest::Approx(*measured));
  ClusterOverrides same, other;
  same.intra_node_bandwidth = hw.intra_node_bandwidth;  // a plan file restating the profile's value
  other.intra_node_bandwidth = hw.intra_node_bandwidth / 2;
  HardwareProfile restated = hw, halved = hw;
  apply_overrides(restated, same);
  apply_overrides(halved, other);
  CHECK(collective_time(Collective::AllReduce, message, eight, restated) == doctest::Approx(*measured));
  CHECK(collective_time(Collective::AllReduce, message, eight, halved) > 1.5 * *measured);
  // Across nodes there is no table: the profile's curve.
  GroupPlacement across = eight;
  across.size = 16;
  across.crosses_nodes = true;
  CHECK(collective_time(Collective::AllReduce, message, across, hw) > *measured);
}

TEST_CASE("kernel tables: remembered lookups belong to their own table, also one parsed where another was") {
  // The per-thread lookup cache must never answer for a table that has gone: parse, query and
  // drop tables of different contents in the same place, and query restricted copies.
  for (int round = 0; round < 3; ++round) {
    const std::string scale = round == 0 ? "[10, 20, 20, 40, 20, 40, 40, 80]" : round == 1 ? "[20, 40, 40, 80, 40, 80, 80, 160]"
                                                                                          : "[5, 10, 10, 20, 10, 20, 20, 40]";
    const double first = round == 0 ? 10 : round == 1 ? 20 : 5;
    const KernelTables t = KernelTables::parse(replaced(kSmallTable, "[10, 20, 20, 40, 20, 40, 40, 80]", scale), "t.yaml");
    CHECK(*t.gemm_time(Dtype::BF16, 128, 128, 128) == doctest::Approx(first * 1e-6));
    CHECK(*t.gemm_time(Dtype::BF16, 128, 128, 128) == doctest::Approx(first * 1e-6));  // remembered, same answer
    CHECK_FALSE(t.restricted(false, true, true, "no gemm").gemm_time(Dtype::BF16, 128, 128, 128).has_value());
  }
}

TEST_CASE("kernel tables: a filled GEMM cell runs at a measured neighbour's rate, never at a filled one's") {
  // The importer once let filled cells seed their neighbours: the unmeasured row m 32768, n 65536
  // took the memory-bound rate of k 32 (86 TFLOP/s) at every k, and a 100k-vocab output head at
  // 32k tokens a micro-batch was priced 9x too slow. Every filled cell must carry the rate of a
  // measured cell on one of its three axes (or, in the one corner with none, of the nearest one).
  for (const std::string& device : kDevices) {
    const YAML::Node gemm = raw(device)["gemm"];
    for (const YAML::Node& t : gemm["tables"]) {
      if (!t["filled"]) continue;
      const std::vector<double> m = numbers(t["m"]), n = numbers(t["n"]), k = numbers(t["k"]);
      const std::vector<double> lat = numbers(t["latency_us"]);
      const std::vector<double> filled_list = numbers(t["filled"]);
      std::vector<bool> filled(lat.size(), false);
      for (double i : filled_list) filled[size_t(i)] = true;
      auto at = [&](size_t im, size_t in, size_t ik) { return (im * n.size() + in) * k.size() + ik; };
      auto rate = [&](size_t im, size_t in, size_t ik) { return 2 * m[im] * n[in] * k[ik] / lat[at(im, in, ik)]; };
      for (size_t im = 0; im < m.size(); ++im)
        for (size_t in = 0; in < n.size(); ++in)
          for (size_t ik = 0; ik < k.size(); ++ik) {
            if (!filled[at(im, in, ik)]) continue;
            CAPTURE(device);
            CAPTURE(m[im]);
            CAPTURE(n[in]);
            CAPTURE(k[ik]);
            // A measured cell on one of its three axis lines (two coordinates shared); where
            // those lines hold none, any measured cell.
            bool on_line = false, matched = false;
            for (size_t j = 0; j < lat.size(); ++j) {
              if (filled[j]) continue;
              const size_t jm = j / (n.size() * k.size()), jn = (j / k.size()) % n.size(), jk = j % k.size();
              const bool line = (jm == im) + (jn == in) + (jk == ik) == 2;
              const bool same_rate = std::abs(rate(jm, jn, jk) / rate(im, in, ik) - 1) < 0.01;
              on_line = on_line || line;
              matched = matched || (line && same_rate);
            }
            if (!on_line)
              for (size_t j = 0; j < lat.size() && !matched; ++j)
                if (!filled[j]) {
                  const size_t jm = j / (n.size() * k.size()), jn = (j / k.size()) % n.size(), jk = j % k.size();
                  matched = std::abs(rate(jm, jn, jk) / rate(im, in, ik) - 1) < 0.01;
                }
            CHECK(matched);
          }
      // The row that broke: m 32768 (the largest Hopper m), n 65536, k 2048 runs near the rate of
      // its measured neighbour n 51200.
      if (device == "h100-sxm" && t["dtype"].as<std::string>() == "bf16") {
        const Seconds head = *tables(device).gemm_time(Dtype::BF16, 32768, 100352, 2048);
        const Seconds near = *tables(device).gemm_time(Dtype::BF16, 32768, 51200, 2048);
        CHECK(tflops(32768, 100352, 2048, head) > 0.8 * tflops(32768, 51200, 2048, near));
      }
    }
  }
}
