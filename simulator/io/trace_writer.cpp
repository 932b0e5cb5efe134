#include "simulator/io/trace_writer.hpp"

#include "common/error.hpp"

namespace sixfold {

namespace {

constexpr double kMicro = 1e6;

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

std::string block_name(const Task& t) {
  std::string n = t.kind == TaskKind::Forward ? "F" : t.kind == TaskKind::Backward ? "B" : "W";
  return n + " c" + std::to_string(t.chunk) + " mb" + std::to_string(t.micro_batch);
}

std::string task_name(const Task& t) {
  switch (t.kind) {
    case TaskKind::Forward:
    case TaskKind::Backward:
    case TaskKind::WeightGrad: return block_name(t);
    case TaskKind::SendActivation: return "send act c" + std::to_string(t.chunk) + " mb" + std::to_string(t.micro_batch);
    case TaskKind::SendGradient: return "send grad c" + std::to_string(t.chunk) + " mb" + std::to_string(t.micro_batch);
    case TaskKind::GradReduce:
      return "reduce grads c" + std::to_string(t.chunk) + " mb" + std::to_string(t.micro_batch) + " #" + std::to_string(t.index);
    case TaskKind::ParamGather:
      return t.index < 0 ? std::string("gather params (after step)")
                         : "gather params c" + std::to_string(t.chunk) + " mb" + std::to_string(t.micro_batch);
    case TaskKind::Optimizer: return "optimizer";
  }
  return "?";
}

// Every event of the trace, in order, handed to `events` one at a time: the writer streams them,
// chrome_trace() collects them.
void emit_events(const SimulationResult& r, const TraceSink& events) {
  for (const StageSimulation& s : r.stages) trace_process(events, s.stage, "stage " + std::to_string(s.stage));
  for (const Task& t : r.tasks) {
    const bool block = t.kind == TaskKind::Forward || t.kind == TaskKind::Backward || t.kind == TaskKind::WeightGrad;
    if (!block) {
      nlohmann::json args = nlohmann::json::object();
      if (t.slowdown > 0) args["shared_link_slowdown_us"] = t.slowdown * kMicro;
      trace_complete(events, task_name(t), to_string(t.kind), t.rank, t.stream, t.start, t.end - t.start, args);
      continue;
    }
    const ChunkInputs& ch = r.inputs.at(size_t(t.rank)).chunks.at(size_t(t.chunk));
    const BlockCost& c = t.kind == TaskKind::Forward ? ch.forward : t.kind == TaskKind::Backward ? ch.backward : ch.weight_grad;
    const std::string name = block_name(t);
    nlohmann::json args = {{"chunk", t.chunk}, {"micro_batch", t.micro_batch}};
    if (c.recompute > 0) args["recompute_us"] = c.recompute * kMicro;
    if (t.end - t.start > t.duration + 1e-12) args["waited_for_params_us"] = (t.end - t.start - t.duration) * kMicro;
    trace_complete(events, name, to_string(t.kind), t.rank, Stream::Compute, t.start, c.compute, args);
    // TP: hidden behind the GEMMs when overlapped (exposed < raw), else after the compute.
    const bool tp_hidden = c.tp_exposed < c.tp_raw;
    trace_complete(events, name + " tp", "tp_comm", t.rank, Stream::TP, tp_hidden ? t.start : t.start + c.compute, c.tp_raw,
                 {{"exposed_us", c.tp_exposed * kMicro}});
    // CP ring exchange runs alongside the attention it feeds; only its excess is on the critical path.
    trace_complete(events, name + " cp ring", "cp_comm", t.rank, Stream::CP, t.start, c.cp_raw,
                 {{"exposed_us", c.cp_exposed * kMicro}});
    trace_complete(events, name + " ep a2a", "ep_comm", t.rank, Stream::EP, t.start + c.compute + c.tp_exposed + c.cp_exposed,
                 c.ep, {{"exposed_us", c.ep * kMicro}});
  }
  for (const StageSimulation& s : r.stages)
    for (const MemorySample& m : s.memory)
      events({{"name", "memory"}, {"ph", "C"}, {"pid", s.stage}, {"tid", 0}, {"ts", m.time * kMicro},
                        {"args", {{"GiB", m.bytes / kGiB}}}});
}

nlohmann::json other_data(const SimulationResult& r, const std::string& title) {
  return {{"title", title}, {"step_time_s", r.step_time}, {"bottleneck_stage", r.bottleneck_stage}};
}

}  // namespace

void trace_process(const TraceSink& events, int pid, const std::string& name) {
  events(metadata("process_name", pid, 0, name));
  events({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
  for (int st = 0; st < kStreamCount; ++st) events(metadata("thread_name", pid, st, to_string(Stream(st))));
}

void trace_complete(const TraceSink& events, const std::string& name, const std::string& category, int pid,
                    Stream stream, Seconds start, Seconds duration, nlohmann::json args) {
  if (duration <= 0) return;
  events({{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"pid", pid},
          {"tid", int(stream)},
          {"ts", start * kMicro},
          {"dur", duration * kMicro},
          {"args", std::move(args)}});
}

TraceFile::TraceFile(const std::string& path, const nlohmann::json& other_data) : out_(path) {
  out_.append("{\"displayTimeUnit\":\"ms\",\"otherData\":");
  out_.append(other_data.dump());
  out_.append(",\"traceEvents\":[");
}

TraceSink TraceFile::sink() {
  return [this](nlohmann::json&& e) {
    if (!first_) out_.append(",");
    first_ = false;
    out_.append(e.dump());
  };
}

void TraceFile::commit() {
  out_.append("]}\n");
  out_.commit();
}

nlohmann::json chrome_trace(const SimulationResult& r, const std::string& title) {
  nlohmann::json events = nlohmann::json::array();
  emit_events(r, [&](nlohmann::json&& e) { events.push_back(std::move(e)); });
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", other_data(r, title)}};
}

// Streamed: one event in memory at a time (a 405B/512 trace is ~200 MB of text).
void write_chrome_trace(const SimulationResult& r, const std::string& title, const std::string& path) {
  TraceFile out(path, other_data(r, title));
  emit_events(r, out.sink());
  out.commit();
}

}  // namespace sixfold
