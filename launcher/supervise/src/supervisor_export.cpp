// The end of a run that succeeded (docs/supervisor.md, "Export at the end"): with
// SupervisorConfig::export_hf (`run`/`submit --export-hf`) the Hugging Face export of the final
// checkpoint into <run_dir>/hf, through SupervisorDeps::exporter (the CLI's app::HfRunExporter:
// `grpo-launch export`'s code), then `run_finished`. A failed export leaves the run `succeeded`:
// it is reported by a `hf_export_failed` event and exit 86. Part of supervisor.cpp's class, kept
// apart for size.
#include <spdlog/spdlog.h>

#include "grpo/core/run_dir.h"
#include "grpo/supervise/supervisor.h"

namespace grpo::supervise {

using nlohmann::json;

core::Result<int> Supervisor::finish_succeeded() {
  int code = kExitSucceeded;
  if (o_.config.export_hf) {
    const std::filesystem::path out = o_.run_dir / core::run_dir::kHfExport;
    const double t0 = d_.clock.now();
    core::Result<std::int64_t> step =
        d_.exporter != nullptr
            ? d_.exporter->export_newest(o_.run_dir, out)
            : core::make_error(core::ErrorKind::kInternal,
                               "the supervisor was given no Hugging Face exporter");
    const double seconds = d_.clock.now() - t0;
    if (step.ok()) {
      spdlog::info("exported step {} as a Hugging Face model to {} ({:.1f} s)", *step, out.string(),
                   seconds);
      GRPO_TRY_STATUS(
          record(ev::kHfExported, {{"path", out.string()}, {"step", *step}, {"seconds", seconds}}));
    } else {
      spdlog::error("the Hugging Face export to {} failed: {}", out.string(), step.error().str());
      GRPO_TRY_STATUS(
          record(ev::kHfExportFailed,
                 {{"path", out.string()}, {"message", step.error().str()}, {"seconds", seconds}}));
      code = kExitExportFailed;
    }
  }
  GRPO_TRY_STATUS(record(ev::kRunFinished, {{"state", "succeeded"}, {"exit_code", code}}));
  tick(true);
  d_.status.finish(summary_, d_.clock.wall());
  return code;
}

}  // namespace grpo::supervise
