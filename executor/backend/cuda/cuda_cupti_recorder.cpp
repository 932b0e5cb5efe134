#include "executor/backend/cuda/cuda_cupti_recorder.hpp"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "common/error.hpp"

#define CHECK_CUPTI(call)                                                                                    \
  do {                                                                                                       \
    const CUptiResult sixfold_cupti_status_ = (call);                                                        \
    if (sixfold_cupti_status_ != CUPTI_SUCCESS) {                                                            \
      const char* message = nullptr;                                                                         \
      cuptiGetResultString(sixfold_cupti_status_, &message);                                                 \
      throw ::sixfold::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": CUPTI error " +     \
                             (message ? message : "?") + " in " #call);                                      \
    }                                                                                                        \
  } while (0)

namespace sixfold {

namespace {

// CUPTI hands completed buffers to a callback, possibly on its own thread; the records are kept
// here until collect() (one activity client per process, hence file-level state).
struct ActivityStore {
  std::mutex mutex;
  std::vector<DeviceActivity> activities;
  std::map<std::uint32_t, std::uint64_t> external_of_correlation;
  std::size_t dropped = 0;
  bool active = false;
};
ActivityStore& store() {
  static ActivityStore s;
  return s;
}

constexpr std::size_t kBufferBytes = std::size_t(8) << 20;
constexpr std::size_t kRecordAlignment = 8;  // CUPTI asks for 8-byte aligned buffers

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

const char* memcpy_kind_name(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  ActivityStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        DeviceActivity a;
        a.name = k->name ? k->name : "kernel";
        a.category = a.name.rfind("nccl", 0) == 0 ? "nccl" : "kernel";
        a.start_ns = k->start;
        a.end_ns = k->end;
        a.stream = k->streamId;
        a.op = std::to_string(k->correlationId);  // resolved to the op name in collect()
        s.activities.push_back(std::move(a));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        DeviceActivity a;
        a.name = memcpy_kind_name(m->copyKind);
        a.category = "memcpy";
        a.start_ns = m->start;
        a.end_ns = m->end;
        a.stream = m->streamId;
        a.bytes = m->bytes;
        a.op = std::to_string(m->correlationId);
        s.activities.push_back(std::move(a));
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          s.external_of_correlation[e->correlationId] = e->externalId;
        break;
      }
      default: break;
    }
  }
  std::size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  s.dropped += dropped;
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

}  // namespace

CuptiRecorder::CuptiRecorder() {
  ActivityStore& s = store();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.active) throw Error("a CUPTI recorder is already running in this process (CUPTI has one activity client)");
    s.active = true;
    s.activities.clear();
    s.external_of_correlation.clear();
    s.dropped = 0;
  }
  try {
    CHECK_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    for (CUpti_ActivityKind kind : kKinds) CHECK_CUPTI(cuptiActivityEnable(kind));
  } catch (...) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.active = false;
    throw;
  }
}

CuptiRecorder::~CuptiRecorder() {
  for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(store().mutex);
  store().active = false;
}

void CuptiRecorder::push_op(const char* name) {
  op_names_.emplace_back(name);
  CHECK_CUPTI(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, op_names_.size()));
}

void CuptiRecorder::pop_op() {
  std::uint64_t last = 0;
  CHECK_CUPTI(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
}

std::vector<DeviceActivity> CuptiRecorder::collect() {
  CHECK_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  ActivityStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<DeviceActivity> out = s.activities;
  for (DeviceActivity& a : out) {
    const auto correlation = std::uint32_t(std::stoul(a.op));
    const auto found = s.external_of_correlation.find(correlation);
    a.op = found != s.external_of_correlation.end() && found->second >= 1 && found->second <= op_names_.size()
               ? op_names_[found->second - 1]
               : std::string();
  }
  std::sort(out.begin(), out.end(), [](const DeviceActivity& x, const DeviceActivity& y) {
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.stream < y.stream;
  });
  return out;
}

nlohmann::json CuptiRecorder::chrome_trace(int rank, const std::string& title) {
  const std::vector<DeviceActivity> activities = collect();
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 0},
                    {"args", {{"name", "measured rank " + std::to_string(rank)}}}});
  std::set<std::uint32_t> streams;
  for (const auto& a : activities) streams.insert(a.stream);
  for (std::uint32_t st : streams)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", st},
                      {"args", {{"name", "cuda stream " + std::to_string(st)}}}});
  const std::uint64_t origin = activities.empty() ? 0 : activities.front().start_ns;
  for (const auto& a : activities) {
    nlohmann::json args = {{"op", a.op.empty() ? "(outside any op)" : a.op}};
    if (a.category == "memcpy") args["bytes"] = a.bytes;
    events.push_back({{"name", a.category == "memcpy" || a.op.empty() ? a.name : a.op + ": " + a.name},
                      {"cat", a.category},
                      {"ph", "X"},
                      {"pid", rank},
                      {"tid", a.stream},
                      {"ts", double(a.start_ns - origin) * 1e-3},
                      {"dur", double(a.end_ns - a.start_ns) * 1e-3},
                      {"args", args}});
  }
  std::size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(store().mutex);
    dropped = store().dropped;
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"title", title}, {"source", "CUPTI activity (measured)"}, {"dropped_records", dropped}}}};
}

void CuptiRecorder::write_chrome_trace(int rank, const std::string& title, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error("cannot write trace file " + path);
  out << chrome_trace(rank, title).dump() << "\n";
  if (!out) throw Error("error writing trace file " + path);
}

}  // namespace sixfold
