// Issue #13's reproducers (and #12's units, names and small lies): each exits 1 (failure) or 2
// (usage) with a message naming the flag, or the file and the field, instead of crashing,
// hanging or reporting success.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_sixfold.hpp"

namespace {

using Result = sixfold::test::CliResult;
using sixfold::test::run_sixfold;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sixfold-hardening-" + name)).string();
}
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kPredict = "predict --model llama3-8b --hardware h100-sxm-80g ";
const std::string kModelBase = "name: m\nlayers: 2\nheads: 4\nvocab: 1000\nnorm: rmsnorm\nactivation: swiglu\n";
const std::string kScenarioHead = "model: seed-tp\nhardware: rtx-4090\nworkload: {seq: 1024, global_batch: 8}\n";

// Exit code `code` and every part in the output.
void expect(const std::string& args, int code, std::initializer_list<std::string> parts) {
  const Result r = run_sixfold(args);
  INFO(args);
  INFO(r.output);
  CHECK(r.code == code);
  for (const auto& p : parts) CHECK(contains(r.output, p));
}

}  // namespace

TEST_CASE("crashes: zero degrees and overflowing batches are refused, naming the field") {
  std::string plan = write_temp("tp0.yaml", kScenarioHead + "layout: {tp: 0}\n");
  expect("predict --plan " + plan, 1, {plan + ":4: field 'layout.tp': '0' is out of range"});
  plan = write_temp("cp-0.yaml", kScenarioHead + "layout: {cp: -0}\n");
  expect("predict --plan " + plan, 1, {"field 'layout.cp'"});
  expect(kPredict + "--gpus 8 --global-batch 64 --micro-batch 2305843009213693952", 2, {"--micro-batch", "out of range"});
  plan = write_temp("mbs.yaml", kScenarioHead + "layout: {micro_batch: 2305843009213693952}\n");
  expect("predict --plan " + plan, 1, {"field 'layout.micro_batch'"});
  expect("plan --model llama3-8b --hardware h100-sxm-80g --gpus 2147483647 --refine 0", 2, {"--gpus", "out of range"});
  expect("decide --gpus 2147483647", 2, {"--gpus", "out of range"});
}

TEST_CASE("hangs and unbounded resources: MTP depth, endless and huge inputs") {
  expect(kPredict + "--mtp-num-layers 1000000", 2, {"--mtp-num-layers", "allowed: 0 to 16"});
  expect("predict --plan /dev/zero", 1, {"'/dev/zero' is larger than 4 MiB"});
  // A file just over the limit is refused at once rather than parsed for seconds.
  const std::string big = temp_path("big.yaml");
  {
    std::ofstream out(big);
    const std::string line(1023, 'x');
    for (int i = 0; i < 4200; ++i) out << "# " << line << "\n";
  }
  expect("predict --plan " + big, 1, {"larger than 4 MiB"});
  std::filesystem::remove(big);
}

TEST_CASE("failed writes are failures, and leave no partial file") {
  expect("plan --scenario default --refine 0 --export /dev/full", 1, {"cannot write '/dev/full'"});
  for (const char* format : {"megatron", "deepspeed", "torchtitan"})
    expect(std::string("plan --scenario default --refine 0 --export /dev/full --export-format ") + format, 1,
           {"cannot write '/dev/full'"});
  expect("simulate --scenario default --trace /dev/full", 1, {"cannot write '/dev/full'"});
  expect("calibrate --from-kineto tests/simulator/fixtures/kineto_h200_synthetic.json --hardware h200-sxm-141g -o /dev/full", 1,
         {"cannot write '/dev/full'"});
  // Unwritable places are failures (exit 1) for every command.
  expect("plan --scenario default --refine 0 --export /nonexistent-dir/plan.yaml", 1, {"cannot write"});
  expect("calibrate --from-kineto tests/simulator/fixtures/kineto_h200_synthetic.json --hardware h200-sxm-141g "
         "-o /nonexistent-dir/p.yaml",
         1, {"cannot write"});
}

TEST_CASE("invalid flag values: usage errors naming the flag") {
  expect("decide --gpus eight", 2, {"--gpus: 'eight' is not a whole number"});
  for (const char* v : {"0", "-1"}) expect(std::string("decide --gpus ") + v, 2, {"--gpus"});
  for (const char* v : {"0", "-1"}) expect(std::string("decide --seq ") + v, 2, {"--seq"});
  expect("decide --sequences-per-gpu 0", 2, {"--sequences-per-gpu"});
  expect("decide --threads -3", 2, {"--threads"});
  expect(kPredict + "--seq 99999999999999999999", 2, {"--seq", "out of range"});
  expect("predict --model gpt-1.7b --hardware h100-sxm-80g --seq 4096", 2,
         {"above gpt-1.7b's maximum sequence length 2048", "learned position table"});
  for (const char* v : {"0", "-1", "1e-9", "nan"})
    expect("run --plan /nonexistent.yaml --timeout " + std::string(v), 2, {"--timeout"});
  expect(kPredict + "--gpus \"\"", 2, {"--gpus: empty value"});
  expect(kPredict + "--dtype \"\"", 2, {"--dtype: empty value"});
  expect("plan --scenario default --export \"\"", 2, {"--export: empty value"});
  expect("plan --scenario default --mem-budget 0GiB", 2, {"--mem-budget", "must be positive"});
  expect(kPredict + "--bucket-size 0B", 2, {"--bucket-size", "must be positive"});
  expect("plan --scenario default --max-tp 0", 2, {"--max-tp"});
  expect(kPredict + "--pp 2 --first-stage-layers -3", 2, {"--first-stage-layers"});
  expect("plan --scenario default --threads -1", 2, {"--threads"});
  expect("plan --scenario default --top -5", 2, {"--top"});
  expect("calibrate --from-runs x.csv --hardware h100-sxm-80g --rounds -1", 2, {"--rounds"});
  expect("run --scenario default --emulate-rank -1", 2, {"--emulate-rank"});
  expect(kPredict + "--network-bandwidth -50GB/s", 2, {"--network-bandwidth: '-50GB/s' must be positive"});
  expect(kPredict + "--vpp 0", 2, {"--vpp: '0' is out of range"});
}

TEST_CASE("units: a bare number for a size or a bandwidth is refused with the accepted units") {
  expect(kPredict + "--network-bandwidth 50", 2, {"--network-bandwidth: '50' has no unit", "GB/s", "Gb/s"});
  expect("plan --scenario default --mem-budget 70", 2, {"--mem-budget: '70' has no unit", "GiB"});
  // Bits and bytes per second both read; 400Gb/s is 50GB/s.
  const Result bits = run_sixfold(kPredict + "--gpus 16 --network-bandwidth 400Gb/s --json");
  const Result bytes = run_sixfold(kPredict + "--gpus 16 --network-bandwidth 50GB/s --json");
  REQUIRE(bits.code == 0);
  REQUIRE(bytes.code == 0);
  CHECK(nlohmann::json::parse(bits.output)["prediction"]["step_time_s"] == nlohmann::json::parse(bytes.output)["prediction"]["step_time_s"]);
  CHECK(run_sixfold(kPredict + "--gpus 16 --network-bandwidth 400Gbps").code == 0);
  CHECK(run_sixfold(kPredict + "--gpus 16 --network-bandwidth 46GiB/s").code == 0);
}

TEST_CASE("names: did you mean, for models, hardware, flags and subcommands") {
  expect("predict --model lama3-8b --hardware h100-sxm-80g", 2, {"did you mean 'llama3-8b'?"});
  expect("predict --model llama3-8b --hardware h100-sxm-8g", 2, {"did you mean 'h100-sxm-80g'?"});
  expect(kPredict + "--tpp 2", 2, {"unknown flag '--tpp'", "did you mean '--tp'?"});
  expect("plna", 2, {"unknown command 'plna'", "did you mean 'plan'?"});
  expect("predict --scenario defualt", 2, {"did you mean 'default'?"});
}

TEST_CASE("missing files exit 1 for every flag that names one") {
  expect(kPredict + "--cluster /nonexistent/cluster.yaml", 1, {"cannot open '/nonexistent/cluster.yaml'"});
  expect("predict --plan /nonexistent/plan.yaml", 1, {"cannot open '/nonexistent/plan.yaml'"});
  expect("predict --hardware h100-sxm-80g --model /nonexistent/model.yaml", 1, {"cannot open"});
  expect("predict --model llama3-8b --hardware /nonexistent/hw.yaml", 1, {"cannot open"});
}

TEST_CASE("model files: out-of-range and inconsistent fields name file, line and field") {
  const auto model = [](const std::string& name, const std::string& text) { return write_temp(name, text); };
  std::string m = model("ffn.yaml", kModelBase + "hidden: 64\nffn: 4611686018427387904\n");
  expect("predict --hardware h100-sxm-80g --model " + m, 1, {m + ":8: field 'ffn'", "out of range"});
  m = model("hidden.yaml", "name: m\nlayers: 2\nhidden: 4095\nheads: 32\nvocab: 1000\nffn: 128\nnorm: rmsnorm\nactivation: swiglu\n");
  expect("predict --hardware h100-sxm-80g --model " + m, 1, {"field 'head_dim'", "not a multiple of heads 32"});
  m = model("rotary.yaml", kModelBase + "hidden: 64\nffn: 128\nrotary_fraction: .nan\n");
  expect("predict --hardware h100-sxm-80g --model " + m, 1, {"field 'rotary_fraction'", "not a finite number"});
  // Hugging Face config.json
  const std::string hf = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
                         "\"intermediate_size\": 128, \"vocab_size\": 1000, ";
  m = model("layers.json", hf + "\"num_hidden_layers\": 1099511627776}");
  expect("predict --hardware h100-sxm-80g --model " + m, 1, {"field 'num_hidden_layers': 1099511627776 is out of range"});
  m = model("act.json", hf + "\"num_hidden_layers\": 2, \"hidden_act\": \"mish\"}");
  expect("predict --hardware h100-sxm-80g --model " + m, 1, {"field 'hidden_act': 'mish' is not supported"});
  m = model("experts.json",
            "{\"model_type\": \"mixtral\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"intermediate_size\": 128, "
            "\"vocab_size\": 1000, \"num_hidden_layers\": 2, \"num_local_experts\": 0, \"num_experts_per_tok\": 2}");
  expect("predict --hardware h100-sxm-80g --model " + m, 1, {"field 'num_local_experts': 0 is out of range"});
}

TEST_CASE("hardware files: infinite peaks refused") {
  std::ifstream in("configs/hardware/h100-sxm-80g.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("bf16: {value: ");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find(',', at) - at, "bf16: {value: .inf");
  const std::string hw = write_temp("inf-hw.yaml", text);
  expect("predict --model llama3-8b --hardware " + hw, 1, {"field 'peak_tflops.bf16'", "not a finite number"});
}

TEST_CASE("hardware files: the framework terms are range-checked, naming the field") {
  std::ifstream in("configs/hardware/h100-sxm-80g.yaml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The profile with `line` in place of its own line for that field, if it has one.
  auto with = [&](const std::string& name, const std::string& line) {
    const std::string key = line.substr(0, line.find(':') + 1);
    std::istringstream lines(text);
    std::string kept, l;
    while (std::getline(lines, l))
      if (l.rfind(key, 0) != 0) kept += l + "\n";
    return write_temp(name, kept + line + "\n");
  };
  expect("predict --model llama3-8b --hardware " + with("os.yaml", "overlap_slowdown: {value: 2, source: \"fit: t\"}"), 1,
         {"field 'overlap_slowdown'", "out of range (allowed: 0 to 1)"});
  expect("predict --model llama3-8b --hardware " + with("ks.yaml", "kernel_slowdown: {value: 0.5, source: \"fit: t\"}"), 1,
         {"field 'kernel_slowdown'", "out of range (allowed: 1 to 4)"});
  expect("predict --model llama3-8b --hardware " + with("so.yaml", "step_overhead: {value: -5ms, source: \"fit: t\"}"), 1,
         {"field 'step_overhead'"});
  // In range they are read.
  expect("predict --model llama3-8b --hardware " + with("ok.yaml", "step_overhead: {value: 90ms, source: \"fit: t\"}"), 0,
         {"step "});
}

TEST_CASE("plan and scenario files: dp must agree with gpus, unknown and duplicate keys refused") {
  std::string plan = write_temp("dp3.yaml", "model: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\n"
                                            "workload: {seq: 4096, global_batch: 48}\nlayout: {dp: 3}\n");
  expect("predict --plan " + plan, 1, {"field 'layout.dp': 3 disagrees with gpus 8"});
  plan = write_temp("unknown.yaml", kScenarioHead + "layuot: {tp: 2}\n");
  expect("predict --plan " + plan, 1, {"field 'layuot': unknown field (did you mean 'layout'?"});
  plan = write_temp("dupkey.yaml", kScenarioHead + "layout: {tp: 1}\nlayout: {tp: 2}\n");
  expect("predict --plan " + plan, 1, {plan + ":5: field 'layout': given twice"});
}

TEST_CASE("validation CSV: a byte order mark is read, duplicate columns refused") {
  std::ifstream in(std::string(SIXFOLD_DATA_DIR) + "/validation/vtrain_single_node.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::string bom = write_temp("bom.csv", "\xEF\xBB\xBF" + header + "\n" + row + "\n");
  expect("validate " + bom, 0, {"VS1"});
  const std::string dup = write_temp("dup.csv", header + ",gpus\n" + row + ",9\n");
  expect("validate " + dup, 1, {"column 'gpus' appears twice"});
}

TEST_CASE("small lies: a plan keeps its bandwidth override and calibrate --from-runs -o writes the profile") {
  const std::string plan = temp_path("bw-plan.yaml");
  Result r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 32 --seq 4096 --global-batch 128 --refine 0 "
                         "--network-bandwidth 5GB/s --json --export " + plan);
  REQUIRE(r.code == 0);
  const double planned = nlohmann::json::parse(r.output)["recommended"]["prediction"]["step_time_s"];
  r = run_sixfold("predict --plan " + plan + " --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["prediction"]["step_time_s"].get<double>() == planned);
  const std::string profile = temp_path("fitted.yaml");
  std::filesystem::remove(profile);
  r = run_sixfold(std::string("calibrate --from-runs ") + SIXFOLD_DATA_DIR +
                  "/validation/vtrain_single_node.csv --hardware a100-sxm-80g --rounds 1 -o " + profile);
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(std::filesystem::exists(profile));
  CHECK(run_sixfold("predict --model llama3-8b --hardware " + profile).code == 0);
}

TEST_CASE("plan and scenario files: a true/false field holding something else names what is allowed") {
  const std::string head = "model: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\nlayout: {dp: 8}\n";
  for (const char* field : {"flash_attention", "overlap_p2p_comm", "overlap_moe_expert_parallel_comm"}) {
    const std::string plan = write_temp("bool.yaml", head + "workload: {seq: 4096, global_batch: 8, " + field + ": maybe}\n");
    expect("predict --plan " + plan, 1, {std::string("field '") + field + "': cannot read 'maybe' as true or false (allowed: true, false)"});
  }
}
