// The verl launch use case (verl_launch.h, docs/verl.md).
#include "grpo/app/verl_launch.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "grpo/app/catalog.h"
#include "grpo/core/catalog.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/supervise/verl_engine.h"
#include "grpo/verl/verl_job.h"

namespace grpo::app {

namespace fs = std::filesystem;

core::Result<VerlPrepared> prepare_verl(const std::vector<std::string>& profile_dirs,
                                        const LaunchArgs& args, const core::CheckReport& report,
                                        const core::ParsedScript& parsed) {
  GRPO_TRY(core::VerlDriver driver, core::verl_driver(parsed));
  const core::CheckedRun& run = report.runs.front();
  const io::DirectorySourceProvider provider = catalog(profile_dirs);
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
  const auto [stamp, iso] = utc_now();
  const std::string name = fs::path(args.script).stem().string();
  GRPO_TRY(core::SbatchRunOptions opts,
           run_options(args.run_dir, "verl-" + core::sanitize_name(name) + "-" + stamp));
  p.run_dir = opts.run_dir;
  const std::string run_id = opts.run_id;
  std::error_code ec;
  const int nodes = std::max(1, run.nodes);
  GRPO_TRY(const core::SbatchView view,
           core::make_verl_sbatch_view(driver, profile, nodes, run.gpus_per_node, name, opts));
  GRPO_TRY(p.script, render_batch_script(args.template_file, view));
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
  supervise::SupervisorConfig sc = supervisor_config(external, plan);
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

}  // namespace grpo::app
