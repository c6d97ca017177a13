// The engine versions whose rules `plan` and `check` apply: verl, Megatron-Core and vLLM.
// Rules that changed between versions (docs/parallelism.md names each one) read these. The
// defaults are what verl's current release pins: verl 0.7.0's stable vLLM image installs
// vllm==0.12.0 and Megatron-LM core_v0.15.0 (verl docker/Dockerfile.stable.vllm). Pure.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "grpo/core/result.h"

namespace grpo::core {

// major.minor[.patch]; a missing patch is 0.
struct EngineVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  friend auto operator<=>(const EngineVersion&, const EngineVersion&) = default;
  // "0.15" (the patch only when it is not 0: "0.10.2").
  std::string str() const;
};

struct EngineVersions {
  EngineVersion verl{0, 7, 0};
  EngineVersion megatron{0, 15, 0};
  EngineVersion vllm{0, 12, 0};
  friend bool operator==(const EngineVersions&, const EngineVersions&) = default;
  // "verl=0.7,megatron=0.15,vllm=0.12": the form parse_engine_versions reads.
  std::string str() const;
};

// Parses "verl=0.7,megatron=0.15,vllm=0.12"; engines not named keep their defaults. Errors
// (kInvalidValue, one line naming the bad part): an unknown engine, a part without '=', a
// version that is not major.minor[.patch], an engine given twice, an empty part.
Result<EngineVersions> parse_engine_versions(std::string_view spec);

}  // namespace grpo::core
