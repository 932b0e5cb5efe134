// `validate --shared-columns` (shared_columns_only): a row read as the shared validation format
// carries it, without the columns this project added to its copy, as a held-out run states it.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "simulator/fit/validation.hpp"

using namespace sixfold;

TEST_CASE("the project's added columns are the ones data/validation/README.md documents") {
  std::ifstream in(std::string(SIXFOLD_DATA_DIR) + "/validation/README.md");
  REQUIRE(in);
  std::string line;
  bool section = false;
  std::vector<std::string> documented;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) section = line == "## Columns this project adds";
    // Table rows "| `name` | meaning |"; the finer `attention` values extend a shared column.
    if (!section || line.rfind("| `", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    const std::string name = line.substr(3, end - 3);
    if (line.compare(end + 1, 3, " | ") == 0) documented.push_back(name);
  }
  std::vector<std::string> code = project_added_columns();
  std::sort(documented.begin(), documented.end());
  std::sort(code.begin(), code.end());
  CHECK(documented == code);
}

TEST_CASE("shared columns only: the project's columns read as absent, a named flash kernel as flash") {
  const std::string header =
      "id,source,layers,hidden,ffn,heads,kv_heads,vocab,seq,experts,topk,moe_ffn,gpu,gpus,gpus_per_node,dp,tp,pp,vpp,"
      "cp,ep,sp,zero,micro_batch,global_batch,recompute,dtype,tflops_hw,tflops_model,mfu_pct,tokens_per_gpu_s,iter_s,"
      "peak_mem_gib,framework,framework_date,attention,dp_overlap,tp_overlap";
  const std::string row = "R,a,32,4096,11008,32,32,32000,4096,,,,h100-sxm-80g,16,8,16,1,1,1,1,1,0,3,2,64,none,bf16,,,,3000,,,"
                          "other,2024-11,";
  // The row with the project's columns (compile on, bf16 reduce, HSDP over 8, a named kernel), and
  // the same row as the shared format writes it.
  const CsvTable full = parse_csv(header + ",compile,grad_reduce_dtype,dp_shard\n" + row + "flash-attention-2,1,,1,bf16,8\n",
                                  "full.csv");
  const CsvTable shared = parse_csv(header + "\n" + row + "flash,1,\n", "shared.csv");
  const CsvTable stripped = shared_columns_only(full);
  CHECK(stripped.column("compile") < 0);
  CHECK(stripped.column("dp_shard") < 0);
  CHECK(stripped.field(0, "attention") == "flash");
  const ValidationReport a = validate_runs(stripped, {}), b = validate_runs(shared, {}), c = validate_runs(full, {});
  REQUIRE(a.rows.size() == 1);
  REQUIRE(b.rows.size() == 1);
  REQUIRE(c.rows.size() == 1);
  CHECK(a.rows[0].predicted.at("tokens_per_gpu_s") == doctest::Approx(b.rows[0].predicted.at("tokens_per_gpu_s")).epsilon(1e-12));
  // The project's columns did change the prediction (compile, bf16 reduce, hybrid sharding).
  CHECK(c.rows[0].predicted.at("tokens_per_gpu_s") != doctest::Approx(b.rows[0].predicted.at("tokens_per_gpu_s")));
  CHECK(c.rows[0].scenario.layout.dp_shard == 8);
  CHECK(a.rows[0].scenario.layout.dp_shard == 0);
}
