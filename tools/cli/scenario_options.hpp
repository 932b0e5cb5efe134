#pragma once
// The flags that name a scenario (model, hardware, GPUs, workload, layout), shared by predict,
// plan, simulate and run. A --scenario or --plan file gives the base; flags override it.
#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>

#include "simulator/io/scenario.hpp"

namespace sixfold::cli {

struct ScenarioFlags {
  std::string scenario, plan, model, hardware, cluster, dtype, framework, adam_moments, attention_kernel, cross_entropy,
      float8_recipe;
  std::optional<BytesPerSec> network_bandwidth, intra_node_bandwidth;
  std::optional<int> gpus, gpus_per_node, nvlink_domain, mtp_layers, train_metric_passes;
  // --dp: a check of the derived data-parallel size (or, without --gpus, what sets the GPU count).
  std::optional<int> dp;
  std::optional<long long> seq, global_batch;
  bool no_sp = false, no_overlap_p2p = false, overlap_moe_ep = false, deepep = false, no_flash_attention = false, fp8_activation_input_store = false, compile = false,
       fsdp_float8_all_gather = false, grad_reduce_in_bf16 = false;
  // The layout options given, by layout field key (models/layout_fields.hpp), as typed; each is
  // checked when parsed and applied over the base in resolve.
  std::map<std::string, std::string> layout_options;
  bool given(const char* key) const { return layout_options.count(key) > 0; }

  // with_layout: add the layout flags (predict, simulate); plan has its own search flags.
  void add_to(CLI::App& app, bool with_layout);
  // Resolves files and names into a scenario; throws UsageError for missing or bad values.
  Scenario resolve(bool with_layout) const;
  // validate_layout, naming the --plan or --scenario file a bad value may have come from.
  void validate(const Scenario& s) const;
  // " (after --plan FILE)" or " (after --scenario NAME)": where values not on the command line came from.
  std::string origin() const;
};

}  // namespace sixfold::cli
