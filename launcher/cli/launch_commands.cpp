// grpo-launch render / submit / supervise: the Slurm side of the CLI. Plans come from
// build_plan(); the script from core::make_sbatch_view + render::render_sbatch; sbatch, srun and
// libslurm through grpo_slurm's adapters.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/core/catalog.h"
#include "grpo/core/job_step.h"
#include "grpo/core/plan_render.h"
#include "grpo/core/run_spec.h"
#include "grpo/core/sbatch_script.h"
#include "grpo/core/shell_quote.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/render/sbatch_render.h"
#include "grpo/slurm/process_runner.h"
#include "grpo/slurm/sbatch.h"
#include "grpo/slurm/slurm_job.h"
#include "grpo/slurm/step_runner.h"

namespace grpo::cli {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

constexpr const char* kTemplateName = "sbatch.mustache";

int fail(const core::Error& e) {
  print_error(e.str());
  return exit_code_for(e);
}

fs::path executable_path() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

// "20261129T204500Z" and "2026-11-29T20:45:00Z" for now.
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

core::Result<std::string> load_template(const LaunchArgs& args) {
  if (!args.template_file.empty()) return io::read_file(args.template_file);
  for (const auto& dir : io::template_search_path(executable_path().parent_path())) {
    std::error_code ec;
    if (fs::is_regular_file(dir / kTemplateName, ec)) return io::read_file(dir / kTemplateName);
  }
  return make_error(ErrorKind::kNotFound,
                    std::string("cannot find templates/") + kTemplateName +
                        " (installed share/grpo-launch/templates or the source tree)");
}

bool looks_like_file(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0);
}

// Everything render and submit need, computed once.
struct Prepared {
  core::Plan plan;
  std::string run_dir;  // absolute
  std::string script;
  core::RunSpec run;
};

core::Result<Prepared> prepare(const GlobalArgs& global, const LaunchArgs& args, core::Plan plan) {
  Prepared p;
  p.plan = std::move(plan);
  const auto [stamp, iso] = utc_now();
  // The run directory: --run-dir, or runs/<model>-<profile>-<UTC time> under the current one.
  std::error_code ec;
  fs::path dir = args.run_dir.empty()
                     ? fs::path("runs") / (core::sanitize_name(p.plan.model.name) + "-" +
                                           core::sanitize_name(p.plan.cluster.name) + "-" + stamp)
                     : fs::path(args.run_dir);
  dir = fs::absolute(dir, ec).lexically_normal();
  if (ec) return make_error(ErrorKind::kIo, "cannot resolve " + dir.string() + ": " + ec.message());
  std::string dir_text = dir.string();
  while (dir_text.size() > 1 && dir_text.back() == '/') dir_text.pop_back();
  p.run_dir = dir_text;
  const std::string run_id = fs::path(dir_text).filename().string();

  core::SbatchRunOptions opts;
  opts.run_dir = p.run_dir;
  opts.launcher_path = executable_path().string();
  opts.run_id = run_id;
  opts.version = GRPO_VERSION;
  if (opts.launcher_path.empty()) {
    return make_error(ErrorKind::kInternal, "cannot find the grpo-launch executable");
  }
  GRPO_TRY(const core::SbatchView view, core::make_sbatch_view(p.plan, opts));
  GRPO_TRY(const std::string tmpl, load_template(args));
  GRPO_TRY(p.script,
           render::render_sbatch(tmpl, view,
                                 args.template_file.empty() ? kTemplateName : args.template_file));

  // What supervise runs: --trainer-cmd, else grpo-trainer (next to grpo-launch, else on PATH).
  core::RunSpec& run = p.run;
  run.run_id = run_id;
  run.created_utc = iso;
  run.profile = p.plan.cluster.name;
  run.model = p.plan.model.name;
  run.version = GRPO_VERSION;
  run.nodes = p.plan.rank_map.nodes;
  run.ranks_per_node = p.plan.rank_map.ranks_per_node;
  run.cpus_per_task = view.cpus_per_task.empty() ? 0 : std::stoi(view.cpus_per_task);
  if (!args.trainer_cmd.empty()) {
    auto argv = core::split_command_line(args.trainer_cmd);
    if (!argv.ok()) {
      return make_error(argv.error().kind, "--trainer-cmd: " + argv.error().message);
    }
    run.trainer_command = std::move(argv).value();
  } else {
    const fs::path next_to = executable_path().parent_path() / "grpo-trainer";
    std::string model = args.plan.model;
    if (looks_like_file(model)) {
      model = fs::absolute(model, ec).lexically_normal().string();
    } else {
      io::DirectorySourceProvider provider(
          io::profile_search_path(io::search_inputs_from_environment(global.profile_dirs)));
      if (auto path = provider.locate(core::CatalogKind::kModel, model)) model = path->string();
    }
    run.trainer_command = {fs::exists(next_to, ec) ? next_to.string() : "grpo-trainer", "--model",
                           model, "--run-dir", p.run_dir};
  }
  return p;
}

}  // namespace

int cmd_render(const GlobalArgs& global, const LaunchArgs& args) {
  auto built = build_plan(global, args.plan);
  if (!built.ok()) return fail(built.error());
  auto p = prepare(global, args, std::move(built).value());
  if (!p.ok()) return fail(p.error());
  std::cout << p->script;
  return kExitOk;
}

int cmd_submit(const GlobalArgs& global, const LaunchArgs& args) {
  auto built = build_plan(global, args.plan);
  if (!built.ok()) return fail(built.error());
  if (!core::plan_ok(built.value())) {
    if (args.plan.format == "json") {
      std::cout << core::plan_to_json(built.value()).dump(2) << "\n";
    } else {
      std::cout << core::render_summary(built.value());
    }
    print_error("the plan is not runnable (see the diagnostics above); nothing was submitted");
    return kExitFindings;
  }
  if (args.plan.dry_run && args.plan.format == "text") {
    // The summary first: it stands even when the script cannot be made (e.g. a run directory
    // that cannot appear on an #SBATCH line).
    std::cout << core::render_summary(built.value()) << "\n" << std::flush;
  }
  auto prepared = prepare(global, args, std::move(built).value());
  if (!prepared.ok()) return fail(prepared.error());
  Prepared& p = prepared.value();
  if (args.plan.dry_run) {
    if (args.plan.format == "json") {
      nlohmann::json j = {{"plan", core::plan_to_json(p.plan)}, {"sbatch", p.script}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << p.script;
    }
    return kExitOk;
  }

  const std::map<std::string, std::string> files = {
      {"plan.json", core::plan_to_json(p.plan).dump(2) + "\n"},
      {"rankmap.json", core::rank_map_to_json(p.plan.rank_map).dump(2) + "\n"},
      {"env.json", core::env_to_json(p.plan.env, p.plan.rank_map).dump(2) + "\n"},
      {"run.json", core::run_spec_to_json(p.run).dump(2) + "\n"},
      {"job.sbatch", p.script},
  };
  if (auto st = io::create_dir_atomic(p.run_dir, files, {"job.sbatch"}); !st.ok()) {
    return fail(st.error());
  }
  slurm::PosixProcessRunner runner;
  slurm::SubmitRequest request;
  request.script = p.run_dir + "/job.sbatch";
  request.timeout = std::chrono::seconds(args.sbatch_timeout_s);
  bool maybe_submitted = false;
  auto submitted = slurm::submit_batch(runner, request, &maybe_submitted);
  if (!submitted.ok()) {
    core::Error e = submitted.error();
    if (maybe_submitted) {
      e.message += "; run directory kept: " + p.run_dir;
    } else {
      std::error_code ec;
      fs::remove_all(p.run_dir, ec);
      e.message += ec ? "; nothing was submitted (could not remove " + p.run_dir + ")"
                      : "; nothing was submitted";
    }
    return fail(e);
  }
  const auto job = submitted.value();
  const std::string id = std::to_string(job.job_id);
  nlohmann::json job_json = {{"schema", "grpo-launch/job/v1"},
                             {"job_id", job.job_id},
                             {"cluster", job.cluster},
                             {"submitted_utc", p.run.created_utc}};
  if (auto st = io::write_file_atomic(p.run_dir + "/job.json", job_json.dump(2) + "\n", 0600);
      !st.ok()) {
    std::fprintf(stderr, "grpo-launch: warning: job %s was submitted but %s\n", id.c_str(),
                 st.error().message.c_str());
  }
  std::cout << "Submitted batch job " << id << ": " << p.plan.model.name << " on "
            << p.plan.cluster.name << ", " << p.run.nodes << " node(s) x " << p.run.ranks_per_node
            << " rank(s)\n"
            << "Run directory: " << p.run_dir << "\n"
            << "Follow it:\n"
            << "  tail -f " << core::shell_quote(p.run_dir + "/slurm-" + id + ".out") << "\n"
            << "  squeue -j " << id << "\n"
            << "  (grpo-launch status arrives with the supervisor)\n";
  return kExitOk;
}

namespace {

core::Result<nlohmann::json> read_json(const fs::path& path) {
  GRPO_TRY(const std::string text, io::read_file(path));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return make_error(ErrorKind::kParse, "not valid JSON", core::SourceLocation{path.string()});
  }
  return j;
}

nlohmann::json allocation_json(const slurm::JobInfo& job, const std::vector<std::string>& nodes,
                               const std::vector<std::string>& argv) {
  nlohmann::json j;
  j["schema"] = "grpo-launch/allocation/v1";
  j["job_id"] = job.job_id;
  j["state"] = job.state;
  j["partition"] = job.partition;
  j["node_list"] = job.node_list;
  j["allocation_nodes"] = job.nodes;
  j["step_nodes"] = nodes;
  j["tasks_per_node"] = job.tasks_per_node;
  j["restart_count"] = job.restart_count;
  j["batch_host"] = job.batch_host;
  j["time_limit_minutes"] =
      job.time_limit_minutes ? nlohmann::json(*job.time_limit_minutes) : nlohmann::json(nullptr);
  j["start_time"] = job.start_time;
  j["end_time"] = job.end_time;
  j["srun"] = argv;
  return j;
}

void log(const std::string& line) {
  std::fprintf(stderr, "grpo-launch supervise: %s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace

int cmd_supervise(const GlobalArgs& /*global*/, const SuperviseArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  // Signals first: a USR2 or TERM during the setup below must not kill us silently.
  auto signals = slurm::ProcessSignals::install();
  if (!signals.ok()) return fail(signals.error());
  std::error_code ec;
  const fs::path dir = fs::absolute(args.run_dir, ec).lexically_normal();
  auto run_json = read_json(dir / "run.json");
  if (!run_json.ok()) return fail(run_json.error());
  auto spec = core::run_spec_from_json(run_json.value(), (dir / "run.json").string());
  if (!spec.ok()) return fail(spec.error());
  auto env_json = read_json(dir / "env.json");
  if (!env_json.ok()) return fail(env_json.error());
  auto env = core::job_env_from_json(env_json.value(), (dir / "env.json").string());
  if (!env.ok()) return fail(env.error());
  auto map_json = read_json(dir / "rankmap.json");
  if (!map_json.ok()) return fail(map_json.error());
  auto shape = core::rank_map_shape_from_json(map_json.value(), (dir / "rankmap.json").string());
  if (!shape.ok()) return fail(shape.error());
  if (shape->nodes != spec->nodes || shape->ranks_per_node != spec->ranks_per_node) {
    return fail(make_error(ErrorKind::kInvalidValue,
                           "run.json (" + std::to_string(spec->nodes) + " x " +
                               std::to_string(spec->ranks_per_node) +
                               ") does not match rankmap.json (" + std::to_string(shape->nodes) +
                               " x " + std::to_string(shape->ranks_per_node) + ")"));
  }

  auto job_id = slurm::parse_job_id(std::getenv("SLURM_JOB_ID"));
  if (!job_id.ok()) return fail(job_id.error());
  auto lib = slurm::LibSlurm::open();
  if (!lib.ok()) return fail(lib.error());
  auto job = slurm::discover_allocation(*lib.value(), job_id.value(), spec.value());
  if (!job.ok()) return fail(job.error());
  const auto nodes = core::step_nodes(spec.value(), slurm::to_allocation(job.value()));

  slurm::StepRequest step;
  step.argv = core::srun_command(spec.value(), args.srun);
  step.env = env.value();
  step.env["GRPO_RUN_DIR"] = dir.string();
  step.env["GRPO_RUN_ID"] = spec->run_id;
  if (auto st = io::write_file_atomic(dir / "allocation.json",
                                      allocation_json(job.value(), nodes, step.argv).dump(2) + "\n",
                                      0600);
      !st.ok()) {
    return fail(st.error());
  }
  std::string nodes_text;
  for (const auto& n : nodes) nodes_text += (nodes_text.empty() ? "" : ",") + n;
  const auto setup_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  log("job " + std::to_string(job->job_id) + " (restart " + std::to_string(job->restart_count) +
      ") on " + nodes_text + ", setup " + std::to_string(setup_ms) +
      " ms: " + core::shell_join(step.argv));
  slurm::PosixProcessRunner runner;
  auto outcome = slurm::run_step(runner, *signals.value(), step);
  if (!outcome.ok()) return fail(outcome.error());
  log("step " + core::describe(outcome.value()));
  return exit_code_for(outcome.value());
}

}  // namespace grpo::cli
