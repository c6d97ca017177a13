#include "grpo/core/cluster_profile.h"

namespace grpo::core {

std::string_view to_string(DeviceVendor v) {
  switch (v) {
    case DeviceVendor::kNvidia:
      return "nvidia";
    case DeviceVendor::kAscend:
      return "ascend";
    case DeviceVendor::kCpu:
      return "cpu";
  }
  return "nvidia";
}

std::string_view to_string(IntraLink l) {
  switch (l) {
    case IntraLink::kNvlink:
      return "nvlink";
    case IntraLink::kPcie:
      return "pcie";
    case IntraLink::kHccs:
      return "hccs";
    case IntraLink::kShm:
      return "shm";
  }
  return "nvlink";
}

std::string_view to_string(InterFabric f) {
  switch (f) {
    case InterFabric::kInfiniband:
      return "infiniband";
    case InterFabric::kRoce:
      return "roce";
    case InterFabric::kEthernet:
      return "ethernet";
    case InterFabric::kNone:
      return "none";
  }
  return "none";
}

std::string_view to_string(Dtype d) {
  switch (d) {
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp32:
      return "fp32";
  }
  return "bf16";
}

std::string_view to_string(LogprobPath p) {
  switch (p) {
    case LogprobPath::kUnfused:
      return "unfused";
    case LogprobPath::kChunkedEntropy:
      return "chunked entropy";
    case LogprobPath::kVocabParallel:
      return "vocab-parallel";
    case LogprobPath::kFused:
      return "fused";
  }
  return "unfused";
}

}  // namespace grpo::core
