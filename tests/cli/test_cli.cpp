// The CLI end to end: exit codes (usage errors 2, failures 1), messages that name what is wrong,
// and the documented JSON shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "simulator/io/scenario.hpp"
#include "tests/run_sixfold.hpp"

#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Result = sixfold::test::CliResult;
using sixfold::test::run_sixfold;

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("sixfold-cli-test-" + name);
  std::ofstream(path) << text;
  return path.string();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One row of `validate FILE --json` (a null json where the file has no such row).
nlohmann::json validated_row(const std::string& file, const std::string& id) {
  const Result all = run_sixfold("validate " + file + " --json");
  REQUIRE(all.code == 0);
  const auto whole = nlohmann::json::parse(all.output);
  for (const auto& r : whole["rows"])
    if (r["id"] == id) return r;
  return nullptr;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const std::string kBase = "predict --model llama3-8b --hardware h100-sxm-80g --seq 4096 ";

// What `plan ARGS --export FILE --export-format FORMAT` writes (the plan must succeed).
std::string exported(const std::string& plan_args, const std::string& format, const std::string& file) {
  const std::string out = write_temp(file, "");
  const Result r = run_sixfold("plan " + plan_args + " --export " + out + " --export-format " + format);
  REQUIRE(r.code == 0);
  return read_file(out);
}

}  // namespace

TEST_CASE("predict prints the breakdowns and the documented JSON") {
  Result r = run_sixfold(kBase + "--gpus 8 --global-batch 64 --zero 1");
  CHECK(r.code == 0);
  CHECK(contains(r.output, "memory per GPU"));
  CHECK(contains(r.output, "time per step"));
  r = run_sixfold(kBase + "--gpus 8 --global-batch 64 --zero 1 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  for (const char* key : {"step_time_s", "tokens_per_s_per_gpu", "tflops_model_per_gpu", "tflops_hw_per_gpu", "mfu",
                          "peak_memory_bytes"})
    CHECK(j["prediction"].contains(key));
  CHECK(j["memory"].contains("weights"));
  CHECK(j["time"].contains("compute"));
  CHECK(j["framework"] == "megatron");
  CHECK(j["workload"]["seq"] == 4096);
  CHECK(j["workload"]["global_batch"] == 64);
  CHECK(j["workload"]["dtype"] == "bf16");
  CHECK(j["prediction"]["memory_fit"] == "fits");
  CHECK_FALSE(contains(run_sixfold(kBase + "--gpus 8 --global-batch 64 --zero 1").output, "warning:"));
}

TEST_CASE("the layout line says where DeepSpeed runs its BF16_Optimizer (bf16 at ZeRO stage 0), and only there") {
  const std::string base = "predict --model gpt-18b --hardware a100-sxm-80g --gpus 64 --seq 2048 --global-batch 512 --pp 2 ";
  Result zero0 = run_sixfold(base + "--framework deepspeed --zero 0");
  REQUIRE(zero0.code == 0);
  CHECK(contains(zero0.output, "micro-batches; DeepSpeed's BF16_Optimizer: fp32 gradient accumulation)"));
  CHECK(contains(run_sixfold(base + "--framework deepspeed --zero 0 --ops").output, "grad_accumulate_fp32"));
  CHECK_FALSE(contains(run_sixfold(base + "--framework deepspeed --zero 1").output, "BF16_Optimizer"));
  CHECK_FALSE(contains(run_sixfold(base + "--framework deepspeed --zero 0 --dtype fp16").output, "BF16_Optimizer"));
  CHECK_FALSE(contains(run_sixfold(base + "--zero 0").output, "BF16_Optimizer"));
}

TEST_CASE("predict says when a layout does not fit, and when it fits only by the allocator's retries") {
  const std::string llama = "predict --model llama3-8b --hardware a100-sxm-40g --gpus 8 --seq 8192 --zero 3 --global-batch 64 ";
  Result oom = run_sixfold(llama + "--micro-batch 1");
  CHECK(oom.code == 0);  // a prediction, with its warning
  CHECK(contains(oom.output, "warning: out of memory: needs"));
  CHECK(contains(oom.output, "the GPU has 40.00 GiB"));
  CHECK(nlohmann::json::parse(run_sixfold(llama + "--micro-batch 1 --json").output)["prediction"]["memory_fit"] ==
        "out_of_memory");
  // simulate says the same of the same layout.
  const std::string sim = "simulate" + llama.substr(std::string("predict").size()) + "--micro-batch 1";
  CHECK(contains(run_sixfold(sim).output, "warning: out of memory: needs"));
  CHECK(nlohmann::json::parse(run_sixfold(sim + " --json").output)["prediction"]["memory_fit"] == "out_of_memory");
  // Where the allocator's cache alone goes over, the live tensors fit: a slower run, not an OOM.
  bool seen_retries = false;
  for (int mb : {1, 2, 4, 8, 16}) {
    const std::string cmd = "predict --model llama3-8b --hardware a100-sxm-80g --gpus 8 --seq 4096 --zero 3 --global-batch 128 "
                            "--recompute full --framework torchtitan --micro-batch " + std::to_string(mb);
    const auto j = nlohmann::json::parse(run_sixfold(cmd + " --json").output);
    if (j["prediction"]["memory_fit"] != "allocator_retries") continue;
    seen_retries = true;
    CHECK(contains(run_sixfold(cmd).output, "cudaMalloc retries"));
    break;
  }
  CHECK(seen_retries);
}

TEST_CASE("unknown model or hardware: usage error listing the names") {
  Result r = run_sixfold("predict --model llama9 --hardware h100-sxm-80g");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "llama3-8b"));
  r = run_sixfold("predict --model llama3-8b --hardware h900");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "h100-sxm-80g"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --dtype fp4");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "bf16"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --framework jax");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "megatron, deepspeed, deepspeed-legacy, torchtitan"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --no-such-flag");
  CHECK(r.code == 2);
}

TEST_CASE("malformed model files: file and line") {
  const std::string yaml = write_temp("bad.yaml", "name: x\nlayers: [1, 2\nhidden: 4\n");
  Result r = run_sixfold("predict --hardware h100-sxm-80g --model " + yaml);
  CHECK(r.code == 1);
  CHECK(contains(r.output, yaml));
  const std::string field = write_temp("field.yaml", "name: x\nlayers: 2\nhidden: 64\nheads: 4\nkv_heads: 3\nvocab: 100\nffn: 128\nnorm: rmsnorm\nactivation: swiglu\n");
  r = run_sixfold("predict --hardware h100-sxm-80g --model " + field);
  CHECK(r.code != 0);
  CHECK(contains(r.output, "kv_heads"));
  const std::string json = write_temp("config.json", "{\"model_type\": \"llama\", \"hidden_size\": 4096,");
  r = run_sixfold("predict --hardware h100-sxm-80g --model " + json);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "config.json"));
}

TEST_CASE("impossible layouts name the constraint, exit 2") {
  auto check = [](const std::string& args, const std::string& constraint) {
    Result r = run_sixfold(kBase + args);
    CAPTURE(args);
    CHECK(r.code == 2);
    CHECK(contains(r.output, constraint));
  };
  check("--gpus 8 --tp 3", "dp*tp*pp*cp = gpus");
  check("--gpus 6 --tp 3", "tp divides heads");
  check("--gpus 8 --global-batch 12", "global batch divisible by dp*micro-batch");
  check("--gpus 8 --pp 2 --vpp 3 --global-batch 64", "vpp divides layers per stage");
  check("--gpus 8 --ep 2", "ep and etp are 1 for a dense model");
  Result r = run_sixfold("predict --model mixtral-8x7b --hardware h100-sxm-80g --gpus 2 --ep 4 --global-batch 8");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "ep*etp divides tp*cp*dp"));
}

TEST_CASE("--dp checks the derived data-parallel size, or without --gpus sets the GPU count") {
  Result r = run_sixfold(kBase + "--dp 2 --tp 4 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["gpus"] == 8);
  CHECK(j["layout"]["dp"] == 2);
  CHECK(run_sixfold(kBase + "--gpus 8 --dp 2 --tp 4").code == 0);
  r = run_sixfold(kBase + "--gpus 16 --dp 2 --tp 4");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--dp 2 disagrees with the layout: 16 GPUs / (tp 4 x pp 1 x cp 1) = dp 4"));
}

TEST_CASE("models and hardware list as JSON") {
  Result r = run_sixfold("models --json");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.output);
  REQUIRE(j.is_array());
  CHECK(j.size() >= 20);
  CHECK(j[0].contains("params_total"));
  CHECK(j[0].contains("params_active"));
  r = run_sixfold("hardware --json");
  REQUIRE(r.code == 0);
  j = nlohmann::json::parse(r.output);
  CHECK(j.size() >= 7);
}

TEST_CASE("validate: summary per metric, bad CSV is an error") {
  Result r = run_sixfold(std::string("validate ") + SIXFOLD_DATA_DIR + "/validation/vtrain_multi_node.csv --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["rows_scored"].get<int>() == 109);
  for (const char* key : {"n", "mape_pct", "median_pct", "worst_pct", "worst_id"}) CHECK(j["metrics"]["iter_s"].contains(key));
  const std::string bad = write_temp("bad.csv", "id,layers\nX,2\n");
  r = run_sixfold("validate " + bad);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "missing column"));
  r = run_sixfold("validate /nonexistent/runs.csv");
  CHECK(r.code == 1);
}

TEST_CASE("validate --explain: one row priced as the full run prices it, by component, and bad ids are usage errors") {
  const std::string file = std::string(SIXFOLD_DATA_DIR) + "/validation/published_runs.csv";
  const nlohmann::json row = validated_row(file, "G13");
  REQUIRE(row.is_object());
  Result r = run_sixfold("validate " + file + " --explain G13 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  // The fills (micro-batch, pipeline micro-batches) are the ones the whole file's run picks.
  CHECK(j["filled"] == row["filled"]);
  CHECK(j["predicted"]["tokens_per_gpu_s"].get<double>() == doctest::Approx(row["predicted"]["tokens_per_gpu_s"].get<double>()));
  CHECK(j["codebase"] == "torchtitan 2024-12");
  CHECK(j["stages"].size() == 8);  // pp 8: every stage's memory
  CHECK(j["time"].contains("bubble"));
  // The band predict would print, the one the file's run checks the row against.
  CHECK(j["prediction"]["expected_error"]["pct"].get<double>() == doctest::Approx(row["expected_error_pct"].get<double>()));
  r = run_sixfold("validate " + file + " --explain G13");
  REQUIRE(r.code == 0);
  for (const char* part : {"memory per GPU", "time per step", "filled: micro_batch=4", "tokens_per_gpu_s", "expect +-"})
    CHECK(contains(r.output, part));
  r = run_sixfold("validate " + file + " --explain G133");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "did you mean 'G13'"));
  r = run_sixfold("validate " + file + " --explain D10");  // no layout stated: not priced, and it says why
  CHECK(r.code == 1);
  CHECK(contains(r.output, "layout not stated"));
  r = run_sixfold("validate " + file + " --explain G13 --null-model");
  CHECK(r.code == 2);
}

TEST_CASE("validate --explain names PyTorch FSDP1 where a row's codebase ran it, and not where FSDP2 copied its gathers out") {
  // fms-fsdp (framework other, 2024-02: before FSDP2's release) gathers in place; OLMo-core (other,
  // 2024-11) runs FSDP2, whose copy-out is an op of the step.
  Result r = run_sixfold(std::string("validate ") + SIXFOLD_SOURCE_DIR + "/bench/spot_checks/fms_fsdp.csv --explain FS3");
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "FSDP1 (gathers in place, no copy-out)"));
  r = run_sixfold(std::string("validate ") + SIXFOLD_SOURCE_DIR + "/bench/spot_checks/olmo_core.csv --explain OC3");
  REQUIRE(r.code == 0);
  CHECK_FALSE(contains(r.output, "FSDP1"));
}

TEST_CASE("validate --shared-columns reads a file as the shared format carries it") {
  const std::string file = std::string(SIXFOLD_SOURCE_DIR) + "/bench/spot_checks/fms_fsdp.csv";
  Result own = run_sixfold("validate " + file + " --explain FS1");
  Result shared = run_sixfold("validate " + file + " --explain FS1 --shared-columns");
  REQUIRE(own.code == 0);
  REQUIRE(shared.code == 0);
  CHECK(contains(own.output, "dp-shard=8"));  // the project's dp_shard column: hybrid sharding
  CHECK_FALSE(contains(shared.output, "dp-shard"));
  Result all = run_sixfold("validate " + file + " --shared-columns --json");
  REQUIRE(all.code == 0);
  CHECK(nlohmann::json::parse(all.output)["rows_scored"].get<int>() == 20);
}

TEST_CASE("validate: a row of a codebase no measured residual names takes its GPU's band, and says so") {
  // llm-foundry rows are priced with torchtitan's traits; the bands hold no llm-foundry run.
  const std::string file = "bench/spot_checks/llm_foundry_mpt.csv";
  const nlohmann::json row = validated_row(file, "LF10");
  REQUIRE(row.is_object());
  Result r = run_sixfold("validate " + file + " --explain LF10 --json");
  REQUIRE(r.code == 0);
  const auto band = nlohmann::json::parse(r.output)["prediction"]["expected_error"];
  CHECK(band["basis"] == "same GPU (h100); no measured llm-foundry run");
  CHECK(band["pct"].get<double>() == doctest::Approx(row["expected_error_pct"].get<double>()));
  // predict names no codebase: torchtitan's own runs.
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --global-batch 64 --framework torchtitan --json");
  REQUIRE(r.code == 0);
  CHECK(contains(nlohmann::json::parse(r.output)["prediction"]["expected_error"]["basis"].get<std::string>(), "torchtitan"));
}

TEST_CASE("predict notes a layout that fits by less than the memory model's measured error, as plan's budget does") {
  const std::string base = "predict --model llama3-70b --hardware h100-sxm-80g --gpus 64 --global-batch 128 --tp 8 --pp 2 "
                           "--sp --zero 1 --micro-batch 2 --recompute selective --seq ";
  Result tight = run_sixfold(base + "7168");  // 77.3 GiB of 80: over the 74.4 GiB budget, under the GPU
  REQUIRE(tight.code == 0);
  CHECK(contains(tight.output, "by less than sixfold's measured memory error"));
  CHECK(contains(tight.output, "`plan` keeps layouts under 74.42 GiB"));
  CHECK_FALSE(contains(tight.output, "warning:"));
  Result roomy = run_sixfold(base + "6144");  // 71.7 GiB
  REQUIRE(roomy.code == 0);
  CHECK_FALSE(contains(roomy.output, "measured memory error"));
  // --json says the same: fits the GPU, not the budget plan would keep it under.
  const auto tj = nlohmann::json::parse(run_sixfold(base + "7168 --json").output)["prediction"];
  const auto rj = nlohmann::json::parse(run_sixfold(base + "6144 --json").output)["prediction"];
  CHECK(tj["memory_fit"] == "fits");
  CHECK(tj["within_memory_budget"] == false);
  CHECK(rj["within_memory_budget"] == true);
  CHECK(tj["memory_budget_bytes"].get<double>() == doctest::Approx(80.0 * 1024 * 1024 * 1024 / 1.075));
}

TEST_CASE("run refuses a plan of another schema version, an unknown backend and a wrong world size") {
  const std::string plan = write_temp("plan-v9.yaml",
                                      "schema_version: 9\nmodel: seed-tp\nhardware: h100-sxm-80g\ngpus: 1\n"
                                      "workload: {seq: 32, global_batch: 2, dtype: fp32}\nlayout: {dp: 1}\n");
  Result r = run_sixfold("run --plan " + plan + " --steps 1");
  CHECK(r.code != 0);
  CHECK(contains(r.output, "schema version"));
  const std::string ok = write_temp("plan-ok.yaml",
                                    "schema_version: 1\nmodel:\n  name: tiny\n  architecture: {name: tiny, layers: 2, hidden: 32, "
                                    "ffn: 64, heads: 4, kv_heads: 2, vocab: 64, max_seq: 32, norm: rmsnorm, activation: swiglu}\n"
                                    "hardware: h100-sxm-80g\ngpus: 2\nworkload: {seq: 16, global_batch: 4, dtype: fp32}\nlayout: {dp: 2}\n");
  r = run_sixfold("run --plan " + ok + " --steps 1 --backend tpu");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "backend"));
  r = run_sixfold("run --plan " + ok + " --steps 1");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "mpirun -np 2"));
}

TEST_CASE("plan --compare says where a given layout ranks and why it loses") {
  Result r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 4096 --global-batch 64 "
                     "--refine 0 --json --compare tp=8,zero=1 --compare tp=2,pp=2,vpp=4,zero=1");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["compared"].size() == 2);
  for (const auto& c : j["compared"]) {
    CHECK(c["rank"].get<int>() >= 1);
    CHECK(!c["why"].get<std::string>().empty());
    CHECK(c["prediction"]["step_time_s"].get<double>() >= j["recommended"]["prediction"]["step_time_s"].get<double>());
  }
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --compare tp=8,bogus=1");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "unknown key 'bogus'"));
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --compare tp=3");
  CHECK(r.code == 2);
}

TEST_CASE("validate --rank: the layout ranked first is measured within 5% of each group's best on average") {
  Result r = run_sixfold(std::string("validate ") + SIXFOLD_DATA_DIR + "/validation/vtrain_single_node.csv --rank --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output)["ranking"];
  CHECK(j["groups"].get<int>() == 144);
  CHECK(j["per_group"].size() == 144);
  CHECK(j["mean_regret_pct"].get<double>() <= 5.0);
  CHECK(j["mean_spearman"].get<double>() > 0.5);
  for (const auto& g : j["per_group"]) CHECK(g["regret_pct"].get<double>() >= 0.0);
}

TEST_CASE("the framework shows in the header, and a framework's export prices that framework") {
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --zero 3 --framework torchtitan");
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "as torchtitan runs it"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --zero 3");
  REQUIRE(r.code == 0);
  CHECK_FALSE(contains(r.output, "runs it"));
  // torchtitan's "selective" is its op-level checkpointing.
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --zero 3 --framework torchtitan --recompute selective");
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "recompute=selective-op"));
  const std::string out = write_temp("tt.toml", "");
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 8192 --global-batch 64 --export " + out +
                  " --export-format torchtitan");
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "as torchtitan runs it"));
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 8192 --global-batch 64 --export " + out +
                  " --export-format torchtitan --framework megatron");
  REQUIRE(r.code == 0);
  CHECK_FALSE(contains(r.output, "runs it"));
  // `--export torchtitan` reads as a format but names a file: refused before the search.
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 8192 --global-batch 64 --export torchtitan");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--export-format torchtitan"));
}

TEST_CASE("--nvlink-domain: GB200's rack-wide fabric shows in the header, cuts the EP fabric when smaller") {
  const std::string args =
      "predict --model deepseek-v3 --hardware gb200 --gpus 256 --pp 4 --ep 64 --seq 4096 --global-batch 512 --dtype fp8 "
      "--recompute full --json";
  Result rack = run_sixfold(args);
  REQUIRE(rack.code == 0);
  Result trays = run_sixfold(args + " --nvlink-domain 4");
  REQUIRE(trays.code == 0);
  const auto step = [](const std::string& out) { return nlohmann::json::parse(out)["prediction"]["step_time_s"].get<double>(); };
  CHECK(step(trays.output) > 1.5 * step(rack.output));
  Result text = run_sixfold("predict --model llama3-8b --hardware gb200 --gpus 8");
  REQUIRE(text.code == 0);
  CHECK(contains(text.output, "(4 per node, 72 per NVLink domain)"));
  Result bad = run_sixfold("predict --model llama3-8b --hardware gb200 --gpus 8 --nvlink-domain 0");
  CHECK(bad.code == 2);
  CHECK(contains(bad.output, "--nvlink-domain"));
}

TEST_CASE("plan: a TP recommendation overlaps TP communication and exports --tp-comm-overlap, unless --no-tp-overlap") {
  const std::string out = write_temp("tpo.sh", "");
  // A compared layout is priced with the search's assumption unless it says otherwise.
  const std::string args = "plan --model llama3-70b --hardware h100-sxm-80g --gpus 64 --seq 8192 --global-batch 128 "
                           "--compare tp=8,pp=2,vpp=10,sp --export-format megatron --export " + out;
  Result r = run_sixfold(args);
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, " sp "));
  CHECK(contains(r.output, "dp-overlap=bucketed tp-overlap=on ("));
  CHECK(contains(r.output, "sp zero=0 mbs=1 recompute=none schedule=interleaved dp-overlap=bucketed tp-overlap=on: step"));
  const std::string on = read_file(out);
  CHECK(contains(on, "--tensor-model-parallel-size"));
  CHECK(contains(on, "--tp-comm-overlap"));
  CHECK(contains(on, "--sequence-parallel"));
  r = run_sixfold(args + " --no-tp-overlap");
  REQUIRE(r.code == 0);
  CHECK_FALSE(contains(r.output, "tp-overlap=on"));
  CHECK_FALSE(contains(read_file(out), "--tp-comm-overlap"));
}

TEST_CASE("plan --schedules: a schedule the framework does not run is a usage error naming those it does") {
  Result r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 4096 --global-batch 64 --schedules gpipe");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--schedules gpipe: megatron does not run it; allowed for megatron: 1f1b, interleaved"));
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 4096 --global-batch 64 --framework torchtitan "
                  "--schedules zero-bubble");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "interleaved zero-bubble"));
  // DeepSpeed's pipeline engine trains with 1F1B only.
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 4096 --global-batch 64 --framework deepspeed "
                  "--schedules interleaved");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--schedules interleaved: deepspeed does not run it; allowed for deepspeed: 1f1b"));
  // Its pipeline engine reduces gradients after the last backward: that is the default there, and
  // an overlap asked for is a usage error naming the rule.
  const std::string ds = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 4096 --global-batch 64 "
                         "--framework deepspeed --pp 2 --zero 1";
  r = run_sixfold(ds);
  CHECK(r.code == 0);
  CHECK(contains(r.output, "dp-overlap=none"));
  r = run_sixfold(ds + " --dp-overlap bucketed");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "reduces gradients after the last backward (dp-overlap none)"));
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 4096 --global-batch 64 --framework deepspeed "
                  "--compare pp=2,zero=1");
  CHECK(r.code == 0);
  // A file's own choice stands (the seed's naive DP), and a DeepSpeed pipeline file without one gets none.
  CHECK(nlohmann::json::parse(run_sixfold("predict --scenario dp-naive --json").output)["layout"]["dp_overlap"] == "none");
  CHECK(nlohmann::json::parse(run_sixfold("predict --scenario dp-per-layer --json").output)["layout"]["dp_overlap"] ==
        "per-layer");
  const std::string file = write_temp("ds-pipeline.yaml",
                                      "model: llama3-8b\nhardware: h100-sxm-80g\ngpus: 16\n"
                                      "workload: {seq: 4096, global_batch: 64, framework: deepspeed}\nlayout: {pp: 2, zero: 1}\n");
  r = run_sixfold("predict --scenario " + file + " --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["dp_overlap"] == "none");
}

TEST_CASE("--recompute-modules: Megatron-Core's names, a usage error for others, exported as Megatron flags") {
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --recompute-modules core_attn,mlpp");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "allowed: core_attn, mlp, layernorm"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --recompute full --recompute-modules mlp");
  CHECK(r.code == 2);
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --recompute-modules mla_up_proj");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "mla_up_proj needs MLA"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --recompute-modules layernorm,mlp --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["recompute_modules"] == "mlp,layernorm");
}

TEST_CASE("an infeasible plan lists five distinct closest layouts") {
  Result r = run_sixfold("plan --model mixtral-8x7b --hardware h100-sxm-80g --gpus 16 --seq 8192 --global-batch 64 "
                         "--mem-budget 40GiB --json");
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["closest"].size() == 5);
  std::set<std::string> seen;
  for (const auto& c : j["closest"]) {
    auto l = c["layout"];
    l.erase("schedule");
    l.erase("dp_overlap");
    CHECK(seen.insert(l.dump()).second);
  }
}

TEST_CASE("bad framework, recompute modules or Adam moments: a usage error on the CLI, file and line in a scenario") {
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --adam-moments fp8");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "allowed: fp32, bf16"));
  const char* base =
      "name: t\nmodel: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\n";
  for (const auto& [workload, layout, field] :
       {std::tuple{"{seq: 4096, global_batch: 8, framework: jax}", "{dp: 8}", "'framework'"},
        std::tuple{"{seq: 4096, global_batch: 8, adam_moments: fp8}", "{dp: 8}", "'adam_moments'"},
        std::tuple{"{seq: 4096, global_batch: 8}", "{dp: 8, recompute: selective, recompute_modules: \"core_attn,bogus\"}",
                   "'layout.recompute_modules'"}}) {
    const std::string yaml = write_temp("bad-scenario.yaml", std::string(base) + "workload: " + workload + "\nlayout: " + layout + "\n");
    r = run_sixfold("predict --scenario " + yaml);
    CAPTURE(r.output);
    CHECK(r.code == 1);
    CHECK(contains(r.output, "bad-scenario.yaml:"));
    CHECK(contains(r.output, field));
  }
}

TEST_CASE("a bad value in a plan or scenario file names the file, also when a later check rejects it") {
  const std::string base = "schema_version: 1\nname: t\nmodel: llama3-8b\ngpus: 8\nworkload: {seq: 4096, global_batch: 8}\n";
  // Unknown names: the file, the line and the field, with the available names.
  std::string yaml = write_temp("bad-hw-plan.yaml", base + "hardware: h100-sxm-8g\nlayout: {dp: 8}\n");
  Result r = run_sixfold("predict --plan " + yaml);
  CAPTURE(r.output);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "bad-hw-plan.yaml:"));
  CHECK(contains(r.output, "'hardware'"));
  CHECK(contains(r.output, "h100-sxm-80g"));
  yaml = write_temp("bad-model-plan.yaml",
                    "schema_version: 1\nname: t\nmodel: llama9\nhardware: h100-sxm-80g\ngpus: 8\n"
                    "workload: {seq: 4096, global_batch: 8}\nlayout: {dp: 8}\n");
  r = run_sixfold("simulate --plan " + yaml);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "bad-model-plan.yaml:"));
  CHECK(contains(r.output, "'model'"));
  // Values that parse but break a layout constraint: the constraint, and that the plan gave them.
  // Out-of-range values are refused where they are read: file, line, field, value and range.
  yaml = write_temp("bad-layout-plan.yaml", base + "hardware: h100-sxm-80g\nlayout: {dp: 8, micro_batch: -1}\n");
  r = run_sixfold("predict --plan " + yaml);
  CHECK(r.code == 1);
  CHECK(contains(r.output, yaml + ":7: field 'layout.micro_batch': '-1' is out of range (allowed: 1 to"));
  yaml = write_temp("bad-node-plan.yaml", base + "hardware: h100-sxm-80g\ngpus_per_node: -1\nlayout: {dp: 8}\n");
  r = run_sixfold("simulate --plan " + yaml);
  CHECK(r.code == 1);
  CHECK(contains(r.output, yaml + ":7: field 'gpus_per_node': '-1' is out of range"));
  // Values that parse but break a layout constraint: the constraint, and that the plan gave them.
  yaml = write_temp("bad-constraint-plan.yaml", base + "hardware: h100-sxm-80g\nlayout: {dp: 8, micro_batch: 3}\n");
  r = run_sixfold("predict --plan " + yaml);
  CHECK(r.code == 2);
  CHECK(contains(r.output, "global batch divisible by dp*micro-batch"));
  CHECK(contains(r.output, "--plan " + yaml));
}

TEST_CASE("a cluster file with an unknown or missing hardware names the cluster file") {
  for (const auto& [line, expect] : {std::pair{"hardware: h100-sxm-8g\n", "h100-sxm-80g"}, std::pair{"hardware:\n", "missing"}}) {
    const std::string yaml = write_temp("bad-cluster.yaml", std::string("name: c\n") + line + "gpus_per_node: 8\n");
    Result r = run_sixfold("predict --model llama3-8b --cluster " + yaml + " --gpus 8");
    CAPTURE(r.output);
    CHECK(r.code == 1);
    CHECK(contains(r.output, "bad-cluster.yaml:"));
    CHECK(contains(r.output, "'hardware'"));
    CHECK(contains(r.output, expect));
  }
}

TEST_CASE("--compile: torchtitan's training.compile priced, in the JSON, exported as its [compile] section, refused elsewhere") {
  const std::string base = "predict --model llama3-8b --hardware h200-sxm-141g --gpus 32 --zero 3 --micro-batch 2 "
                           "--recompute selective-op --framework torchtitan --seq 8192 --global-batch 64 --json";
  Result eager = run_sixfold(base);
  Result compiled = run_sixfold(base + " --compile");
  REQUIRE(eager.code == 0);
  REQUIRE(compiled.code == 0);
  const auto je = nlohmann::json::parse(eager.output), jc = nlohmann::json::parse(compiled.output);
  CHECK(jc["workload"]["compile"] == true);
  CHECK(jc["workload"]["cross_entropy"] == "torch-compiled");
  CHECK(je["workload"]["cross_entropy"] == "torch");
  CHECK(jc["prediction"]["peak_memory_bytes"].get<double>() < je["prediction"]["peak_memory_bytes"].get<double>());
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --compile");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--compile with framework megatron"));
  // plan refuses it too, before searching: no Megatron layout runs torchtitan's compile (it used to
  // recommend one and print "torch.compile" in its header).
  for (const char* cmd : {"plan --refine 0", "simulate"}) {
    r = run_sixfold(std::string(cmd) + " --model llama3-8b --hardware h100-sxm-80g --gpus 8 --compile");
    CHECK_MESSAGE(r.code == 2, cmd);
    CHECK_MESSAGE(contains(r.output, "--compile with framework megatron"), cmd);
  }
  r = run_sixfold("plan --refine 0 --model llama3-8b --hardware h100-sxm-80g --gpus 8 --framework torchtitan --mtp-num-layers 1");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "multi-token prediction is Megatron's"));
  CHECK(contains(exported("--model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 4096 --global-batch 64 "
                          "--framework torchtitan --compile", "torchtitan", "compile.toml"),
                 "[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]"));
}

TEST_CASE("every built-in scenario predicts on the command line, checks of its flags included") {
  for (const std::string& name : sixfold::builtin_scenario_names()) {
    INFO(name);
    const Result r = run_sixfold("predict --scenario " + name);
    CHECK(r.code == 0);
  }
}

TEST_CASE("--seq past the model's max_seq: rotary positions go on (with a note), a learned position table does not") {
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --cp 8 --seq 262144 --global-batch 1 "
                         "--recompute full --zero 3 --framework torchtitan");
  CHECK(r.code == 0);
  CHECK(contains(r.output, "seq 262144 is above llama3-8b's pretraining length 8192"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 8192");
  CHECK(r.code == 0);
  CHECK_FALSE(contains(r.output, "pretraining length"));
  r = run_sixfold("predict --model gpt-1.7b --hardware h100-sxm-80g --gpus 8 --seq 4096");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "learned position table"));
}

TEST_CASE("torchtitan's async TP is compiled-only: predicted without --compile it is priced eager, with a note") {
  const std::string async = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp 4 --tp-overlap "
                            "--framework torchtitan --global-batch 8 --seq 4096";
  Result r = run_sixfold(async);
  CHECK(r.code == 0);
  CHECK(contains(r.output, "torchtitan runs async TP only on compiled blocks"));
  r = run_sixfold(async + " --compile");
  CHECK(r.code == 0);
  CHECK_FALSE(contains(r.output, "async TP only on compiled blocks"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp 4 --sp --tp-overlap --global-batch 8 --seq 4096");
  CHECK(r.code == 0);
  CHECK_FALSE(contains(r.output, "async TP only on compiled blocks"));
}

TEST_CASE("--tp-overlap: Megatron's needs --sp (its arguments.py asserts it), DeepSpeed has none: both exit 2") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp 4 --tp-overlap --global-batch 8 --seq 4096";
  Result r = run_sixfold(base);
  CHECK(r.code == 2);
  CHECK(contains(r.output, "tp-overlap with tp=4 without sp"));
  r = run_sixfold(base + " --sp --framework deepspeed");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "tp-overlap with framework deepspeed"));
  // tp 1 has nothing to overlap: accepted, priced as without it.
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp-overlap --global-batch 8 --seq 4096 --json");
  CHECK(r.code == 0);
}

TEST_CASE("--fsdp-float8-all-gather: priced for torchtitan fp8 FSDP, in the JSON, plan and export, refused elsewhere") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 16 --zero 3 --seq 8192 "
                           "--global-batch 32 --recompute full --framework torchtitan --dtype fp8 --json";
  Result plain = run_sixfold(base);
  Result fp8 = run_sixfold(base + " --fsdp-float8-all-gather");
  REQUIRE(plain.code == 0);
  REQUIRE(fp8.code == 0);
  const auto jp = nlohmann::json::parse(plain.output), jf = nlohmann::json::parse(fp8.output);
  CHECK(jf["workload"]["enable_fsdp_float8_all_gather"] == true);
  CHECK(jp["workload"]["enable_fsdp_float8_all_gather"] == false);
  CHECK(jf["prediction"]["step_time_s"].get<double>() < jp["prediction"]["step_time_s"].get<double>());
  CHECK(jf["prediction"]["peak_memory_bytes"].get<double>() < jp["prediction"]["peak_memory_bytes"].get<double>());
  // A layout FSDP does not shard: priced as without the flag, and the output says so.
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 16 --zero 1 --seq 8192 --global-batch 32 "
                         "--framework torchtitan --dtype fp8 --fsdp-float8-all-gather");
  CHECK(r.code == 0);
  CHECK(contains(r.output, "--fsdp-float8-all-gather changes nothing for this layout"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --zero 3 --dtype fp8 --fsdp-float8-all-gather");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--fsdp-float8-all-gather with framework megatron"));
  r = run_sixfold("plan --refine 0 --model llama3-8b --hardware h100-sxm-80g --gpus 8 --framework torchtitan --fsdp-float8-all-gather");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--fsdp-float8-all-gather with dtype bf16"));
  const std::string out = write_temp("fp8gather.toml", "");
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 8192 --global-batch 32 --dtype fp8 "
                  "--fsdp-float8-all-gather --export " + out + " --export-format torchtitan");
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "FSDP float8 all-gather"));
  CHECK(contains(read_file(out), "enable_fsdp_float8_all_gather = true\nprecompute_float8_dynamic_scale_for_fsdp = true"));
}

TEST_CASE("--float8-recipe: priced for torchtitan fp8, in the JSON, plan and export, refused elsewhere") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 16 --tp 2 --zero 3 --seq 8192 "
                           "--global-batch 32 --recompute full --framework torchtitan --dtype fp8 --json";
  Result tensorwise = run_sixfold(base);
  Result rowwise = run_sixfold(base + " --float8-recipe rowwise");
  REQUIRE(tensorwise.code == 0);
  REQUIRE(rowwise.code == 0);
  const auto jt = nlohmann::json::parse(tensorwise.output), jr = nlohmann::json::parse(rowwise.output);
  CHECK(jt["workload"]["float8_recipe"] == "tensorwise");
  CHECK(jr["workload"]["float8_recipe"] == "rowwise");
  CHECK(jr["prediction"]["step_time_s"].get<double>() > jt["prediction"]["step_time_s"].get<double>());
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --dtype fp8 --float8-recipe rowwise");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--float8-recipe rowwise with framework megatron"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --framework torchtitan --float8-recipe rowwise");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--float8-recipe rowwise with dtype bf16"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --zero 3 --framework torchtitan --dtype fp8 "
                  "--float8-recipe rowwise --fsdp-float8-all-gather");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "tensorwise recipe only"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --framework torchtitan --dtype fp8 "
                  "--float8-recipe blockwise");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "unknown float8 recipe 'blockwise' (allowed: tensorwise, rowwise, rowwise_with_gw_hp)"));
  const std::string out = write_temp("rowwise.toml", "");
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 16 --seq 8192 --global-batch 32 --dtype fp8 "
                  "--float8-recipe rowwise --export " + out + " --export-format torchtitan");
  REQUIRE(r.code == 0);
  CHECK(contains(r.output, "float8 rowwise"));
  CHECK(contains(read_file(out), "recipe_name = \"rowwise\""));
}

TEST_CASE("torchtitan's tensor parallelism is sequence parallel: predict turns sp on, --no-sp and plan's sp-off are refused") {
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp 2 --framework torchtitan --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["sp"] == true);
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp 2 --json");  // Megatron: as given
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["sp"] == false);
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --tp 2 --framework torchtitan --no-sp");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--no-sp with framework torchtitan"));
  r = run_sixfold("plan --refine 0 --model llama3-70b --hardware h100-sxm-80g --gpus 16 --seq 8192 --global-batch 32 "
                  "--framework torchtitan --top 50 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  int tp_layouts = 0;
  for (const auto& c : j["candidates"])
    if (c["layout"]["tp"].get<int>() > 1) {
      ++tp_layouts;
      CHECK(c["layout"]["sp"] == true);
    }
  CHECK(tp_layouts > 0);
  CHECK(j["pruned"]["torchtitan's tensor parallelism is sequence parallel"].get<int>() > 0);
  // A scenario file: sp comes with tp > 1 where it gives none; turned off, the file's error.
  const std::string given = "model: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\n"
                            "workload: {seq: 4096, global_batch: 8, framework: torchtitan}\n";
  r = run_sixfold("predict --json --scenario " + write_temp("tt_sp.yaml", given + "layout: {tp: 2}\n"));
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["sp"] == true);
  r = run_sixfold("predict --scenario " + write_temp("tt_nosp.yaml", given + "layout: {tp: 2, sp: false}\n"));
  CHECK(r.code == 1);
  CHECK(contains(r.output, "field 'layout.sp': false with framework torchtitan"));
}

TEST_CASE("--grad-reduce-in-bf16: Megatron's flag and torchtitan's reduce dtype, priced, exported, kept by a plan file, refused for DeepSpeed") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 4096 --global-batch 64 --json";
  Result fp32 = run_sixfold(base);
  Result bf16 = run_sixfold(base + " --grad-reduce-in-bf16");
  REQUIRE(fp32.code == 0);
  REQUIRE(bf16.code == 0);
  const auto j = nlohmann::json::parse(bf16.output);
  CHECK(j["workload"]["grad_reduce_in_bf16"].get<bool>());
  CHECK(j["prediction"]["peak_memory_bytes"].get<double>() <
        nlohmann::json::parse(fp32.output)["prediction"]["peak_memory_bytes"].get<double>());
  Result r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --framework deepspeed --grad-reduce-in-bf16");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--grad-reduce-in-bf16 with framework deepspeed"));
  const std::string args = "--model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 4096 --global-batch 64 --grad-reduce-in-bf16";
  CHECK(contains(exported(args + " --framework torchtitan", "torchtitan", "gradbf16.toml"),
                 "mixed_precision_reduce = \"bfloat16\""));
  CHECK(contains(exported(args, "megatron", "gradbf16.sh"), "--grad-reduce-in-bf16"));
  const std::string plan = write_temp("gradbf16.yaml", "");
  r = run_sixfold("plan " + args + " --export " + plan);
  REQUIRE(r.code == 0);
  CHECK(contains(read_file(plan), "grad_reduce_in_bf16: true"));
  r = run_sixfold("predict --plan " + plan);
  CHECK(r.code == 0);
  CHECK(contains(r.output, "gradients reduced in bf16"));
}

TEST_CASE("--activation-func-fp8-input-store: priced, exported as the config field Megatron has no flag for, refused where it does not exist") {
  const std::string base = "predict --model mixtral-8x7b --hardware h100-sxm-80g --gpus 8 --ep 8 --seq 4096 --global-batch 8 --json";
  Result plain = run_sixfold(base);
  Result stored = run_sixfold(base + " --activation-func-fp8-input-store");
  REQUIRE(plain.code == 0);
  REQUIRE(stored.code == 0);
  CHECK(nlohmann::json::parse(stored.output)["prediction"]["peak_memory_bytes"].get<double>() <
        nlohmann::json::parse(plain.output)["prediction"]["peak_memory_bytes"].get<double>());
  Result r = run_sixfold("predict --model gpt3-175b --hardware h100-sxm-80g --gpus 8 --tp 8 --activation-func-fp8-input-store");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "needs SwiGLU"));
  const std::string out = write_temp("store.sh", "");
  r = run_sixfold("plan --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 4096 --global-batch 64 "
                  "--activation-func-fp8-input-store --export " + out + " --export-format megatron");
  REQUIRE(r.code == 0);
  // Megatron-LM builds no flag for it (arguments.py excludes the TransformerConfig field): the export
  // says, as a comment and on stdout, where to set it, and writes no flag that would be refused.
  CHECK(contains(read_file(out), "# set TransformerConfig.activation_func_fp8_input_store = True"));
  CHECK_FALSE(contains(read_file(out), "--activation-func-fp8-input-store"));
  CHECK(contains(r.output, "note (megatron): set TransformerConfig.activation_func_fp8_input_store"));
  // A scenario says it as a workload field; a misspelt workload field is an error, not a default.
  const char* base_yaml = "name: t\nmodel: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\nlayout: {dp: 8}\n";
  std::string yaml = write_temp("store.yaml", std::string(base_yaml) +
                                                  "workload: {seq: 4096, global_batch: 8, activation_func_fp8_input_store: true}\n");
  r = run_sixfold("predict --scenario " + yaml);
  CHECK(r.code == 0);
  yaml = write_temp("typo.yaml", std::string(base_yaml) + "workload: {seq: 4096, global_batch: 8, adam_moment: bf16}\n");
  r = run_sixfold("predict --scenario " + yaml);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "typo.yaml:"));
  CHECK(contains(r.output, "workload.adam_moment"));
  CHECK(contains(r.output, "adam_moments"));
}

TEST_CASE("plan --framework torchtitan recommends what torchtitan can run (no ZeRO-1/2, no one-stage zero-bubble)") {
  const std::string base = "plan --model llama3.1-405b --hardware h100-sxm-80g --gpus 512 --seq 8192 --global-batch 256 --json";
  Result megatron = run_sixfold(base);
  REQUIRE(megatron.code == 0);
  const int megatron_zero = nlohmann::json::parse(megatron.output)["recommended"]["layout"]["zero"];
  CHECK((megatron_zero == 1 || megatron_zero == 2));  // what makes the case: Megatron's pick is one torchtitan lacks
  Result tt = run_sixfold(base + " --framework torchtitan");
  REQUIRE(tt.code == 0);
  const auto layout = nlohmann::json::parse(tt.output)["recommended"]["layout"];
  CHECK((layout["zero"] == 0 || layout["zero"] == 3));
  CHECK_FALSE((layout["schedule"] == "zero-bubble" && layout["vpp"] == 1));
}

TEST_CASE("--mtp-num-layers: exported as Megatron's flag, negative is a usage error, a plan file keeps it") {
  const std::string out = write_temp("mtp.sh", "");
  Result r = run_sixfold("plan --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --seq 4096 --global-batch 512 --dtype fp8 "
                         "--mtp-num-layers 1 --export " + out + " --export-format megatron");
  REQUIRE(r.code == 0);
  CHECK(contains(read_file(out), "--mtp-num-layers 1"));
  r = run_sixfold("predict --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --ep 8 --mtp-num-layers -1");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--mtp-num-layers: '-1' is out of range (allowed: 0 to 16)"));
  const std::string plan = write_temp("mtp-plan.yaml", "");
  r = run_sixfold("plan --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --seq 4096 --global-batch 512 --dtype fp8 "
                  "--mtp-num-layers 1 --export " + plan);
  REQUIRE(r.code == 0);
  CHECK(contains(read_file(plan), "mtp_num_layers: 1"));
}

TEST_CASE("bad pipeline-split and MTP input: the constraint by name, exit 2, and a negative MTP depth in a file, file and line") {
  Result r = run_sixfold(kBase + "--gpus 8 --account-for-embedding-in-pipeline-split");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "the embedding/loss pipeline split needs pp > 1"));
  r = run_sixfold(kBase + "--gpus 8 --pp 4 --vpp 2 --account-for-loss-in-pipeline-split");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "layers with the embedding and loss divide into pp*vpp stages"));
  r = run_sixfold(kBase + "--gpus 8 --pp 2 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split "
                  "--framework torchtitan --zero 3");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "is Megatron's"));
  const std::string yaml = write_temp("bad-mtp.yaml", "name: t\nmodel: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\n"
                                                      "workload: {seq: 4096, global_batch: 8, mtp_num_layers: -1}\nlayout: {dp: 8}\n");
  r = run_sixfold("predict --scenario " + yaml);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "bad-mtp.yaml:5"));
  CHECK(contains(r.output, "field 'workload.mtp_num_layers': '-1' is out of range"));
}

TEST_CASE("--attention-kernel: each kernel priced from its own measurement, named in --json, a bad name a usage error") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 8192 --global-batch 8 --json";
  auto step = [](const std::string& json) { return nlohmann::json::parse(json)["prediction"]["step_time_s"].get<double>(); };
  Result fa1 = run_sixfold(base + " --attention-kernel flash-attention-1");
  Result fa2 = run_sixfold(base + " --attention-kernel flash-attention-2");
  Result te = run_sixfold(base);  // megatron's own: TransformerEngine's fused attention
  REQUIRE(fa1.code == 0);
  REQUIRE(fa2.code == 0);
  REQUIRE(te.code == 0);
  CHECK(nlohmann::json::parse(te.output)["workload"]["attention_kernel"] == "te-fused");
  CHECK(nlohmann::json::parse(fa2.output)["workload"]["attention_kernel"] == "flash-attention-2");
  CHECK(step(fa1.output) > step(fa2.output));
  CHECK(step(fa2.output) > step(te.output));
  Result tt = run_sixfold(base + " --framework torchtitan");
  CHECK(nlohmann::json::parse(tt.output)["workload"]["attention_kernel"] == "flash-attention-2");
  Result bad = run_sixfold(base + " --attention-kernel flash-attention-4");
  CHECK(bad.code == 2);
  CHECK(contains(bad.output, "flash-attention-4"));
  CHECK(contains(bad.output, "allowed: flash-attention-1, flash-attention-2, te-fused"));
  const std::string yaml = write_temp("bad-kernel.yaml", "name: t\nmodel: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\n"
                                                         "workload: {seq: 4096, global_batch: 8, attention_kernel: fa9}\nlayout: {dp: 8}\n");
  Result file = run_sixfold("predict --scenario " + yaml);
  CHECK(file.code == 1);
  CHECK(contains(file.output, "bad-kernel.yaml:"));
  CHECK(contains(file.output, "'attention_kernel'"));
}

TEST_CASE("--cross-entropy and --train-metric-passes: priced, named in --json, bad values usage errors") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --seq 4096 --global-batch 32 --micro-batch 4 --zero 3 --json";
  Result torch = run_sixfold(base + " --cross-entropy torch");
  Result flash = run_sixfold(base + " --cross-entropy flash-attn --train-metric-passes 2");
  REQUIRE(torch.code == 0);
  REQUIRE(flash.code == 0);
  const auto jt = nlohmann::json::parse(torch.output), jf = nlohmann::json::parse(flash.output);
  CHECK(jt["workload"]["cross_entropy"] == "torch");
  CHECK(jf["workload"]["cross_entropy"] == "flash-attn");
  CHECK(jf["workload"]["train_metric_passes"] == 2);
  CHECK(jf["prediction"]["peak_memory_bytes"].get<double>() < jt["prediction"]["peak_memory_bytes"].get<double>());
  CHECK(nlohmann::json::parse(run_sixfold(base).output)["workload"]["cross_entropy"] == "megatron");
  Result bad = run_sixfold(base + " --cross-entropy apex");
  CHECK(bad.code == 2);
  CHECK(contains(bad.output, "allowed: megatron, torch, flash-attn"));
  Result negative = run_sixfold(base + " --train-metric-passes -1");
  CHECK(negative.code == 2);
  CHECK(contains(negative.output, "--train-metric-passes"));
}

TEST_CASE("the out-of-source spot checks in bench/spot_checks load and every row is scored") {
  for (const char* file : {"bench/spot_checks/llm_foundry_mpt.csv", "bench/spot_checks/megatron_2021_table1.csv",
                           "bench/spot_checks/llama3_405b_table4.csv", "bench/spot_checks/dgxc_benchmarking.csv",
                           "bench/spot_checks/fms_fsdp.csv", "bench/spot_checks/olmo_core.csv"}) {
    Result r = run_sixfold(std::string("validate ") + SIXFOLD_SOURCE_DIR + "/" + file + " --json");
    CAPTURE(file);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.output);
    CHECK(j["rows_scored"].get<int>() > 0);
    CHECK(j["rows_skipped"].get<int>() == 0);
    CHECK(j["rows_predicted_not_to_fit"].get<int>() == 0);
    // Every scored row carries the band predict would print, and the coverage counts them all.
    int with_band = 0, within = 0;
    for (const auto& row : j["rows"]) {
      REQUIRE(row.contains("expected_error_pct"));
      // Every row ran: it fits, or fits only by the allocator's retries.
      CAPTURE(row["id"].get<std::string>());
      CHECK((row["memory_fit"] == "fits" || row["memory_fit"] == "allocator_retries"));
      ++with_band;
      double sum = 0;
      for (const auto& [metric, e] : row["error_pct"].items()) sum += std::fabs(e.get<double>());
      within += sum / double(row["error_pct"].size()) <= row["expected_error_pct"].get<double>();
    }
    CHECK(j["error_band_coverage"]["rows"].get<int>() == with_band);
    CHECK(j["error_band_coverage"]["within"].get<int>() == within);
  }
}

TEST_CASE("predict --ops --json and run --json list the same op ids, each run with a measured and a predicted time") {
  const std::string plan = write_temp("plan-ops.yaml",
                                      "schema_version: 1\nmodel:\n  name: tiny\n  architecture: {name: tiny, layers: 2, hidden: 32, "
                                      "ffn: 64, heads: 4, kv_heads: 2, vocab: 64, max_seq: 32, norm: rmsnorm, activation: swiglu}\n"
                                      "hardware: cpu-dev\ngpus: 1\nworkload: {seq: 16, global_batch: 4, dtype: fp32}\n"
                                      "layout: {dp: 1, micro_batch: 2, recompute: selective}\n");
  Result p = run_sixfold("predict --plan " + plan + " --ops --json");
  REQUIRE(p.code == 0);
  Result r = run_sixfold("run --plan " + plan + " --steps 2 --json");
  REQUIRE(r.code == 0);
  const auto pj = nlohmann::json::parse(p.output), rj = nlohmann::json::parse(r.output);
  std::set<std::string> predicted, ran;
  for (const auto& o : pj["ops"]) predicted.insert(o["id"].get<std::string>());
  for (const auto& o : rj["ops"]) {
    ran.insert(o["id"].get<std::string>());
    CHECK(o["measured_s"].get<double>() > 0);
    CHECK(o["predicted_s"].get<double>() > 0);
  }
  CHECK(!ran.empty());
  CHECK(ran == predicted);
  CHECK(rj["predicted"]["step_time_s"].get<double>() > 0);
  CHECK(rj["measured"]["step_time_s"].get<double>() > 0);
  CHECK(ran.count("s0.dp.step.00.optimizer_step") == 1);
  CHECK(!rj["op_classes"].empty());

  // --trace on the CPU backend: the last step's ops in the simulator's trace format, one event per
  // timed op, named by the program's op name with its id; the simulated step's trace has the same
  // process (stage) and thread (stream) layout.
  const auto trace = (std::filesystem::temp_directory_path() / "sixfold-cli-test-measured.json").string();
  const auto sim_trace = (std::filesystem::temp_directory_path() / "sixfold-cli-test-simulated.json").string();
  std::filesystem::remove(trace);
  REQUIRE(run_sixfold("run --plan " + plan + " --steps 2 --trace " + trace).code == 0);
  REQUIRE(run_sixfold("simulate --plan " + plan + " --trace " + sim_trace).code == 0);
  std::ifstream in(trace), sin(sim_trace);
  const auto tj = nlohmann::json::parse(in), sj = nlohmann::json::parse(sin);
  std::set<std::string> traced, threads, sim_threads;
  for (const auto& e : tj["traceEvents"]) {
    if (e["ph"] == "X" && e["args"].contains("id")) traced.insert(e["args"]["id"].get<std::string>());
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
  }
  for (const auto& e : sj["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 0) sim_threads.insert(e["args"]["name"].get<std::string>());
  CHECK(traced == ran);
  CHECK(threads == sim_threads);
  CHECK(tj["otherData"]["measured"] == true);
}

TEST_CASE("run refuses an output it cannot write before it trains") {
  const std::string plan = write_temp("plan-unwritable.yaml",
                                      "schema_version: 1\nmodel:\n  name: tiny\n  architecture: {name: tiny, layers: 2, hidden: 32, "
                                      "ffn: 64, heads: 4, kv_heads: 2, vocab: 64, max_seq: 32, norm: rmsnorm, activation: swiglu}\n"
                                      "hardware: cpu-dev\ngpus: 1\nworkload: {seq: 16, global_batch: 4, dtype: fp32}\nlayout: {dp: 1}\n");
  Result r = run_sixfold("run --plan " + plan + " --steps 2 --trace /nonexistent-dir/measured.json");
  CHECK(r.code == 1);
  CHECK(contains(r.output, "/nonexistent-dir/measured.json"));
  CHECK(!contains(r.output, "loss"));  // no step ran
}

TEST_CASE("--recompute-num-layers: Megatron's block recompute on the CLI, in the JSON and a plan file, and run") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --pp 4 --seq 4096 --global-batch 16 ";
  Result r = run_sixfold(base + "--recompute-num-layers 2 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["layout"]["recompute"] == "full");  // implied, as Megatron's block method is of full recompute
  CHECK(j["layout"]["recompute_num_layers"] == 2);
  r = run_sixfold(base + "--recompute selective --recompute-num-layers 2");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "needs --recompute full"));
  r = run_sixfold(base + "--recompute-num-layers 2 --framework torchtitan");
  CHECK(r.code != 0);
  CHECK(contains(r.output, "block recompute (--recompute-num-layers) is Megatron's"));
  r = run_sixfold(base + "--recompute-num-layers -1");
  CHECK(r.code == 2);
  r = run_sixfold(base + "--recompute-num-layers 2");
  CHECK(contains(r.output, "recompute=full(block 2)"));
  const std::string plan = write_temp("plan-block.yaml",
                                      "schema_version: 1\nmodel:\n  name: tiny\n  architecture: {name: tiny, layers: 2, hidden: 32, "
                                      "ffn: 64, heads: 4, kv_heads: 2, vocab: 64, max_seq: 32, norm: rmsnorm, activation: swiglu}\n"
                                      "hardware: h100-sxm-80g\ngpus: 1\nworkload: {seq: 16, global_batch: 2, dtype: fp32}\n"
                                      "layout: {dp: 1, recompute: full, recompute_num_layers: 1}\n");
  r = run_sixfold("predict --plan " + plan + " --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["recompute_num_layers"] == 1);
  r = run_sixfold("run --plan " + plan + " --steps 1");  // one rank, no mpirun: the executor runs it
  CHECK(r.code == 0);
}

TEST_CASE("--recompute-every: torchtitan's every k-th layer checkpointing on the CLI and in the JSON, refused for Megatron") {
  const std::string base = "predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --pp 4 --seq 4096 --global-batch 16 ";
  Result r = run_sixfold(base + "--framework torchtitan --recompute-every 2 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["layout"]["recompute"] == "full");
  CHECK(j["layout"]["recompute_every"] == 2);
  r = run_sixfold(base + "--recompute-every 2");
  CHECK(r.code != 0);
  CHECK(contains(r.output, "is torchtitan's"));
  r = run_sixfold(base + "--framework torchtitan --recompute-every 2");
  CHECK(contains(r.output, "recompute=full(every 2)"));
  r = run_sixfold(base + "--framework torchtitan --recompute-every 1");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "k at least 2"));
  r = run_sixfold(base + "--framework torchtitan --recompute selective-op --recompute-every 2");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "needs --recompute full"));
  const std::string plan = write_temp("plan-every.yaml",
                                      "schema_version: 1\nmodel: llama3-8b\nhardware: h100-sxm-80g\ngpus: 8\n"
                                      "workload: {seq: 4096, global_batch: 16}\nlayout: {dp: 8, recompute: full, recompute_every: two}\n");
  r = run_sixfold("predict --plan " + plan);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "plan-every.yaml:6: field 'layout.recompute_every': 'two' is not a whole number"));
}

TEST_CASE("--pipeline-model-parallel-layout: Megatron's custom layout sets vpp, prices, exports, and bad text is refused") {
  // DeepSeek-V3's 61 layers on pp 8 x vpp 2 (Megatron-LM examples/moe_recipes, without the MTP).
  const std::string base = "predict --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --pp 8 --ep 32 --seq 4096 "
                           "--global-batch 512 --dtype fp8 --recompute full ";
  Result r = run_sixfold(base + "--pipeline-model-parallel-layout 'Et*4|(tttt|)*14,tL' --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["layout"]["vpp"] == 2);
  CHECK(j["layout"]["schedule"] == "interleaved");
  CHECK(j["layout"]["pipeline_model_parallel_layout"] == "Et*4|(tttt|)*14,tL");
  CHECK(j["stages"].size() == 8);
  // The same split written out stage by stage prices the same.
  std::string flat = "Etttt";
  for (int i = 0; i < 14; ++i) flat += "|tttt";
  flat += "|tL";
  r = run_sixfold(base + "--pipeline-model-parallel-layout '" + flat + "' --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["prediction"]["step_time_s"] == j["prediction"]["step_time_s"]);
  r = run_sixfold(base + "--pipeline-model-parallel-layout 'Et*4|(tttt|)*14,tL'");
  CHECK(contains(r.output, "pp-layout=Et*4|(tttt|)*14,tL"));
  // Bad text: exit 2, the flag, the text and the position.
  r = run_sixfold(base + "--pipeline-model-parallel-layout 'Et*4|(tttt|)*14,tX'");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "--pipeline-model-parallel-layout: 'Et*4|(tttt|)*14,tX' at character 18: 'X' is not a layout symbol"));
  r = run_sixfold(base + "--pipeline-model-parallel-layout 'Et*4|(tttt|)*14,ttL'");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "places every transformer layer once"));
  r = run_sixfold(base + "--vpp 4 --pipeline-model-parallel-layout 'Et*4|(tttt|)*14,tL'");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "has 16 stages, pp=8 x vpp=4 is 32 (vpp 2 fits it)"));
  r = run_sixfold(base + "--pipeline-model-parallel-layout 'Et*4|(tttt|)*14,tL' --framework torchtitan --zero 3");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "the custom pipeline layout is Megatron's"));
  // Held against the planner's choice with --compare (the layout's commas stay in its value).
  r = run_sixfold("plan --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --seq 4096 --global-batch 512 --dtype fp8 "
                  "--compare 'tp=1,pp=8,ep=32,recompute=full,pipeline_model_parallel_layout=Et*4|(tttt|)*14,tL'");
  CHECK(r.code == 0);
  CHECK(contains(r.output, "pp-layout=Et*4|(tttt|)*14,tL"));
  // A plan file keeps it, and a bad one names the file and line.
  const std::string plan = write_temp("layout-plan.yaml",
                                      "schema_version: 1\nmodel: deepseek-v3\nhardware: h800-sxm-80g\ngpus: 256\n"
                                      "workload: {seq: 4096, global_batch: 512, dtype: fp8}\n"
                                      "layout: {dp: 32, pp: 8, ep: 32, recompute: full, "
                                      "pipeline_model_parallel_layout: 'Et*4|(tttt|)*14,tL'}\n");
  r = run_sixfold("predict --plan " + plan + " --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.output)["layout"]["vpp"] == 2);
  const std::string bad = write_temp("layout-bad.yaml",
                                     "schema_version: 1\nmodel: deepseek-v3\nhardware: h800-sxm-80g\ngpus: 256\n"
                                     "workload: {seq: 4096, global_batch: 512, dtype: fp8}\n"
                                     "layout: {dp: 32, pp: 8, ep: 32, pipeline_model_parallel_layout: 'Et*4|(tttt|*14,tL'}\n");
  r = run_sixfold("predict --plan " + bad);
  CHECK(r.code == 1);
  CHECK(contains(r.output, "layout-bad.yaml:6"));
  CHECK(contains(r.output, "'(' without a matching ')'"));
}

TEST_CASE("--moe-enable-deepep: priced, in the JSON and the plan file, exported as Megatron's flex dispatcher, refused for dense models") {
  const std::string base = "predict --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --pp 8 --ep 32 --seq 4096 "
                           "--global-batch 512 --dtype fp8 --recompute full ";
  Result r = run_sixfold(base + "--json");
  REQUIRE(r.code == 0);
  const auto a2a = nlohmann::json::parse(r.output);
  r = run_sixfold(base + "--moe-enable-deepep --json");
  REQUIRE(r.code == 0);
  const auto dedup = nlohmann::json::parse(r.output);
  CHECK(dedup["workload"]["moe_enable_deepep"] == true);
  CHECK(a2a["workload"]["moe_enable_deepep"] == false);
  CHECK(dedup["prediction"]["step_time_s"].get<double>() < a2a["prediction"]["step_time_s"].get<double>());
  r = run_sixfold(base + "--moe-enable-deepep");
  CHECK(contains(r.output, "DeepEP dispatch"));
  r = run_sixfold("predict --model llama3-8b --hardware h100-sxm-80g --gpus 8 --moe-enable-deepep");
  CHECK(r.code == 2);
  CHECK(contains(r.output, "the DeepEP dispatcher needs an MoE model"));
  const std::string out = write_temp("deepep.sh", "");
  r = run_sixfold("plan --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --seq 4096 --global-batch 512 --dtype fp8 "
                  "--moe-enable-deepep --export " + out + " --export-format megatron");
  REQUIRE(r.code == 0);
  const std::string sh = read_file(out);
  CHECK(contains(sh, "--moe-token-dispatcher-type flex"));
  CHECK(contains(sh, "--moe-enable-deepep"));
  const std::string plan = write_temp("deepep-plan.yaml", "");
  r = run_sixfold("plan --model deepseek-v3 --hardware h800-sxm-80g --gpus 256 --seq 4096 --global-batch 512 --dtype fp8 "
                  "--moe-enable-deepep --export " + plan);
  REQUIRE(r.code == 0);
  CHECK(contains(read_file(plan), "moe_enable_deepep: true"));
}

TEST_CASE("a squared-ReLU model is priced and run") {
  const std::string plan = write_temp("plan-relu2.yaml",
                                      "schema_version: 1\nmodel:\n  name: tiny\n  architecture: {name: tiny, layers: 2, hidden: 32, "
                                      "ffn: 128, heads: 4, kv_heads: 2, vocab: 64, max_seq: 32, norm: layernorm, activation: squared-relu}\n"
                                      "hardware: h100-sxm-80g\ngpus: 1\nworkload: {seq: 16, global_batch: 2, dtype: fp32}\n"
                                      "layout: {dp: 1}\n");
  Result r = run_sixfold("predict --plan " + plan + " --json");
  REQUIRE(r.code == 0);
  r = run_sixfold("run --plan " + plan + " --steps 1");  // one rank, no mpirun
  CHECK(r.code == 0);
}

TEST_CASE("plan: hybrid sharding is searched on a slow network and exported as MiCS, unless --no-hybrid-sharding") {
  const std::string args = "--model llama3-8b --gpus 128 --framework deepspeed --cluster aws-p4de --seq 4096 --global-batch 256";
  const auto best = [&](const std::string& extra) {
    const Result r = run_sixfold("plan " + args + extra + " --json");
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.output)["recommended"]["layout"];
  };
  const auto hybrid = best("");
  CHECK(hybrid["dp_shard"] == 8);
  CHECK(!best(" --no-hybrid-sharding").contains("dp_shard"));
  CHECK(contains(exported(args, "deepspeed", "mics.json"), "\"mics_shard_size\": 8"));
}
