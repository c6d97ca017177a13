// Preparing a run for the launch use cases (launch.h): its run.json, trainer command (the
// embedded grpo-trainer with the plan's settings, or --trainer-cmd), supervisor settings with
// the layouts to continue at after losing nodes, the batch script, and the run directory's files.
#include <algorithm>
#include <limits>

#include "grpo/app/catalog.h"
#include "grpo/app/launch.h"
#include "grpo/core/catalog.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/verl_keys.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/job/trainer_args.h"
#include "grpo/plan/plan_render.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/supervise/phase_timeouts.h"

namespace grpo::app {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

bool looks_like_file(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0);
}

// The new run directory's options: --run-dir, or runs/<model>-<profile>-<stamp> under the
// current one, with --spare-nodes. Errors: those of run_options; --spare-nodes without a batch
// script (`run` starts no job).
core::Result<core::SbatchRunOptions> new_run_options(const LaunchArgs& args, const core::Plan& plan,
                                                     const std::string& stamp, bool render_script) {
  GRPO_TRY(core::SbatchRunOptions opts,
           run_options(args.run_dir, core::sanitize_name(plan.model.name) + "-" +
                                         core::sanitize_name(plan.cluster.name) + "-" + stamp));
  if (args.supervisor.spare_nodes > 0 && !render_script) {
    return make_error(ErrorKind::kInvalidValue,
                      "--spare-nodes: spares are nodes the Slurm job asks for; `run` starts no "
                      "job (use submit, or an allocation with more nodes than the plan)");
  }
  opts.spare_nodes = args.supervisor.spare_nodes;
  return opts;
}

// run.json without its trainer command: the run's identity and shape.
core::RunSpec run_spec_without_trainer(const core::Plan& plan, const std::string& run_id,
                                       const std::string& created_utc,
                                       const core::SbatchView& view) {
  core::RunSpec run;
  run.run_id = run_id;
  run.created_utc = created_utc;
  run.profile = plan.cluster.name;
  run.model = plan.model.name;
  run.version = GRPO_VERSION;
  run.nodes = plan.rank_map.nodes;
  run.ranks_per_node = plan.rank_map.ranks_per_node;
  run.cpus_per_task = view.cpus_per_task.empty() ? 0 : std::stoi(view.cpus_per_task);
  return run;
}

// --trainer-cmd split into words. Errors: trainer settings, faults or --export-hf with it (they
// are the embedded grpo-trainer's), its syntax.
core::Result<std::vector<std::string>> external_trainer_command(const LaunchArgs& args) {
  if (!args.trainer_sets.empty() || !args.faults.empty()) {
    return make_error(
        ErrorKind::kInvalidValue,
        "--set " +
            (args.trainer_sets.empty() ? std::string("--fault") : args.trainer_sets.front()) +
            ": trainer settings and faults apply to the embedded grpo-trainer, "
            "not to --trainer-cmd");
  }
  if (args.supervisor.export_hf) {
    return make_error(ErrorKind::kInvalidValue,
                      "--export-hf exports grpo-trainer's checkpoints; --trainer-cmd programs "
                      "write their own");
  }
  auto argv = core::split_command_line(args.trainer_cmd);
  if (!argv.ok()) {
    return make_error(argv.error().kind, "--trainer-cmd: " + argv.error().message);
  }
  return std::move(argv).value();
}

// Errors: a trainer --set of a layout key, which the planner's own --set key sets.
core::Status check_no_layout_sets(const std::vector<std::string>& trainer_sets) {
  for (const auto& kv : trainer_sets) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    if (const std::string layout_key = core::layout_key_for_trainer_key(key); !layout_key.empty()) {
      return make_error(ErrorKind::kInvalidValue,
                        "--set " + kv + ": set the layout with --set " + layout_key + "=" +
                            (eq == std::string::npos ? "" : kv.substr(eq + 1)) +
                            " (the planner checks it and passes it to the trainer)");
    }
  }
  return core::ok_status();
}

// grpo-trainer's --model: a file made absolute, a catalog model's file, else the name as given.
std::string trainer_model(const std::vector<std::string>& profile_dirs, const std::string& given) {
  std::string model = given;
  if (looks_like_file(model)) {
    std::error_code ec;
    model = fs::absolute(model, ec).lexically_normal().string();
  } else {
    if (auto path = catalog(profile_dirs).locate(core::CatalogKind::kModel, model))
      model = path->string();
  }
  return model;
}

void append_each(std::vector<std::string>& argv, const char* flag,
                 const std::vector<std::string>& values) {
  for (const auto& v : values) {
    argv.push_back(flag);
    argv.push_back(v);
  }
}

// The embedded grpo-trainer (next to grpo-launch, else on PATH) with the plan's workload and
// layout, then the user's trainer settings (the trainer applies --set in order: the last one
// wins), then injected faults.
std::vector<std::string> embedded_trainer_command(const std::vector<std::string>& profile_dirs,
                                                  const LaunchArgs& args, const core::Plan& plan,
                                                  const std::string& run_dir) {
  const fs::path next_to = io::executable_dir() / "grpo-trainer";
  const std::string model = trainer_model(profile_dirs, args.plan.model);
  std::error_code ec;
  std::vector<std::string> argv = {fs::exists(next_to, ec) ? next_to.string() : "grpo-trainer",
                                   "--model", model, "--run-dir", run_dir};
  append_each(argv, "--set", core::trainer_settings(plan));
  append_each(argv, "--set", core::trainer_layout_settings(plan.best.layout));
  append_each(argv, "--set", args.trainer_sets);
  append_each(argv, "--fault", args.faults);
  return argv;
}

// Why the embedded grpo-trainer cannot run the plan (its layout, device or dtype); empty when it
// can.
std::string embedded_trainer_refusal(const core::Plan& plan) {
  if (const std::string why = core::embedded_trainer_unsupported(
          plan.best.layout.dims, plan.best.layout.sequence_parallel, plan.model);
      !why.empty()) {
    return "the plan's layout cannot run in the embedded grpo-trainer: " + why;
  }
  if (const std::string no = core::embedded_trainer_unsupported_device(plan.cluster); !no.empty()) {
    return no;
  }
  return core::embedded_trainer_unsupported_dtype(plan.workload);
}

// After losing nodes the embedded trainer continues at the layout the planner picks for the
// nodes left (its checkpoints load at any layout): plans each smaller node count down to
// c.min_nodes now, into c.replans (the node counts it cannot run at are left out).
void add_replans(const std::vector<std::string>& profile_dirs, const LaunchArgs& args,
                 const core::Plan& plan, supervise::SupervisorConfig& c) {
  for (int n = plan.rank_map.nodes - 1; n >= std::max(1, c.min_nodes); --n) {
    PlanArgs fewer = args.plan;
    fewer.sets.push_back("nodes=" + std::to_string(n));
    auto replanned = build_plan(profile_dirs, fewer, true);
    if (!replanned.ok() || !core::plan_ok(*replanned) ||
        !core::embedded_trainer_unsupported(replanned->best.layout.dims,
                                            replanned->best.layout.sequence_parallel,
                                            replanned->model)
             .empty()) {
      continue;
    }
    c.replans[n] = core::trainer_layout_settings(replanned->best.layout);
  }
}

}  // namespace

core::Result<Prepared> prepare(const std::vector<std::string>& profile_dirs, const LaunchArgs& args,
                               core::Plan plan, bool render_script) {
  Prepared p;
  p.plan = std::move(plan);
  const auto [stamp, iso] = utc_now();
  GRPO_TRY(const core::SbatchRunOptions opts, new_run_options(args, p.plan, stamp, render_script));
  p.run_dir = opts.run_dir;
  GRPO_TRY(const core::SbatchView view, core::make_sbatch_view(p.plan, opts));
  if (render_script) {
    GRPO_TRY(p.script, render_batch_script(args.template_file, view));
  }

  // What supervise runs: --trainer-cmd, else the embedded grpo-trainer.
  p.run = run_spec_without_trainer(p.plan, opts.run_id, iso, view);
  p.trainer_sets = args.trainer_sets;
  if (!args.trainer_cmd.empty()) {
    GRPO_TRY(p.run.trainer_command, external_trainer_command(args));
  } else {
    GRPO_TRY_STATUS(check_no_layout_sets(args.trainer_sets));
    p.run.trainer_command = embedded_trainer_command(profile_dirs, args, p.plan, p.run_dir);
    p.unsupported_layout = embedded_trainer_refusal(p.plan);
  }
  p.supervisor = supervisor_config(args, p.plan);
  if (args.trainer_cmd.empty()) add_replans(profile_dirs, args, p.plan, p.supervisor);
  return p;
}

std::map<std::string, std::string> run_dir_files(const Prepared& p) {
  std::map<std::string, std::string> files = {
      {std::string(core::run_dir::kPlan), core::json_text(core::plan_to_json(p.plan), 2) + "\n"},
      {std::string(core::run_dir::kRankMap),
       core::json_text(core::rank_map_to_json(p.plan.rank_map), 2) + "\n"},
      {std::string(core::run_dir::kEnv),
       core::json_text(core::env_to_json(p.plan.env, p.plan.rank_map), 2) + "\n"},
      {std::string(core::run_dir::kRunSpec),
       core::json_text(core::run_spec_to_json(p.run), 2) + "\n"},
      {std::string(core::run_dir::kSupervisor),
       core::json_text(supervise::supervisor_config_to_json(p.supervisor), 2) + "\n"},
  };
  if (!p.script.empty()) files[std::string(core::run_dir::kBatchScript)] = p.script;
  // The ranks' rendezvous secret (0600 like every file here; grpo-trainer reads it from
  // --run-dir; docs/security.md).
  files[io::kRendezvousSecretFile] = io::new_secret() + "\n";
  return files;
}

supervise::SupervisorConfig supervisor_config(const LaunchArgs& args, const core::Plan& plan) {
  supervise::SupervisorConfig c;
  const SupervisorFlags& f = args.supervisor;
  const bool embedded = args.trainer_cmd.empty();
  c.contract =
      embedded ? supervise::TrainerContract::kEmbedded : supervise::TrainerContract::kExternal;
  c.budget.max_restarts = f.max_restarts;
  c.budget.backoff_base_s = f.backoff_s;
  c.budget.backoff_max_s = f.backoff_max_s;
  c.budget.no_progress_restarts = f.no_progress_restarts;
  if (f.hang_timeout_s > 0) c.hang.timeout_s = f.hang_timeout_s;
  c.hang.startup_s = f.startup_timeout_s;
  for (const std::string& t : f.phase_timeouts) {
    if (auto p = supervise::parse_phase_timeout(t); p.ok())
      c.hang.phases.fixed[p->first] = p->second;
  }
  c.stop_grace_s = f.stop_grace_s;
  c.end_margin_s = f.end_margin_s;
  c.health_check = f.health_check;
  c.export_hf = f.export_hf && embedded;
  c.health_gpus = plan.cluster.device.vendor == core::DeviceVendor::kNvidia;
  c.mtbf_prior_s = plan.cluster.node_mtbf_hours * 3600.0 / std::max(1, plan.rank_map.nodes);
  if (embedded) {
    // The supervisor passes the micro batch after every other --set (OOM remediation changes
    // it), so it starts from the user's --set of the key when there is one: the user's setting
    // wins over the plan's. One that is not a positive integer is the trainer's to refuse, and
    // nothing is passed after it.
    c.micro_batch = plan.best.layout.micro_batch;
    if (const auto user = core::last_trainer_set(args.trainer_sets, supervise::kMicroBatchKey)) {
      const auto v = core::whole_number(*user);
      c.micro_batch = v && *v >= 1 && *v <= std::numeric_limits<int>::max()
                          ? std::optional<int>(static_cast<int>(*v))
                          : std::nullopt;
    }
    c.offload_supported = false;  // grpo-trainer has no offload
    // Pure data parallelism: one node still runs it when the batch sizes divide.
    c.min_nodes = f.min_nodes > 0 ? f.min_nodes : 1;
    c.divisible_by = core::batch_divisors(plan, args.trainer_sets);
    c.world_unit = core::layout_world_unit(plan.best.layout.dims);
    c.total_steps = total_steps(args.trainer_sets);
  } else {
    c.min_nodes = f.min_nodes;  // 0: every node of the plan
  }
  return c;
}

std::int64_t total_steps(const std::vector<std::string>& trainer_sets) {
  // grpo-trainer's defaults (docs/trainer-config.md): 300 SFT + 100 GRPO steps.
  std::int64_t sft = 300, grpo = 100;
  if (const auto v = core::last_trainer_set(trainer_sets, core::verl_key::kSftWarmupSteps)) {
    sft = core::whole_number(*v).value_or(sft);
  }
  if (const auto v = core::last_trainer_set(trainer_sets, core::verl_key::kTotalTrainingSteps)) {
    grpo = core::whole_number(*v).value_or(grpo);
  }
  return sft + grpo;
}

}  // namespace grpo::app
