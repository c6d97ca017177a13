// The use cases the CLI and the supervisor share, out of the CLI (docs/architecture.md): the
// first is the Hugging Face export of a run's checkpoint (`grpo-launch export`, and the
// supervisor's `--export-hf` at a run's end; docs/hf-checkpoints.md "Export").
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/supervise/run_exporter.h"

namespace grpo::app {

struct ExportRequest {
  std::filesystem::path run_dir;
  std::optional<std::int64_t> step;    // default: the newest checkpoint that verifies
  std::filesystem::path output;        // the model directory to write (absent or empty)
  std::string dtype = "bf16";          // bf16 | fp16 | fp32
  std::string max_shard_size = "5GB";  // as transformers' save_pretrained takes it
  // --profile-dir: where the run's model is looked up (io::profile_search_path).
  std::vector<std::string> profile_dirs;
};

struct ExportDone {
  std::int64_t step = -1;  // the checkpoint exported
  std::string summary;     // one line: what was written where
};

// What the export notices without failing: newer checkpoints skipped because they do not
// verify, a family's caveat.
using WarningSink = std::function<void(const std::string&)>;

// Verifies the checkpoint against its manifest, checks its model.safetensors against the model
// the run trained (core::hf_parameters) and writes the output as a temporary sibling renamed into
// place: complete or absent. Errors: kInvalidValue / kNotFound / kParse (run directory,
// checkpoint or model unreadable or not verifying), kIo (the output exists and is not empty, or
// cannot be written).
core::Result<ExportDone> export_checkpoint(const ExportRequest& request, const WarningSink& warn);

// The supervisor's export at the end of a run (supervise::RunExporter, `--export-hf`):
// export_checkpoint of the newest checkpoint that verifies, bf16 in 5 GB shards, the run's model
// looked up on `profile_dirs` and the profile search path; warnings go to `warn`.
class HfRunExporter final : public supervise::RunExporter {
 public:
  HfRunExporter(std::vector<std::string> profile_dirs, WarningSink warn)
      : profile_dirs_(std::move(profile_dirs)), warn_(std::move(warn)) {}
  core::Result<std::int64_t> export_newest(const std::filesystem::path& run_dir,
                                           const std::filesystem::path& out) override;

 private:
  std::vector<std::string> profile_dirs_;
  WarningSink warn_;
};

}  // namespace grpo::app
