#pragma once
// Chrome trace (Trace Event Format, opens in Perfetto and chrome://tracing) of a simulated step:
// one process per simulated rank (pipeline stage), one thread per stream, complete events (ph "X")
// with ts/dur in microseconds, and a memory counter track (ph "C") per stage.
// Within a compute block the ops are aggregated by stream: one compute event, and one event per
// communication kind (TP, CP, EP) placed where the overlap rules put it: concurrent with the
// block's GEMMs when it is hidden, after the compute when it is exposed.
#include <functional>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "common/file_io.hpp"
#include "simulator/step_simulator.hpp"

namespace sixfold {

// The pieces of the format, shared with the executor's measured trace (`sixfold run --trace`) so
// that a simulated and a measured step open side by side: events go to a sink one at a time.
using TraceSink = std::function<void(nlohmann::json&&)>;
// Process `pid` named `name` (a pipeline stage), sorted by pid, with one thread per stream.
void trace_process(const TraceSink& events, int pid, const std::string& name);
// A complete event ("X") on a stream's thread; nothing for a zero duration.
void trace_complete(const TraceSink& events, const std::string& name, const std::string& category, int pid,
                    Stream stream, Seconds start, Seconds duration, nlohmann::json args = nlohmann::json::object());

// A trace file written as the events come: {"displayTimeUnit", "otherData", "traceEvents": [...]}.
class TraceFile {
 public:
  TraceFile(const std::string& path, const nlohmann::json& other_data);
  TraceSink sink();
  void commit();  // closes the event list and renames the file into place

 private:
  FileWriter out_;
  bool first_ = true;
};

nlohmann::json chrome_trace(const SimulationResult& result, const std::string& title);
void write_chrome_trace(const SimulationResult& result, const std::string& title, const std::string& path);

}  // namespace sixfold
