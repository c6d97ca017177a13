// The Hugging Face export at the end of a run that succeeded (SupervisorConfig::export_hf,
// `run`/`submit --export-hf`; docs/supervisor.md "Export at the end"): the interface the
// supervisor calls. The export itself is a use case (app::HfRunExporter, grpo/app/export_run.h),
// which the CLI hands in; tests hand in a scripted one.
#pragma once

#include <cstdint>
#include <filesystem>

#include "grpo/core/result.h"

namespace grpo::supervise {

class RunExporter {
 public:
  virtual ~RunExporter() = default;
  // Writes the Hugging Face export of run_dir's newest checkpoint that verifies into `out`,
  // atomically, and returns that checkpoint's step.
  virtual core::Result<std::int64_t> export_newest(const std::filesystem::path& run_dir,
                                                   const std::filesystem::path& out) = 0;
};

}  // namespace grpo::supervise
