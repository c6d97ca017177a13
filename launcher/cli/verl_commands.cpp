// grpo-launch render / submit --engine verl SCRIPT (docs/verl.md): an existing verl launch script
// run inside the allocation under the supervisor. `check` must pass first; then the run directory
// holds the batch script (templates/sbatch.mustache, one task per node), verl-attempt.sh (Ray and
// the driver, core/verl_job.h) and verl.json (what supervise needs to know).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/core/catalog.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/job/run_spec.h"
#include "grpo/render/sbatch_render.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/supervise/verl_engine.h"
#include "grpo/verl/checker.h"
#include "grpo/verl/verl_job.h"
#include "launch_common.h"
#include "verl_commands.h"

namespace grpo::cli {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

core::Result<std::string> read_sourced(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error(ErrorKind::kNotFound, "no such file: " + path);
  return io::read_file(path, 4u << 20);
}

struct VerlPrepared {
  std::string run_dir;
  std::map<std::string, std::string> files;
  std::string script;  // job.sbatch
  core::RunSpec run;
  std::vector<std::string> notes;  // what submit changed in the driver's overrides
};

CheckArgs check_args_for(const LaunchArgs& args) {
  CheckArgs c;
  c.files = {args.script};
  c.profile = args.plan.profile;
  c.model = args.plan.model;
  c.sets = args.plan.sets;
  c.engines = args.plan.engines;
  return c;
}

// `check` of the script, silently; nullopt when it passes (no errors), else check's exit code
// after printing its report as `grpo-launch check` would.
std::optional<int> check_first(const GlobalArgs& global, const LaunchArgs& args, bool submit,
                               core::CheckReport* report, core::ParsedScript* parsed) {
  const CheckArgs ca = check_args_for(args);
  const io::DirectorySourceProvider provider = app::catalog(global.profile_dirs);
  auto schema = io::load_config_schema(io::executable_dir());
  if (!schema.ok()) return cmd_check(global, ca);
  core::CheckOptions options;
  options.profile = ca.profile;
  options.model = ca.model;
  if (!ca.engines.empty()) {
    auto engines = core::parse_engine_versions(ca.engines);
    if (!engines.ok()) return cmd_check(global, ca);
    options.engines = engines.value();
  }
  for (const auto& s : ca.sets) {
    auto o = core::parse_override(s);
    if (!o.ok()) return cmd_check(global, ca);
    options.sets.push_back(std::move(o).value());
  }
  auto text = io::read_file(args.script, 4u << 20);
  if (!text.ok()) return cmd_check(global, ca);
  core::ShellReadOptions read_options;
  read_options.read_file = read_sourced;
  // The job runs what the script means for this user, here: $HOME, $USER and $PWD are this
  // process's (`check` alone reads them as /root, root and .).
  for (const char* name : {"HOME", "USER", "PWD"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      read_options.environment[name] = v;
    }
  }
  auto script = core::read_shell_script(text.value(), args.script, read_options);
  if (!script.ok()) return cmd_check(global, ca);
  auto r = core::check_script(script.value(), schema.value(), provider, options);
  if (!r.ok() || r->errors() > 0) {
    const int code = cmd_check(global, ca);
    print_error("`grpo-launch check " + core::shell_quote(args.script) +
                "` found errors; nothing was " + (submit ? "submitted" : "rendered"));
    return code == kExitOk ? kExitFindings : code;
  }
  *report = std::move(r).value();
  *parsed = std::move(script).value();
  return std::nullopt;
}

core::Result<VerlPrepared> prepare_verl(const GlobalArgs& global, const LaunchArgs& args,
                                        const core::CheckReport& report,
                                        const core::ParsedScript& parsed) {
  GRPO_TRY(core::VerlDriver driver, core::verl_driver(parsed));
  const core::CheckedRun& run = report.runs.front();
  const io::DirectorySourceProvider provider = app::catalog(global.profile_dirs);
  GRPO_TRY(const core::ClusterProfile profile,
           core::load_cluster(provider, args.plan.profile.empty() ? run.profile : args.plan.profile,
                              [&] {
                                std::vector<core::Override> sets;
                                for (const auto& s : args.plan.sets) {
                                  if (auto o = core::parse_override(s); o.ok())
                                    sets.push_back(o.value());
                                }
                                return sets;
                              }()));
  VerlPrepared p;
  const auto [stamp, iso] = app::utc_now();
  const std::string name = fs::path(args.script).stem().string();
  GRPO_TRY(core::SbatchRunOptions opts,
           app::run_options(args.run_dir, "verl-" + core::sanitize_name(name) + "-" + stamp));
  p.run_dir = opts.run_dir;
  const std::string run_id = opts.run_id;
  std::error_code ec;
  const int nodes = std::max(1, run.nodes);
  GRPO_TRY(const core::SbatchView view,
           core::make_verl_sbatch_view(driver, profile, nodes, run.gpus_per_node, name, opts));
  GRPO_TRY(const std::string tmpl, app::load_sbatch_template(args.template_file));
  GRPO_TRY(p.script,
           render::render_sbatch(
               tmpl, view, args.template_file.empty() ? "sbatch.mustache" : args.template_file));
  // verl's checkpoints: trainer.default_local_dir (relative to the job's working directory,
  // which is this one), else <run_dir>/checkpoints.
  std::string ckpt = p.run_dir + "/" + std::string(core::run_dir::kCheckpoints);
  if (!driver.checkpoint_dir.empty()) {
    ckpt = driver.checkpoint_dir.find("${") != std::string::npos
               ? std::string()  // a Hydra interpolation: not known here
               : fs::absolute(driver.checkpoint_dir, ec).lexically_normal().string();
  }
  core::VerlAttemptOptions ao;
  ao.version = GRPO_VERSION;
  ao.run_dir = p.run_dir;
  ao.script = args.script;
  ao.nodes = nodes;
  ao.gpus_per_node = run.gpus_per_node;
  ao.checkpoint_dir = p.run_dir + "/" + std::string(core::run_dir::kCheckpoints);
  GRPO_TRY(const std::string attempt, core::verl_attempt_script(driver, ao));

  core::RunSpec& r = p.run;
  r.run_id = run_id;
  r.created_utc = iso;
  r.profile = profile.name;
  r.model = run.model.empty() ? std::string("verl") : run.model;
  r.version = GRPO_VERSION;
  r.nodes = nodes;
  r.ranks_per_node = 1;
  r.trainer_command = {"/bin/bash", p.run_dir + "/" + std::string(core::run_dir::kVerlAttempt)};

  LaunchArgs external = args;
  external.trainer_cmd = "verl";  // the external-trainer contract
  core::Plan plan;
  plan.cluster = profile;
  plan.rank_map.nodes = nodes;
  supervise::SupervisorConfig sc = app::supervisor_config(external, plan);
  sc.health_gpus = sc.health_gpus && run.gpus_per_node > 0;
  sc.total_steps = driver.total_steps;
  // verl's start-up (Ray, model loading, the first rollout) is long: 30 min unless given.
  if (args.supervisor.startup_timeout_s == 300) sc.hang.startup_s = 1800;
  // Until its first step line verl prints nothing the supervisor reads: the start-up limit
  // (not --hang-timeout) applies to that silence; from then on the steps' intervals do.
  sc.hang.checkpoint_progress_s = sc.hang.startup_s;
  // verl saves before the time it is given (docs/verl.md "The save before the end"), prints
  // its steps (console is in trainer.logger), and its attempt script stops Ray on SIGTERM.
  sc.saves_before_end = true;
  sc.reports_steps = true;
  sc.stop_grace_s = std::max(sc.stop_grace_s, 30.0);

  supervise::VerlRunInfo info;
  info.script = fs::absolute(args.script, ec).lexically_normal().string();
  info.checkpoint_dir = ckpt;
  info.nodes = nodes;
  info.gpus_per_node = run.gpus_per_node;
  info.resume_mode = driver.resume_mode;
  info.hdfs = driver.hdfs;
  info.submitted =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  p.notes = driver.notes;

  nlohmann::json env_json = {{"job", nlohmann::json::object()}, {"nodes", nlohmann::json::array()}};
  for (const auto& [k, v] : driver.env) env_json["job"][k] = v;
  nlohmann::json ranks = nlohmann::json::array();
  for (int i = 0; i < nodes; ++i)
    ranks.push_back({{"node_rank", i}, {"ray", i == 0 ? "head" : "worker"}});
  nlohmann::json rankmap = {{"schema", "grpo-launch/verl-nodes/v1"},
                            {"nodes", nodes},
                            {"ranks_per_node", 1},
                            {"ranks", ranks}};
  p.files = {
      {std::string(core::run_dir::kRunSpec), core::json_text(core::run_spec_to_json(r), 2) + "\n"},
      {std::string(core::run_dir::kEnv), core::json_text(env_json, 2) + "\n"},
      {std::string(core::run_dir::kRankMap), core::json_text(rankmap, 2) + "\n"},
      {std::string(core::run_dir::kSupervisor),
       core::json_text(supervise::supervisor_config_to_json(sc), 2) + "\n"},
      {std::string(core::run_dir::kVerlInfo),
       core::json_text(supervise::verl_run_info_to_json(info), 2) + "\n"},
      {std::string(core::run_dir::kVerlAttempt), attempt},
      {std::string(core::run_dir::kBatchScript), p.script},
  };
  return p;
}

}  // namespace

int cmd_verl(const GlobalArgs& global, const LaunchArgs& args, bool submit) {
  if (args.script.empty()) {
    print_error("--engine verl needs the verl launch script: grpo-launch " +
                std::string(submit ? "submit" : "render") + " --engine verl SCRIPT");
    return kExitUsage;
  }
  if (!args.trainer_cmd.empty() || !args.faults.empty() || args.supervisor.export_hf) {
    print_error(
        "--engine verl runs the script's verl command: --trainer-cmd, --fault and --export-hf "
        "do not apply");
    return kExitUsage;
  }
  core::CheckReport report;
  core::ParsedScript parsed;
  if (auto code = check_first(global, args, submit, &report, &parsed)) return *code;
  auto prepared = prepare_verl(global, args, report, parsed);
  if (!prepared.ok()) return fail(prepared.error());
  const VerlPrepared& p = prepared.value();
  for (const auto& n : p.notes) std::cerr << "grpo-launch: note: " << n << "\n";
  if (!submit || args.plan.dry_run) {
    std::cout << p.script;
    if (args.plan.dry_run)
      std::cout << "\n# verl-attempt.sh\n" << p.files.at(std::string(core::run_dir::kVerlAttempt));
    return kExitOk;
  }
  auto id = app::submit_run_dir(
      p.run_dir, p.files,
      {std::string(core::run_dir::kBatchScript), std::string(core::run_dir::kVerlAttempt)},
      args.sbatch_timeout_s, p.run.created_utc, print_warning);
  if (!id.ok()) return fail(id.error());
  std::cout << "Submitted batch job " << *id << ": verl (" << args.script << "), " << p.run.nodes
            << " node(s), Ray under grpo-launch supervise\n";
  print_follow(p.run_dir, *id);
  return kExitOk;
}

}  // namespace grpo::cli
