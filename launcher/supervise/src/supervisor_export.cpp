// The end of a run that succeeded (docs/supervisor.md, "Export at the end"): with
// SupervisorConfig::export_hf (`run`/`submit --export-hf`) the Hugging Face export of the final
// checkpoint into <run_dir>/hf, through SupervisorDeps::exporter (by default HfRunExporter:
// `grpo-launch export`'s code, app::export_checkpoint), then `run_finished`. A failed export
// leaves the run `succeeded`: it is reported by a `hf_export_failed` event and exit 86. Part of
// supervisor.cpp's class, kept apart for size; HfRunExporter (run_exporter.h) lives here too.
#include <spdlog/spdlog.h>

#include "grpo/app/export_run.h"
#include "grpo/core/run_dir.h"
#include "grpo/supervise/supervisor.h"

namespace grpo::supervise {

using nlohmann::json;

core::Result<std::int64_t> HfRunExporter::export_newest(const std::filesystem::path& run_dir,
                                                        const std::filesystem::path& out) {
  app::ExportRequest request;
  request.run_dir = run_dir;
  request.output = out;
  request.profile_dirs = profile_dirs_;
  GRPO_TRY(const app::ExportDone done,
           app::export_checkpoint(request, [](const std::string& warning) {
             spdlog::warn("hf export: {}", warning);
           }));
  return done.step;
}

core::Result<int> Supervisor::finish_succeeded() {
  int code = kExitSucceeded;
  if (o_.config.export_hf) {
    const std::filesystem::path out = o_.run_dir / core::run_dir::kHfExport;
    const double t0 = d_.clock.now();
    HfRunExporter own(o_.profile_dirs);
    RunExporter& exporter = d_.exporter != nullptr ? *d_.exporter : own;
    core::Result<std::int64_t> step = exporter.export_newest(o_.run_dir, out);
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
