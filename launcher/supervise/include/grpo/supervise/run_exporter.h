// The Hugging Face export at the end of a run that succeeded (SupervisorConfig::export_hf,
// `run`/`submit --export-hf`; docs/supervisor.md "Export at the end").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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

// `grpo-launch export`'s code (app::export_checkpoint, bf16, 5 GB shards), the run's model looked
// up on `profile_dirs` and the profile search path; its warnings go to the log.
class HfRunExporter final : public RunExporter {
 public:
  explicit HfRunExporter(std::vector<std::string> profile_dirs)
      : profile_dirs_(std::move(profile_dirs)) {}
  core::Result<std::int64_t> export_newest(const std::filesystem::path& run_dir,
                                           const std::filesystem::path& out) override;

 private:
  std::vector<std::string> profile_dirs_;
};

}  // namespace grpo::supervise
