#pragma once
// Writes a HardwareProfile back as profile YAML (docs/hardware-profiles.md: every number
// {value, source}, the source taken from HardwareProfile::provenance under the value's YAML path).
// Calibrations (GPU microbenchmarks, Kineto traces) load a base profile, replace the values they
// measured together with their provenance, and write it with this; parse_hardware() reads it back.
#include <string>

#include "simulator/hardware_profile.hpp"

namespace sixfold {

// `header` is written as '#' comment lines before the fields (may be empty). A value without a
// provenance entry is an Error naming the field: every written value must say where it came from.
std::string hardware_profile_yaml(const HardwareProfile& hw, const std::string& header);

}  // namespace sixfold
