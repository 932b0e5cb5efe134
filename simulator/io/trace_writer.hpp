#pragma once
// Chrome trace (Trace Event Format, opens in Perfetto and chrome://tracing) of a simulated step:
// one process per simulated rank (pipeline stage), one thread per stream, complete events (ph "X")
// with ts/dur in microseconds, and a memory counter track (ph "C") per stage.
// Within a compute block the ops are aggregated by stream: one compute event, and one event per
// communication kind (TP, CP, EP) placed where the overlap rules put it: concurrent with the
// block's GEMMs when it is hidden, after the compute when it is exposed.
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "simulator/step_simulator.hpp"

namespace sixfold {

nlohmann::json chrome_trace(const SimulationResult& result, const std::string& title);
void write_chrome_trace(const SimulationResult& result, const std::string& title, const std::string& path);

}  // namespace sixfold
