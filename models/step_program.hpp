#pragma once
// The step program: what one rank does for one micro-batch, op by op, for a model under a layout.
// The cost model prices these ops, the simulator plays them through a pipeline schedule, and the
// executor runs the same list (DESIGN.md, "One idea holds it together").
//
// Ops are counted per rank: shapes already divided by tp, cp, sp, ep and etp as the layout shards them.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "models/layout.hpp"
#include "models/model_spec.hpp"

namespace sixfold {

enum class OpKind { Gemm, Attention, Memory, Collective, PointToPoint };

// Parallel groups a collective can run in. ExpertData is the data-parallel group of expert
// weights (size tp*cp*dp / (ep*etp)); ExpertTensor is etp.
// DP: the dense gradient group, dp x cp, or under hybrid sharding a shard group (dp_shard x cp);
// DPReplica: the replicas of one shard (Layout::dp_shard), across which its gradients all-reduce.
enum class Group { None, TP, CP, DP, PP, EP, ExpertTensor, ExpertData, DPReplica };
inline constexpr int kGroupCount = static_cast<int>(Group::DPReplica) + 1;
enum class Collective { None, AllReduce, AllGather, ReduceScatter, AllToAll, RingExchange, SendRecv };

// A coarse class for reports: the executor reports measured time by the same classes.
enum class OpClass { Gemm, Attention, Norm, Elementwise, Router, Permute, Embedding, Loss, Communication, Optimizer };

struct Op {
  const char* name = "";  // static string, e.g. "qkv_proj"; backward ops keep the forward's name (pass and place tell them apart)
  OpKind kind = OpKind::Memory;
  OpClass op_class = OpClass::Elementwise;
  Flops flops = 0;        // on this rank
  Bytes bytes = 0;        // memory traffic of a memory-bound op (read + write)
  Count m = 0, n = 0, k = 0, batch = 1;  // GEMM: batch independent (m x k)(k x n) products
  bool grouped = false;   // GEMM: the batch products have weights of their own (MoE experts), not one batched kernel
  // GEMM: runs in the activation dtype (bf16) even in an fp8 run, which converts only the
  // transformer layers' linear layers: the output head (Megatron-Core's output_layer is a plain
  // tensor_parallel.ColumnParallelLinear, not a TransformerEngine module; torchtitan's float8
  // converter skips "output" by filter_fqns), the router and attention's batched GEMMs.
  bool high_precision = false;
  Group group = Group::None;
  Collective collective = Collective::None;
  Bytes message = 0;      // collective: bytes per rank in nccl-tests' "size" sense (full buffer)
  Bytes backward_message = 0;  // collective: its backward's message where it differs (another dtype)
  int group_size = 1;
  Bytes saved = 0;        // forward op: activation bytes it keeps for the backward pass
  bool tp_overlappable = false;  // a TP collective that TP comm overlap can hide behind a GEMM
  bool backward_tp_overlappable = true;  // its backward collective too (see tp_enter)
  // Not overlappable itself, but its backward collective is (async TP fusing a rowwise-scaled
  // matmul-reduce-scatter and not the all-gather-matmul: tp_enter).
  bool backward_tp_overlap_only = false;
  // An SP all-gather whose output the GEMM after it does not keep: the backward gathers the
  // sequence shard again before that GEMM's input gradient, as an op of this name (tp_enter).
  const char* backward_regather = nullptr;
  Bytes regather_message = 0;
  // Under TP comm overlap (FrameworkTraits::tp_overlap_rs_chunks): the chunks the collective and
  // its GEMM are pipelined in (0: none, the two only run side by side), whether the last chunk's
  // collective follows the GEMM, and whether a sum of the tp partials follows the exchange.
  int overlap_chunks = 0;
  bool overlap_tail = false;
  bool overlap_local_sum = false;
  bool overlaps_previous = false;  // runs concurrently with the op before it (CP ring with attention)
  bool weight_grad = false;        // backward GEMM producing a weight gradient (deferrable: zero-bubble W)
  bool backward = false;           // an op of the backward pass (a recomputed forward op is not)
  bool forward_only = false;       // has no backward op (an all-reduce whose backward is the identity)
  Bytes backward_bytes = 0;        // memory-bound op: its backward's traffic where not 1.5x the forward's
  // FP8 GEMM: bytes moved by the cast of its high-precision input (with the transposed copy the
  // other backward GEMM needs) that runs right before it; memory-bound, priced with the GEMM.
  Bytes cast_bytes = 0;
  // FP8 GEMM: the casts its backward runs (output gradient, and for torchao weight and input
  // again), priced with its dgrad.
  Bytes backward_cast_bytes = 0;
  // Kernels the framework launches for this op (host dispatch, and the per-kernel floor of a
  // memory-bound op): 1 for a fused kernel; an eager PyTorch composite launches one per ATen op.
  int kernels = 1;
  int backward_kernels = 0;        // its backward's, where not the forward's count
  // EP dispatch/combine under a node-deduplicating dispatcher (Workload::deepep_dispatch): the
  // routing that decides how many nodes a token reaches (0: a plain all-to-all).
  int routed_top_k = 0;
  Count routed_experts = 0;
};

// An op that runs nothing in its pass: a memory op of no kernel and no bytes (the forward of a
// layout copy only the backward makes, layout_copy in step_program.cpp). It costs nothing, parts
// no GEMM from the collective it is fused with, and `predict --ops` does not list it.
inline bool runs_nothing(const Op& op) { return op.kind == OpKind::Memory && op.kernels == 0 && op.bytes <= 0; }

// One transformer layer (dense or MoE) of a stage, one micro-batch.
struct LayerProgram {
  bool moe = false;
  std::vector<Op> forward;
  std::vector<Op> backward;          // includes re-running the forward where recompute says so
  size_t recompute_ops = 0;          // the first recompute_ops ops of backward are the re-run forward
  Bytes saved = 0;                   // activations held per micro-batch after the recompute policy
  Bytes recompute_workspace = 0;     // transient bytes the backward rematerialises (full and op-level recompute)
  Bytes attention_workspace = 0;     // transient bytes of the attention backward beyond its saved inputs (CP gather)
  Count dense_params = 0;            // parameters on this rank, replicated over dp*cp
  Count expert_params = 0;           // parameters on this rank, replicated over the expert-data group
  // Of dense_params, the weights of the layer's linear GEMMs (not attention's batched GEMMs, the
  // router or grouped experts): what torchao's Float8Linear converts (fsdp_float8_gathers).
  Count linear_weight_params = 0;
};

// What a pipeline stage runs besides its transformer layers, per micro-batch: the embedding on
// the first stage; the final norm, output head, loss (and MTP) on the last.
struct StageEdges {
  std::vector<Op> pre_forward, pre_backward;    // embedding (first stage)
  std::vector<Op> post_forward, post_backward;  // final norm, LM head, loss, MTP (last stage)
  Bytes pre_saved = 0, post_saved = 0;          // per micro-batch
  Bytes logits_bytes = 0;                       // transient logits/softmax of the loss
  Count dense_params = 0, expert_params = 0;    // of these ops (embedding, head, MTP)
};

struct StageProgram {
  int stage = 0;
  int layers = 0;
  int dense_layers = 0;
  int moe_layers = 0;
  // Under partial recompute (Layout::recompute_num_layers, recompute_every), the dense and MoE
  // layers among the above that run without recompute (keeps_activations).
  int kept_dense_layers = 0;
  int kept_moe_layers = 0;
  bool first = false, last = false;
  std::shared_ptr<const StageEdges> edges;  // never null
  Count dense_params = 0;                   // incl. embedding/head on this stage
  Count expert_params = 0;
  Count linear_weight_params = 0;           // of dense_params, the layers' linear weights (LayerProgram)
  Op pp_send;                               // activation send to the next stage (per micro-batch)
};

// Whether two stages of a program run the same work: the same place (first, last), layers and
// parameters, so the same ops. Such stages differ only in how many micro-batches they hold.
bool same_stage_work(const StageProgram& a, const StageProgram& b);

// What every stage of a program is built from: the dense and MoE layer programs and the edges of
// a stage by its place (those of the stages the pipeline has). They depend only on what
// same_program_parts compares, so a search builds them once and expands every layout with the
// same parts from them (program_parts).
struct ProgramParts {
  LayerProgram dense, moe;
  // Under partial recompute, the same layers without recompute (their activations kept).
  LayerProgram dense_kept, moe_kept;
  // The four layer programs by kind (LayerRun::kind): dense, moe, dense_kept, moe_kept.
  static constexpr size_t kLayerKinds = 4;
  const LayerProgram& layer(size_t kind) const {
    const LayerProgram* all[kLayerKinds] = {&dense, &moe, &dense_kept, &moe_kept};
    return *all[kind];
  }
  std::array<std::optional<StageEdges>, 4> edges;
  static size_t edge_index(bool first, bool last) { return size_t(first) + 2 * size_t(last); }
};

struct StepProgram {
  // Shared, not copied: a search expands many layouts of one layer shape from the same parts.
  std::shared_ptr<const ProgramParts> parts;
  const LayerProgram& dense_layer() const { return parts->dense; }
  const LayerProgram& moe_layer() const { return parts->moe; }
  std::vector<StageProgram> stages;  // one per pipeline stage (virtual chunks of a stage merged)
  Count micro_batches = 1;           // per pipeline per step
  Count tokens_per_micro_batch = 0;  // tokens of one micro-batch on one rank (b*s/cp)
  Count activation_bytes = 2;        // element width of activations
};

// A stage's transformer layers by the program they run: the dense and MoE layers under the
// layout's recompute policy and, under partial recompute, those that keep their activations. Every
// per-layer sum (time, FLOPs, saved bytes, listed ops) walks these.
struct LayerRun {
  const LayerProgram* program = nullptr;
  int layers = 0;
  size_t kind = 0;        // ProgramParts::layer(kind) is `program`
  const char* part = "";  // op ids' part: "dense", "moe", "dense_kept", "moe_kept"
};
struct LayerRuns {
  std::array<LayerRun, 4> runs{};
  int n = 0;  // runs with at least one layer
  const LayerRun* begin() const { return runs.data(); }
  const LayerRun* end() const { return runs.data() + n; }
};
LayerRuns layer_runs(const StepProgram& prog, const StageProgram& st);

// Expands model + layout + workload into the per-rank step program. Assumes a valid layout
// (see validate_layout).
StepProgram expand_step_program(const ModelSpec& model, const Layout& layout, const Workload& work);

// The parts of a layout's program. They read only the fields same_program_parts compares.
std::shared_ptr<const ProgramParts> program_parts(const ModelSpec& model, const Layout& layout, const Workload& work);
// parts: program_parts of a layout with the same layer shape as this one.
StepProgram expand_step_program(const ModelSpec& model, const Layout& layout, const Workload& work,
                                std::shared_ptr<const ProgramParts> parts);
// Whether two layouts have the same program parts, their ops' groups placed the same way: the
// fields make_layer, the stage edges (whether the pipeline has one stage) and the groups of the
// layer and edge ops (TP, CP, EP, expert TP; rank_mesh) depend on, and for `work` whether DeepSpeed's
// BF16_Optimizer runs (bf16_optimizer_runs, which reads the ZeRO stage).
bool same_program_parts(const Layout& a, const Layout& b, const Workload& work);
// The first stage of the program that runs the same work as stage s (s itself if none before it):
// what a per-stage price can be copied from.
size_t first_same_stage(const StepProgram& program, size_t s);

// A collective op of `size` ranks in group g; message: bytes per rank (nccl-tests' size).
Op collective_op(const char* name, Group g, Collective c, Bytes message, int size);

// The stable id of an op of the program, the name both `predict --ops` and the executor's
// measurements use: "s<stage>.<part>.<pass>.<index>.<name>", e.g. "s0.dense.fwd.03.qkv_proj".
// part: embed, dense, moe, head or pp; pass: fwd or bwd; index: the op's place in its list (two digits).
std::string op_id(int stage, const char* part, const char* pass, size_t index, const char* name);

// Weight matrices of one layer on this rank, the unit DeepSpeed's ZeRO-3 gathers one at a time: the
// attention projections (Megatron fuses QKV; MLA has five) and the MLP's two (gate and up fused);
// MoE layers have each local expert's two, the shared experts' and the router. Biases and norms
// not counted.
int weight_matrices_per_layer(const ModelSpec& model, const Layout& layout, bool moe);

std::string to_string(OpClass c);
std::string to_string(Group g);

}  // namespace sixfold
