// Which measured kernel table prices which hardware profile (configs/hardware/NAME.yaml).
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "simulator/kernel_tables.hpp"

namespace sixfold {

namespace {

struct TableForProfile {
  const char* profile;  // configs/hardware/<profile>.yaml
  const char* table;    // configs/kernel_tables/<table>.yaml
  bool gemm, attention, collectives;
  const char* reason;   // why this table (and these sections) apply to this profile
};

// Profiles without a row (rtx-4090, cpu-dev) have no measured table: nullptr.
const TableForProfile kTableForProfile[] = {
    {"a100-sxm-80g", "a100-sxm", true, true, true, "the measured part (NVIDIA A100-SXM4-80GB)"},
    {"a100-sxm-40g", "a100-sxm", true, true, true,
     "same GA100 (108 SMs, same clocks) and NVLink 3 as the measured 80 GB part; its HBM2 has 1.56 TB/s instead of "
     "2.04, so memory-bound (small) GEMMs run somewhat slower than the table says"},
    {"h100-sxm-80g", "h100-sxm", true, true, true, "the measured part (NVIDIA H100 80GB HBM3, 700 W)"},
    {"h800-sxm-80g", "h100-sxm", true, true, false,
     "H800 SXM5 has the H100 SXM5's SMs and HBM3, so GEMM and attention carry over; its NVLink is cut to 400 GB/s "
     "(H100: 900), so the measured NVLink collectives do not"},
    {"h100-96g-500w", "h100-sxm", false, false, true,
     "the 500 W cap lowers sustained SM clocks (the profile's own fit finds ~0.7x the 700 W GEMM rate) and HBM2e has "
     "2.4 TB/s, so the 700 W GEMM/attention tables do not carry over; NVLink 4 and NVSwitch are the H100 SXM's, so the "
     "bandwidth-bound collectives do"},
    {"h200-sxm-141g", "h200-sxm", true, true, true, "the measured part (NVIDIA H200)"},
    {"b200", "b200-sxm", true, true, true, "the measured part (NVIDIA B200)"},
    {"gb200", "gb200", true, true, true,
     "the measured part (NVIDIA GB200); collectives measured on 2 and 4 GPUs only, so larger NVL72 groups get "
     "nullopt"},
};

}  // namespace

const KernelTables* kernel_tables_for(const std::string& hardware_profile_name) {
  // The planner asks once per layout priced, for the same profile: remember this thread's last
  // answer (the tables live as long as the process), so that the common call takes no lock.
  thread_local std::string last_name;
  thread_local const KernelTables* last = nullptr;
  thread_local bool known = false;
  if (known && hardware_profile_name == last_name) return last;
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<KernelTables>> cache;  // profile -> tables, built once
  for (const auto& row : kTableForProfile) {
    if (hardware_profile_name != row.profile) continue;
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = cache[row.profile];
    if (!slot) {
      KernelTables all = KernelTables::load(row.table);
      bool whole = row.gemm && row.attention && row.collectives;
      slot = std::make_unique<KernelTables>(
          all.restricted(row.gemm, row.attention, row.collectives,
                         std::string(whole ? "" : "partial use ") + "for profile " + row.profile + ": " + row.reason));
    }
    last_name = hardware_profile_name, last = slot.get(), known = true;
    return last;
  }
  last_name = hardware_profile_name, last = nullptr, known = true;
  return nullptr;
}

}  // namespace sixfold
