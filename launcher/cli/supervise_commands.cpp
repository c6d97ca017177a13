// grpo-launch run / supervise: a run directory supervised until training finishes
// (docs/supervisor.md). `run` plans and writes the run directory like submit, then supervises it
// here with local ranks; `supervise` is the batch script's side (srun job steps inside the
// allocation) and, outside a Slurm job, continues a run directory locally.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/app/export_run.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/text.h"
#include "grpo/io/files.h"
#include "grpo/job/job_step.h"
#include "grpo/job/run_spec.h"
#include "grpo/plan/plan_render.h"
#include "grpo/process/process_runner.h"
#include "grpo/process/signals.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/slurm/allocation.h"
#include "grpo/slurm/slurm_job.h"
#include "grpo/supervise/clock.h"
#include "grpo/supervise/local_runner.h"
#include "grpo/supervise/progress.h"
#include "grpo/supervise/srun_runner.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/supervise/verl_engine.h"
#include "grpo/supervise_slurm/slurm_job_control.h"
#include "launch_common.h"

namespace grpo::cli {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

// What VerlRunner needs from verl.json and supervisor.json (the end time and nodes are added
// where they are known).
supervise::VerlRunnerOptions verl_runner_options(const supervise::VerlRunInfo& info,
                                                 const supervise::SupervisorConfig& config) {
  supervise::VerlRunnerOptions o;
  o.end_reserve_s = config.end_margin_s;
  o.checkpoint_dir = info.checkpoint_dir;
  o.resume_mode = info.resume_mode;
  o.hdfs = info.hdfs;
  o.submitted = info.submitted;
  return o;
}

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

// What a run directory holds for the supervisor.
struct RunDir {
  fs::path dir;
  core::RunSpec spec;
  core::EnvMap env;
  supervise::SupervisorConfig config;
};

core::Result<RunDir> load_run_dir(const std::string& given) {
  RunDir r;
  std::error_code ec;
  r.dir = fs::absolute(given, ec).lexically_normal();
  GRPO_TRY(const nlohmann::json run_json, read_json(r.dir / core::run_dir::kRunSpec));
  GRPO_TRY(r.spec, core::run_spec_from_json(run_json, (r.dir / core::run_dir::kRunSpec).string()));
  GRPO_TRY(const nlohmann::json env_json, read_json(r.dir / core::run_dir::kEnv));
  GRPO_TRY(r.env, core::job_env_from_json(env_json, (r.dir / core::run_dir::kEnv).string()));
  GRPO_TRY(const nlohmann::json map_json, read_json(r.dir / core::run_dir::kRankMap));
  GRPO_TRY(const core::RankMapShape shape,
           core::rank_map_shape_from_json(map_json, (r.dir / core::run_dir::kRankMap).string()));
  if (shape.nodes != r.spec.nodes || shape.ranks_per_node != r.spec.ranks_per_node) {
    return make_error(ErrorKind::kInvalidValue, "run.json (" + std::to_string(r.spec.nodes) +
                                                    " x " + std::to_string(r.spec.ranks_per_node) +
                                                    ") does not match rankmap.json (" +
                                                    std::to_string(shape.nodes) + " x " +
                                                    std::to_string(shape.ranks_per_node) + ")");
  }
  if (fs::exists(r.dir / core::run_dir::kSupervisor, ec)) {
    GRPO_TRY(const nlohmann::json sj, read_json(r.dir / core::run_dir::kSupervisor));
    GRPO_TRY(r.config, supervise::supervisor_config_from_json(
                           sj, (r.dir / core::run_dir::kSupervisor).string()));
  } else {
    // A run directory from before the supervisor: only grpo-trainer's exit codes are known.
    const std::string exe = fs::path(r.spec.trainer_command.front()).filename().string();
    r.config.contract = exe == "grpo-trainer" ? supervise::TrainerContract::kEmbedded
                                              : supervise::TrainerContract::kExternal;
  }
  return r;
}

std::string log_level(const GlobalArgs& global) {
  return global.log_level.empty() ? std::string("info") : global.log_level;
}

// The supervisor's settings from the run directory: run.json's trainer and shape, env.json with
// the run's GRPO_* variables, supervisor.json.
supervise::SupervisorOptions supervisor_options(const RunDir& r) {
  supervise::SupervisorOptions o;
  o.run_dir = r.dir;
  o.profile = r.spec.profile;
  o.model = r.spec.model;
  o.trainer_argv = r.spec.trainer_command;
  for (const auto& [k, v] : r.env) o.env[k] = v;
  o.env["GRPO_PLAN_FILE"] = (r.dir / core::run_dir::kPlan).string();
  o.env["GRPO_RUN_DIR"] = r.dir.string();
  o.env["GRPO_RUN_ID"] = r.spec.run_id;
  o.nodes = r.spec.nodes;
  o.ranks_per_node = r.spec.ranks_per_node;
  o.exclude = r.spec.exclude;
  o.config = r.config;
  return o;
}

// verl.json of a verl run (submit --engine verl, docs/verl.md); none for other runs.
core::Result<std::optional<supervise::VerlRunInfo>> read_verl_info(const fs::path& dir) {
  const fs::path path = dir / core::run_dir::kVerlInfo;
  if (std::error_code ec; !fs::exists(path, ec)) return std::optional<supervise::VerlRunInfo>();
  GRPO_TRY(const nlohmann::json j, read_json(path));
  GRPO_TRY(supervise::VerlRunInfo info, supervise::verl_run_info_from_json(j, path.string()));
  return std::optional<supervise::VerlRunInfo>(std::move(info));
}

// What runs the attempts and answers for the job; under Slurm, `lib` is what the job control asks.
struct Attempts {
  std::unique_ptr<supervise::AttemptRunner> runner;
  std::unique_ptr<supervise::JobControl> job;
  std::unique_ptr<slurm::LibSlurm> lib;
};

// Local ranks without Slurm: every rank on this machine, one "node" of world_size ranks (one
// process for verl), no Slurm nodes to exclude (set in `o`). A verl run has no job to ask for
// its end time: GRPO_VERL_END_TIME (seconds since the epoch) stands for it.
Attempts local_attempts(const RunDir& r, const std::optional<supervise::VerlRunInfo>& verl,
                        supervise::SupervisorOptions& o) {
  Attempts a;
  a.job = std::make_unique<supervise::LocalJobControl>();
  o.ranks_per_node = verl ? 1 : r.spec.nodes * r.spec.ranks_per_node;
  o.nodes = 1;
  o.exclude.clear();
  if (verl) {
    std::optional<double> end;
    if (const char* t = std::getenv("GRPO_VERL_END_TIME"); t != nullptr && *t != '\0') {
      end = std::strtod(t, nullptr);
    }
    supervise::VerlRunnerOptions vo = verl_runner_options(*verl, r.config);
    vo.end_time = [end]() -> std::optional<double> { return end; };
    a.runner = std::make_unique<supervise::VerlRunner>(
        std::make_unique<supervise::LocalRunner>(false), std::move(vo));
  } else {
    // Standby ranks only for grpo-trainer, which knows --standby.
    a.runner = std::make_unique<supervise::LocalRunner>(r.config.contract ==
                                                        supervise::TrainerContract::kEmbedded);
  }
  return a;
}

// Inside the Slurm job: its allocation (recorded in allocation.json), srun job steps on it (a
// verl run: one local process that ends before the job does) and the job's own control, into
// `a`. Prints the setup line (job, restart, step nodes, milliseconds since `t0`).
core::Status slurm_attempts(const RunDir& r, const std::string& srun,
                            const std::optional<supervise::VerlRunInfo>& verl,
                            process::ProcessRunner& processes,
                            std::chrono::steady_clock::time_point t0, Attempts& a) {
  GRPO_TRY(const std::uint32_t job_id, slurm::parse_job_id(std::getenv("SLURM_JOB_ID")));
  GRPO_TRY(a.lib, slurm::LibSlurm::open());
  GRPO_TRY(const slurm::JobInfo info, slurm::discover_allocation(*a.lib, job_id, r.spec));
  const auto nodes = core::step_nodes(r.spec, slurm::to_allocation(info));
  GRPO_TRY_STATUS(io::write_file_atomic(
      r.dir / core::run_dir::kAllocation,
      core::json_text(allocation_json(info, nodes, core::srun_command(r.spec, srun)), 2) + "\n",
      0600));
  supervise::SlurmJobControlOptions jo;
  jo.job_id = job_id;
  jo.restart_count = info.restart_count;
  if (const char* rc = std::getenv("SLURM_RESTART_COUNT"); rc != nullptr && *rc != '\0') {
    jo.restart_count = std::atoi(rc);
  }
  jo.allocation_nodes = info.nodes;
  a.job = std::make_unique<supervise::SlurmJobControl>(*a.lib, processes, jo);
  if (verl) {
    supervise::JobControl* control = a.job.get();
    supervise::VerlRunnerOptions vo = verl_runner_options(*verl, r.config);
    vo.end_time = [control]() -> std::optional<double> {
      auto end = control->end_time();
      return end.ok() ? end.value() : std::nullopt;
    };
    vo.nodes = info.nodes;
    a.runner = std::make_unique<supervise::VerlRunner>(
        std::make_unique<supervise::LocalRunner>(false), std::move(vo));
  } else {
    supervise::SrunOptions so;
    so.srun = srun;
    so.cpus_per_task = r.spec.cpus_per_task;
    so.allocation_nodes = info.nodes;
    a.runner = std::make_unique<supervise::SrunRunner>(so);
  }
  std::string nodes_text;
  for (const auto& n : nodes) nodes_text += (nodes_text.empty() ? "" : ",") + n;
  const auto setup_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  std::fprintf(stderr, "grpo-launch supervise: job %u (restart %d) on %s, setup %lld ms\n", job_id,
               jo.restart_count, nodes_text.c_str(), static_cast<long long>(setup_ms));
  return core::ok_status();
}

// What a node health check before every (re)start looks for (docs/supervisor.md, "Node health").
core::Result<supervise::HealthSpec> health_spec(const RunDir& r) {
  supervise::HealthSpec h;
  h.run_dir = r.dir;
  h.min_free_bytes = 2 * supervise::newest_checkpoint_bytes(r.dir);
  h.gpus = r.config.health_gpus;
  if (!r.config.health_check.empty()) {
    GRPO_TRY(h.command, core::split_command_line(r.config.health_check));
  }
  return h;
}

// Under Slurm: one srun step over `nodes`, one `grpo-launch health-check` task each; their
// failed checks.
core::Result<std::vector<supervise::HealthFinding>> srun_health_check(
    const RunDir& r, const std::string& srun, process::ProcessRunner& processes,
    const std::vector<std::string>& nodes) {
  GRPO_TRY(const supervise::HealthSpec h, health_spec(r));
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return core::make_error(core::ErrorKind::kIo, "/proc/self/exe: " + ec.message());
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  process::CommandSpec c;
  c.argv = {srun,
            "--nodes=" + std::to_string(nodes.size()),
            "--ntasks=" + std::to_string(nodes.size()),
            "--ntasks-per-node=1",
            "--nodelist=" + list,
            "--label",
            "--overlap",
            "--kill-on-bad-exit=0",
            self.string(),
            "health-check",
            "--run-dir",
            r.dir.string(),
            "--min-free-bytes",
            std::to_string(h.min_free_bytes)};
  if (h.gpus) c.argv.push_back("--gpus");
  if (!r.config.health_check.empty()) {
    c.argv.push_back("--command");
    c.argv.push_back(r.config.health_check);
  }
  c.err = process::Stream::kCapture;
  c.timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>((h.command_timeout_s + 60.0) * 1000));
  GRPO_TRY(const process::Completion done, processes.run(c));
  std::vector<std::string> lines;
  for (const auto line : core::split(done.out, '\n')) lines.emplace_back(line);
  return supervise::read_health_answers(nodes, lines);
}

// The supervisor's progress and health checks: a verl run's own checkpoints (global_step_N,
// latest_checkpointed_iteration.txt) as its progress, and node health before every (re)start,
// here in-process or under Slurm through srun_health_check. `r` and `processes` must outlive
// `deps`.
void add_progress_and_health(supervise::SupervisorDeps& deps, const RunDir& r,
                             const std::optional<supervise::VerlRunInfo>& verl, bool local,
                             const std::string& srun, process::ProcessRunner& processes) {
  if (verl) {
    // Only the run's own: a tracker written before the run was submitted is another run's.
    const fs::path dir = verl->checkpoint_dir;
    const double since = verl->submitted;
    deps.newest_checkpoint = [dir, since]() {
      return supervise::newest_verl_checkpoint(dir, since);
    };
  }
  if (local) {
    deps.health = [&r, &processes](const std::vector<std::string>& nodes)
        -> core::Result<std::vector<supervise::HealthFinding>> {
      GRPO_TRY(const supervise::HealthSpec h, health_spec(r));
      return supervise::check_node(nodes.empty() ? "localhost" : nodes.front(), h,
                                   supervise::system_probes(), processes);
    };
  } else {
    deps.health = [&r, &processes, srun](const std::vector<std::string>& nodes) {
      return srun_health_check(r, srun, processes, nodes);
    };
  }
}

// Runs the supervisor to the end and says on stderr how the run ended; returns its exit code.
int run_supervisor(supervise::SupervisorOptions o, supervise::SupervisorDeps deps) {
  auto sup = supervise::Supervisor::open(std::move(o), std::move(deps));
  if (!sup.ok()) return fail(sup.error());
  auto code = sup.value()->run();
  if (!code.ok()) return fail(code.error());
  const auto& s = sup.value()->summary();
  std::fprintf(stderr, "grpo-launch: run %s at step %lld of %lld, %d restart(s); exit %d\n",
               std::string(supervise::to_string(s.state)).c_str(),
               static_cast<long long>(s.last_step), static_cast<long long>(s.total_steps),
               s.restarts, code.value());
  return code.value();
}

int supervise_dir(const GlobalArgs& global, const std::string& run_dir, bool local,
                  const std::string& srun) {
  const auto t0 = std::chrono::steady_clock::now();
  // Signals first: a USR2 or TERM during the setup below must not kill us silently. A rank
  // that died between our check and a write to its pipe must not kill us either.
  ::signal(SIGPIPE, SIG_IGN);
  auto signals = process::ProcessSignals::install();
  if (!signals.ok()) return fail(signals.error());
  auto loaded = load_run_dir(run_dir);
  if (!loaded.ok()) return fail(loaded.error());
  RunDir& r = loaded.value();

  supervise::ConsoleStatus status(r.dir, r.spec.run_id, ::isatty(STDOUT_FILENO) == 1, stdout);
  supervise::install_logger(log_level(global), &status);
  supervise::SupervisorOptions o = supervisor_options(r);
  supervise::SystemClock clock;
  // A verl run: one process per attempt, verl-attempt.sh on this host (the Ray head), which
  // starts Ray on the allocation itself.
  auto verl_info = read_verl_info(r.dir);
  if (!verl_info.ok()) return fail(verl_info.error());
  const std::optional<supervise::VerlRunInfo>& verl = verl_info.value();
  if (verl) {
    o.nodes = 1;
    o.ranks_per_node = 1;
    o.exclude.clear();
  }

  Attempts a;
  process::PosixProcessRunner processes;
  if (local) {
    a = local_attempts(r, verl, o);
  } else if (auto st = slurm_attempts(r, srun, verl, processes, t0, a); !st.ok()) {
    return fail(st.error());
  }
  // --export-hf: `grpo-launch export`'s code, the run's model looked up on --profile-dir too.
  app::HfRunExporter exporter(global.profile_dirs, [](const std::string& warning) {
    spdlog::warn("hf export: {}", warning);
  });
  supervise::SupervisorDeps deps{*a.runner, clock, *signals.value(), *a.job, status,
                                 {},        {},    &exporter};
  add_progress_and_health(deps, r, verl, local, srun, processes);
  return run_supervisor(std::move(o), std::move(deps));
}

}  // namespace

int cmd_health_check(const HealthCheckArgs& args) {
  std::string node = "localhost";
  if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0') {
    node = n;
  } else {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') node = host;
  }
  supervise::HealthSpec h;
  h.run_dir = args.run_dir;
  h.min_free_bytes = args.min_free_bytes;
  h.gpus = args.gpus;
  if (!args.command.empty()) {
    auto words = core::split_command_line(args.command);
    if (!words.ok()) return fail(words.error());
    h.command = std::move(words).value();
  }
  process::PosixProcessRunner processes;
  const auto found = supervise::check_node(node, h, supervise::system_probes(), processes);
  for (const auto& f : found) std::cout << supervise::finding_line(f) << "\n";
  std::cout << supervise::done_line(node, found.empty()) << std::endl;
  return found.empty() ? kExitOk : kExitFindings;
}

int cmd_supervise(const GlobalArgs& global, const SuperviseArgs& args) {
  const char* job = std::getenv("SLURM_JOB_ID");
  const bool local = args.local || job == nullptr || *job == '\0';
  return supervise_dir(global, args.run_dir, local, args.srun);
}

int cmd_run(const GlobalArgs& global, const LaunchArgs& given) {
  const LaunchArgs args = app::split_trainer_sets(given);
  auto built = app::build_launch_plan(global.profile_dirs, args, print_warning);
  if (!built.ok()) return fail(built.error());
  if (!core::plan_ok(built.value())) {
    std::cout << core::render_summary(built.value());
    print_error("the plan is not runnable (see the diagnostics above); nothing was started");
    return kExitFindings;
  }
  auto prepared = app::prepare(global.profile_dirs, args, std::move(built).value(), false);
  if (!prepared.ok()) return fail(prepared.error());
  const app::Prepared& p = prepared.value();
  if (!p.unsupported_layout.empty()) {
    print_error(p.unsupported_layout + "; nothing was started");
    return kExitInput;
  }
  if (auto st = io::create_dir_atomic(p.run_dir, app::run_dir_files(p)); !st.ok()) {
    auto e = st.error();
    std::error_code ec;
    if (fs::exists(fs::path(p.run_dir) / core::run_dir::kEvents, ec)) {
      e.message += "; continue that run with: grpo-launch supervise --run-dir " +
                   core::shell_quote(p.run_dir);
    }
    return fail(e);
  }
  std::cout << "Run directory: " << p.run_dir << "\n"
            << p.plan.model.name << " on " << p.plan.cluster.name << ": " << p.run.world_size()
            << " rank(s), " << p.supervisor.total_steps
            << " steps; follow it with: grpo-launch status " << core::shell_quote(p.run_dir) << "\n"
            << std::flush;
  return supervise_dir(global, p.run_dir, true, "srun");
}

}  // namespace grpo::cli
