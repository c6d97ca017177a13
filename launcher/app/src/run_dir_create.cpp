// Making a run directory for the launch use cases (launch.h): its name and identity, the batch
// script, and creating it atomically then submitting it with sbatch.
#include <ctime>

#include "grpo/app/launch.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/process/process_runner.h"
#include "grpo/render/sbatch_render.h"
#include "grpo/slurm/sbatch.h"

namespace grpo::app {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

constexpr const char* kTemplateName = "sbatch.mustache";

namespace {

core::Result<std::string> load_template(const std::string& template_file) {
  if (!template_file.empty()) return io::read_file(template_file);
  for (const auto& dir : io::template_search_path(io::executable_dir())) {
    std::error_code ec;
    if (fs::is_regular_file(dir / kTemplateName, ec)) return io::read_file(dir / kTemplateName);
  }
  return make_error(ErrorKind::kNotFound,
                    std::string("cannot find templates/") + kTemplateName +
                        " (looked in <prefix>/share/grpo-launch/templates next to the executable)");
}

}  // namespace

core::Result<std::string> render_batch_script(const std::string& template_file,
                                              const core::SbatchView& view) {
  GRPO_TRY(const std::string tmpl, load_template(template_file));
  return render::render_sbatch(tmpl, view, template_file.empty() ? kTemplateName : template_file);
}

std::pair<std::string, std::string> utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char compact[32];
  char iso[32];
  std::strftime(compact, sizeof compact, "%Y%m%dT%H%M%SZ", &tm);
  std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {compact, iso};
}

core::Result<core::SbatchRunOptions> run_options(const std::string& run_dir,
                                                 const std::string& default_name) {
  std::error_code ec;
  fs::path dir = run_dir.empty() ? fs::path("runs") / default_name : fs::path(run_dir);
  dir = fs::absolute(dir, ec).lexically_normal();
  if (ec) return make_error(ErrorKind::kIo, "cannot resolve " + dir.string() + ": " + ec.message());
  std::string dir_text = dir.string();
  while (dir_text.size() > 1 && dir_text.back() == '/') dir_text.pop_back();
  core::SbatchRunOptions opts;
  opts.run_dir = dir_text;
  opts.launcher_path = io::executable_path().string();
  opts.run_id = fs::path(dir_text).filename().string();
  opts.version = GRPO_VERSION;
  if (opts.launcher_path.empty()) {
    return make_error(ErrorKind::kInternal, "cannot find the grpo-launch executable");
  }
  return opts;
}

core::Result<std::string> submit_run_dir(const std::string& run_dir,
                                         const std::map<std::string, std::string>& files,
                                         const std::vector<std::string>& executable,
                                         int sbatch_timeout_s, const std::string& created_utc,
                                         const WarningSink& warn) {
  GRPO_TRY_STATUS(io::create_dir_atomic(run_dir, files, executable));
  process::PosixProcessRunner runner;
  slurm::SubmitRequest request;
  request.script = run_dir + "/" + std::string(core::run_dir::kBatchScript);
  request.timeout = std::chrono::seconds(sbatch_timeout_s);
  bool maybe_submitted = false;
  auto submitted = slurm::submit_batch(runner, request, &maybe_submitted);
  if (!submitted.ok()) {
    core::Error e = submitted.error();
    if (maybe_submitted) {
      e.message += "; run directory kept: " + run_dir;
    } else {
      std::error_code ec;
      fs::remove_all(run_dir, ec);
      e.message += ec ? "; nothing was submitted (could not remove " + run_dir + ")"
                      : "; nothing was submitted";
    }
    return e;
  }
  const std::string id = std::to_string(submitted->job_id);
  nlohmann::json job_json = {{"schema", "grpo-launch/job/v1"},
                             {"job_id", submitted->job_id},
                             {"cluster", submitted->cluster},
                             {"submitted_utc", created_utc}};
  if (auto st = io::write_file_atomic(run_dir + "/" + std::string(core::run_dir::kJob),
                                      core::json_text(job_json, 2) + "\n", 0600);
      !st.ok()) {
    if (warn) warn("job " + id + " was submitted but " + st.error().message);
  }
  return id;
}

}  // namespace grpo::app
