// Hardware profiles: every built-in loads and carries a source for every value; datasheet spot checks;
// overrides; errors that name the file, line and field.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string builtin(const std::string& name) {
  auto text = builtin_text("configs/hardware/" + name + ".yaml");
  REQUIRE(text);
  return std::string(*text);
}

// Replaces the first occurrence of `from` in `text`; fails the test when absent, so that a test
// cannot pass by editing nothing.
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, "pattern not found: " << from);
  return text.replace(pos, from.size(), to);
}

// The numeric fields every profile must have, by provenance key.
const std::vector<std::string> kNumericFields = {
    "memory_capacity",       "memory_bandwidth",       "sm_count",
    "gpus_per_node",         "intra_node_bandwidth",   "pcie_only",
    "network_bandwidth",     "network_latency",        "gemm.max_efficiency",
    "gemm.half_dim",         "gemm.tile",              "attention_efficiency",
    "memory_efficiency",     "intra_node.peak_busbw",  "intra_node.half_size",
    "intra_node.latency",    "inter_node.peak_busbw",  "inter_node.half_size",
    "inter_node.latency",    "context_memory"};

}  // namespace

TEST_CASE("every built-in hardware profile loads and validates") {
  auto names = builtin_hardware_names();
  std::set<std::string> have(names.begin(), names.end());
  // The names the validation data (data/validation) and the task list use.
  for (const char* expected : {"a100-sxm-40g", "a100-sxm-80g", "h100-sxm-80g", "h100-96g-500w", "h200-sxm-141g",
                               "h800-sxm-80g", "rtx-4090", "b200", "gb200"})
    CHECK_MESSAGE(have.count(expected) == 1, "missing built-in profile " << expected);

  for (const auto& name : names) {
    CAPTURE(name);
    HardwareProfile hw = load_hardware(name);
    CHECK(hw.name == name);
    CHECK(hw.peak(Dtype::BF16) > 0);
    CHECK(hw.memory_capacity > 0);
    CHECK(hw.memory_bandwidth > 0);
    CHECK(hw.sm_count > 0);
    CHECK(hw.intra_node.peak_busbw > 0);
    CHECK(hw.inter_node.peak_busbw > 0);
    // A sanity relation that catches unit slips (GB vs Gb, per node vs per GPU): measured or assumed
    // bus bandwidths never exceed the links they run on by more than NVLS's in-switch reduction allows.
    CHECK(hw.intra_node.peak_busbw <= 1.1 * hw.intra_node_bandwidth);
    CHECK(hw.inter_node.peak_busbw <= hw.network_bandwidth);
    CHECK(hw.context_memory < 0.1 * hw.memory_capacity);
  }
}

TEST_CASE("datasheet spot checks") {
  HardwareProfile h100 = load_hardware("h100-sxm-80g");
  // NVIDIA H100 datasheet: BF16 1,979 TFLOPS with sparsity -> ~989 dense; HBM3 3.35 TB/s; NVLink 900 GB/s.
  CHECK(std::abs(h100.peak(Dtype::BF16) / kTera - 989) < 1.0);
  CHECK(std::abs(h100.peak(Dtype::FP8) / kTera - 1979) < 1.0);
  CHECK(h100.memory_bandwidth == doctest::Approx(3.35e12));
  CHECK(h100.intra_node_bandwidth == doctest::Approx(450e9));
  CHECK(h100.network_bandwidth == doctest::Approx(50e9));
  CHECK(h100.sm_count == 132);

  HardwareProfile a100 = load_hardware("a100-sxm-80g");
  CHECK(a100.peak(Dtype::BF16) == doctest::Approx(312e12));
  CHECK(a100.peak(Dtype::TF32) == doctest::Approx(156e12));
  CHECK(a100.intra_node_bandwidth == doctest::Approx(300e9));
  CHECK(a100.network_bandwidth == doctest::Approx(25e9));
  CHECK(a100.memory_bandwidth == doctest::Approx(2039e9));
  // A100 has no FP8 tensor cores: asking for it is an error naming the dtypes it has.
  std::string msg = error_of([&] { a100.peak(Dtype::FP8); });
  CHECK(contains(msg, "fp8"));
  CHECK(contains(msg, "bf16"));

  HardwareProfile h200 = load_hardware("h200-sxm-141g");
  CHECK(h200.memory_capacity == doctest::Approx(141 * kGiB));
  CHECK(h200.memory_bandwidth == doctest::Approx(4.8e12));

  HardwareProfile h800 = load_hardware("h800-sxm-80g");
  CHECK(h800.intra_node_bandwidth == doctest::Approx(200e9));
  CHECK(h800.peak(Dtype::BF16) == doctest::Approx(h100.peak(Dtype::BF16)));

  HardwareProfile rtx = load_hardware("rtx-4090");
  CHECK(rtx.pcie_only);
  CHECK(rtx.memory_capacity == doctest::Approx(24 * kGiB));
  CHECK_FALSE(h100.pcie_only);
}

TEST_CASE("every numeric field of every built-in profile has a typed provenance") {
  const std::regex kind(R"(^(datasheet|whitepaper|publication|measurement|fit|prior|derived): \S.*)");
  for (const auto& name : builtin_hardware_names()) {
    CAPTURE(name);
    HardwareProfile hw = load_hardware(name);
    for (const auto& field : kNumericFields) {
      CAPTURE(field);
      auto it = hw.provenance.find(field);
      REQUIRE(it != hw.provenance.end());
      CHECK(std::regex_match(it->second, kind));
    }
    for (const auto& [dtype, flops] : hw.peak_flops) {
      std::string field = "peak_tflops." + to_string(dtype);
      CAPTURE(field);
      REQUIRE(hw.provenance.count(field) == 1);
      CHECK(std::regex_match(hw.provenance.at(field), kind));
    }
    // Efficiencies are priors or come from data, never from a datasheet.
    for (const char* eff : {"gemm.max_efficiency", "attention_efficiency", "memory_efficiency"})
      CHECK_FALSE(hw.provenance.at(eff).rfind("datasheet", 0) == 0);
  }
}

TEST_CASE("a value without a source is rejected") {
  std::string text = replace_once(builtin("a100-sxm-80g"), "sm_count: {value: 108, source: \"whitepaper: A100-WP, A100 has 108 SMs\"}",
                                  "sm_count: 108");
  std::string msg = error_of([&] { parse_hardware(text, "edited.yaml"); });
  CHECK(contains(msg, "edited.yaml:"));
  CHECK(contains(msg, "sm_count"));
  CHECK(contains(msg, "source"));

  std::string untyped = replace_once(builtin("a100-sxm-80g"), "source: \"whitepaper: A100-WP, A100 has 108 SMs\"",
                                     "source: \"I read it somewhere\"");
  msg = error_of([&] { parse_hardware(untyped, "edited.yaml"); });
  CHECK(contains(msg, "sm_count.source"));
  CHECK(contains(msg, "datasheet"));
}

TEST_CASE("overrides replace cluster values and record where they came from") {
  HardwareProfile hw = load_hardware("h100-sxm-80g");
  ClusterOverrides o;
  o.gpus_per_node = 4;
  o.network_bandwidth = 25e9;
  o.network_latency = 7e-6;
  apply_overrides(hw, o);
  CHECK(hw.gpus_per_node == 4);
  CHECK(hw.network_bandwidth == doctest::Approx(25e9));
  CHECK(hw.network_latency == doctest::Approx(7e-6));
  CHECK(hw.intra_node_bandwidth == doctest::Approx(450e9));  // untouched
  CHECK(hw.provenance.at("gpus_per_node").rfind("override: command line", 0) == 0);
  CHECK(contains(hw.provenance.at("network_bandwidth"), "replaces datasheet"));

  ClusterOverrides bad;
  bad.network_bandwidth = -1;
  CHECK_THROWS_AS(apply_overrides(hw, bad), UsageError);
}

TEST_CASE("a rack-scale NVLink domain spans hosts: GB200 NVL72 is 72 GPUs on 4-GPU trays") {
  HardwareProfile hw = load_hardware("gb200");
  CHECK(hw.gpus_per_node == 4);
  CHECK(hw.nvlink_domain == 72);
  CHECK(hw.scale_up_gpus() == 72);
  CHECK(contains(hw.provenance.at("nvlink_domain"), "datasheet"));
  // A launcher's node size does not cut the fabric; --nvlink-domain (or a cluster file) does.
  ClusterOverrides o;
  o.gpus_per_node = 8;
  apply_overrides(hw, o);
  CHECK(hw.scale_up_gpus() == 72);
  ClusterOverrides nvl36;
  nvl36.nvlink_domain = 36;
  apply_overrides(hw, nvl36);
  CHECK(hw.scale_up_gpus() == 36);
  CHECK(hw.provenance.at("nvlink_domain").rfind("override: command line", 0) == 0);
  // An HGX node is its own domain.
  CHECK(load_hardware("h100-sxm-80g").scale_up_gpus() == 8);
  ClusterOverrides bad;
  bad.nvlink_domain = 0;
  CHECK_THROWS_WITH_AS(apply_overrides(hw, bad), doctest::Contains("nvlink_domain must be positive"), UsageError);
  // In a cluster file, with the file and field named when wrong.
  std::string hardware;
  ClusterOverrides c = parse_cluster_overrides(
      "hardware: gb200\nnvlink_domain: {value: 36, source: \"datasheet: GB200 NVL36 rack, 36 GPUs per NVLink domain\"}\n",
      "nvl36.yaml", &hardware);
  REQUIRE(c.nvlink_domain);
  CHECK(*c.nvlink_domain == 36);
  CHECK(contains(error_of([] { parse_cluster_overrides("hardware: gb200\nnvlink_domain: {value: -2, source: \"prior: x\"}\n", "bad.yaml",
                                                            nullptr); }),
                 "bad.yaml:2: field 'nvlink_domain'"));
}

TEST_CASE("built-in cluster files load and apply") {
  auto clusters = builtin_names("configs/clusters");
  REQUIRE(!clusters.empty());
  for (const auto& name : clusters) {
    CAPTURE(name);
    std::string hardware;
    ClusterOverrides o = load_cluster_overrides(name, &hardware);
    HardwareProfile hw = load_hardware(hardware);  // the named hardware exists
    apply_overrides(hw, o);
    if (o.network_bandwidth) {
      CHECK(hw.network_bandwidth == doctest::Approx(*o.network_bandwidth));
      CHECK(contains(hw.provenance.at("network_bandwidth"), "configs/clusters/" + name + ".yaml"));
    }
  }
  std::string hardware;
  ClusterOverrides four = load_cluster_overrides("a100-hdr-4nic", &hardware);
  CHECK(hardware == "a100-sxm-40g");
  REQUIRE(four.network_bandwidth);
  CHECK(*four.network_bandwidth == doctest::Approx(12.5e9));
  CHECK(contains(error_of([] { load_cluster_overrides("no-such-cluster", nullptr); }), "dgx-h100-ndr"));
}

TEST_CASE("profiles load from a path too") {
  auto path = std::filesystem::temp_directory_path() / "sixfold_test_hw_profile.yaml";
  {
    std::ofstream out(path);
    out << replace_once(builtin("h100-sxm-80g"), "name: h100-sxm-80g", "name: my-h100");
  }
  HardwareProfile hw = load_hardware(path.string());
  CHECK(hw.name == "my-h100");
  CHECK(hw.peak(Dtype::BF16) == doctest::Approx(989.5e12));
  std::filesystem::remove(path);
  CHECK(contains(error_of([&] { load_hardware(path.string()); }), path.string()));
}

TEST_CASE("errors name what is wrong and where") {
  SUBCASE("unknown name lists the built-in names; a misspelt one gets a suggestion") {
    std::string msg;
    try {
      load_hardware("gpu-of-the-future");
    } catch (const UsageError& e) {
      msg = e.what();
    }
    CHECK(contains(msg, "gpu-of-the-future"));
    for (const auto& name : builtin_hardware_names()) CHECK(contains(msg, name));
    try {
      load_hardware("h100-sxm-800g");
    } catch (const UsageError& e) {
      msg = e.what();
    }
    CHECK(contains(msg, "unknown hardware 'h100-sxm-800g' (did you mean 'h100-sxm-80g'?)"));
  }
  SUBCASE("malformed YAML names the line") {
    std::string text = builtin("a100-sxm-80g");
    // Break the flow map on the memory_bandwidth line.
    text = replace_once(text, "memory_bandwidth: {value: 2039GB/s,", "memory_bandwidth: {value: [2039GB/s,");
    int line = 1;
    for (char c : text.substr(0, text.find("memory_bandwidth:"))) line += c == '\n';
    std::string msg = error_of([&] { parse_hardware(text, "broken.yaml"); });
    INFO(msg);
    CHECK(contains(msg, "broken.yaml:"));
    // yaml-cpp reports the line where the flow collection goes wrong: this line or the next.
    CHECK((contains(msg, "broken.yaml:" + std::to_string(line) + ":") ||
           contains(msg, "broken.yaml:" + std::to_string(line + 1) + ":")));
  }
  SUBCASE("a negative bandwidth names the field and its line") {
    std::string text = replace_once(builtin("h100-sxm-80g"), "network_bandwidth: {value: 50GB/s,",
                                    "network_bandwidth: {value: -50GB/s,");
    int line = 1;
    for (char c : text.substr(0, text.find("network_bandwidth:"))) line += c == '\n';
    std::string msg = error_of([&] { parse_hardware(text, "neg.yaml"); });
    CHECK(contains(msg, "neg.yaml:" + std::to_string(line) + ":"));
    CHECK(contains(msg, "network_bandwidth"));
    CHECK(contains(msg, "positive"));
  }
  SUBCASE("an efficiency above 1 is rejected") {
    std::string text = replace_once(builtin("h100-sxm-80g"), "memory_efficiency: {value: 0.89,",
                                    "memory_efficiency: {value: 1.3,");
    std::string msg = error_of([&] { parse_hardware(text, "eff.yaml"); });
    CHECK(contains(msg, "memory_efficiency"));
    CHECK(contains(msg, "(0, 1]"));
  }
  SUBCASE("a missing bf16 peak is rejected") {
    std::string text = builtin("a100-sxm-80g");
    auto start = text.find("  bf16:");
    REQUIRE(start != std::string::npos);
    text.erase(start, text.find('\n', start) - start + 1);
    std::string msg = error_of([&] { parse_hardware(text, "nobf16.yaml"); });
    CHECK(contains(msg, "peak_tflops.bf16"));
  }
  SUBCASE("an unknown field is rejected with the allowed ones") {
    std::string text = replace_once(builtin("a100-sxm-80g"), "memory_bandwidth:", "memory_bandwith:");
    std::string msg = error_of([&] { parse_hardware(text, "typo.yaml"); });
    CHECK(contains(msg, "memory_bandwith"));
    CHECK(contains(msg, "memory_bandwidth"));
  }
  SUBCASE("an unreadable unit names the field") {
    std::string text = replace_once(builtin("a100-sxm-80g"), "{value: 80GiB,", "{value: 80 gallons,");
    std::string msg = error_of([&] { parse_hardware(text, "unit.yaml"); });
    CHECK(contains(msg, "memory_capacity"));
    CHECK(contains(msg, "80 gallons"));
  }
}
