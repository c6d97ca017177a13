// The checker's environment phase: NCCL / HCCL / CUDA variables exported to the run.
#include <algorithm>
#include <string>

#include "checker_run.h"
#include "grpo/core/family_rules.h"
#include "grpo/core/text.h"
#include "grpo/core/verl_keys.h"
#include "grpo/plan/planner.h"

namespace grpo::core::checker_detail {

void RunChecker::check_environment() {
  const bool npu = string_setting(verl_key::kDevice, "") == "npu" ||
                   cluster_.device.vendor == DeviceVendor::kAscend;
  for (const auto& [name, a] : env_) {
    const SourceLocation where = at(a.value);
    const std::string& value = a.value.text;
    const EnvCheck e = schema_.check_env(name);
    if (e.status == EnvStatus::kUnknown) {
      add(DiagCode::kEnvUnknown, name,
          name + " is not an environment variable " + e.library + " documents",
          e.suggestion.empty() ? "remove it" : "did you mean " + e.suggestion + "?", where);
    }
    if (name.rfind("NCCL_", 0) == 0 && npu) {
      add(DiagCode::kEnvConflict, name,
          name + " on an Ascend NPU run: HCCL does not read NCCL settings",
          "use the HCCL_* equivalent", where, Severity::kWarning);
    }
    if (name.rfind("HCCL_", 0) == 0 && !npu && cluster_.device.vendor == DeviceVendor::kNvidia) {
      add(DiagCode::kEnvConflict, name,
          name + " on an NVIDIA run: NCCL does not read HCCL settings", "use the NCCL_* equivalent",
          where, Severity::kWarning);
    }
    if (name == "CUDA_DEVICE_MAX_CONNECTIONS" && !a.value.unresolved) {
      if (!megatron_ && value == "1") {
        add(DiagCode::kEnvConflict, name,
            "CUDA_DEVICE_MAX_CONNECTIONS=1 with the FSDP strategy serializes communication "
            "behind compute "
            "(Megatron-Core needs it; FSDP's overlap suffers)",
            "unset it for FSDP runs", where, Severity::kWarning);
      } else if (megatron_ && value != "1" &&
                 (run_.layout.dims.tp > 1 || run_.layout.dims.cp > 1)) {
        add(DiagCode::kEnvConflict, name,
            "CUDA_DEVICE_MAX_CONNECTIONS=" + value +
                " with Megatron TP=" + std::to_string(run_.layout.dims.tp) +
                ": Megatron-Core requires 1 for sequence parallelism / TP communication overlap",
            "export CUDA_DEVICE_MAX_CONNECTIONS=1", where);
      }
    }
    if ((name == "CUDA_VISIBLE_DEVICES" || name == "ASCEND_RT_VISIBLE_DEVICES") &&
        !a.value.unresolved && !value.empty()) {
      // verl asks Ray for n_gpus_per_node devices per node (one placement-group bundle
      // each): extra visible devices stay idle. Too few fails at once: Ray registers only the
      // visible devices (its accelerator detection caps the count at them:
      // resolve_and_update_accelerator_resources, Ray 2.x), and verl's ResourcePoolManager
      // raises "Total available GPUs N is less than total desired GPUs M" before any worker
      // starts (verl/single_controller/ray/base.py _check_resource_available, b178a3cd).
      const auto count = 1 + std::count(value.begin(), value.end(), ',');
      if (count < run_.gpus_per_node) {
        add(DiagCode::kEnvConflict, name,
            name + "=" + value + " exposes " + std::to_string(count) +
                " devices but trainer.n_gpus_per_node=" + std::to_string(run_.gpus_per_node) +
                ": Ray registers only the visible devices and verl stops at start-up (\"Total "
                "available GPUs ... is less than total desired GPUs\")",
            "make them agree", where);
      } else if (count > run_.gpus_per_node) {
        add(DiagCode::kEnvConflict, name,
            name + "=" + value + " exposes " + std::to_string(count) +
                " devices; verl uses trainer.n_gpus_per_node=" +
                std::to_string(run_.gpus_per_node) + " of them and leaves the rest idle",
            "raise n_gpus_per_node to use them, or list only the devices meant for this run", where,
            Severity::kInfo);
      }
    }
  }
}

}  // namespace grpo::core::checker_detail
