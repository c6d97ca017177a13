// grpo-launch render / submit / supervise: the Slurm side of the CLI. Plans come from
// build_plan(); the script from core::make_sbatch_view + render::render_sbatch; sbatch, srun and
// libslurm through grpo_slurm's adapters.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string_view>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/core/catalog.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/verl_keys.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/job/job_step.h"
#include "grpo/job/run_spec.h"
#include "grpo/job/sbatch_script.h"
#include "grpo/job/trainer_args.h"
#include "grpo/plan/plan_render.h"
#include "grpo/process/process_runner.h"
#include "grpo/render/sbatch_render.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/slurm/allocation.h"
#include "grpo/slurm/sbatch.h"
#include "grpo/slurm/slurm_job.h"
#include "launch_common.h"
#include "verl_commands.h"

namespace grpo::cli {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

constexpr const char* kTemplateName = "sbatch.mustache";

core::Result<std::string> load_template(const LaunchArgs& args) {
  if (!args.template_file.empty()) return io::read_file(args.template_file);
  for (const auto& dir : io::template_search_path(io::executable_dir())) {
    std::error_code ec;
    if (fs::is_regular_file(dir / kTemplateName, ec)) return io::read_file(dir / kTemplateName);
  }
  return make_error(ErrorKind::kNotFound,
                    std::string("cannot find templates/") + kTemplateName +
                        " (looked in <prefix>/share/grpo-launch/templates next to the executable)");
}

bool looks_like_file(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0);
}

}  // namespace

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
                                         int sbatch_timeout_s, const std::string& created_utc) {
  GRPO_TRY_STATUS(io::create_dir_atomic(run_dir, files, executable));
  slurm::PosixProcessRunner runner;
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
    print_warning("job " + id + " was submitted but " + st.error().message);
  }
  return id;
}

void print_follow(const std::string& run_dir, const std::string& id) {
  std::cout << "Run directory: " << run_dir << "\n"
            << "Follow it:\n"
            << "  tail -f " << core::shell_quote(run_dir + "/slurm-" + id + ".out") << "\n"
            << "  squeue -j " << id << "\n"
            << "  grpo-launch status " << core::shell_quote(run_dir) << "\n";
}

core::Result<std::string> load_sbatch_template(const LaunchArgs& args) {
  return load_template(args);
}

namespace {

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
std::string trainer_model(const GlobalArgs& global, const std::string& given) {
  std::string model = given;
  if (looks_like_file(model)) {
    std::error_code ec;
    model = fs::absolute(model, ec).lexically_normal().string();
  } else {
    io::DirectorySourceProvider provider(
        io::profile_search_path(io::search_inputs_from_environment(global.profile_dirs)));
    if (auto path = provider.locate(core::CatalogKind::kModel, model)) model = path->string();
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
std::vector<std::string> embedded_trainer_command(const GlobalArgs& global, const LaunchArgs& args,
                                                  const core::Plan& plan,
                                                  const std::string& run_dir) {
  const fs::path next_to = io::executable_dir() / "grpo-trainer";
  const std::string model = trainer_model(global, args.plan.model);
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
void add_replans(const GlobalArgs& global, const LaunchArgs& args, const core::Plan& plan,
                 supervise::SupervisorConfig& c) {
  for (int n = plan.rank_map.nodes - 1; n >= std::max(1, c.min_nodes); --n) {
    PlanArgs fewer = args.plan;
    fewer.sets.push_back("nodes=" + std::to_string(n));
    auto replanned = build_plan(global, fewer, true);
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

core::Result<Prepared> prepare(const GlobalArgs& global, const LaunchArgs& args, core::Plan plan,
                               bool render_script) {
  Prepared p;
  p.plan = std::move(plan);
  const auto [stamp, iso] = utc_now();
  GRPO_TRY(const core::SbatchRunOptions opts, new_run_options(args, p.plan, stamp, render_script));
  p.run_dir = opts.run_dir;
  GRPO_TRY(const core::SbatchView view, core::make_sbatch_view(p.plan, opts));
  if (render_script) {
    GRPO_TRY(const std::string tmpl, load_template(args));
    GRPO_TRY(p.script,
             render::render_sbatch(
                 tmpl, view, args.template_file.empty() ? kTemplateName : args.template_file));
  }

  // What supervise runs: --trainer-cmd, else the embedded grpo-trainer.
  p.run = run_spec_without_trainer(p.plan, opts.run_id, iso, view);
  p.trainer_sets = args.trainer_sets;
  if (!args.trainer_cmd.empty()) {
    GRPO_TRY(p.run.trainer_command, external_trainer_command(args));
  } else {
    GRPO_TRY_STATUS(check_no_layout_sets(args.trainer_sets));
    p.run.trainer_command = embedded_trainer_command(global, args, p.plan, p.run_dir);
    p.unsupported_layout = embedded_trainer_refusal(p.plan);
  }
  p.supervisor = supervisor_config(args, p.plan);
  if (args.trainer_cmd.empty()) add_replans(global, args, p.plan, p.supervisor);
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

LaunchArgs split_trainer_sets(const LaunchArgs& args) {
  LaunchArgs out = args;
  out.plan.sets.clear();
  for (const auto& s : args.plan.sets) {
    const auto eq = s.find('=');
    if (core::is_trainer_key(s.substr(0, eq))) {
      out.trainer_sets.push_back(s);
    } else {
      out.plan.sets.push_back(s);
    }
  }
  return out;
}

core::Result<core::Plan> build_launch_plan(const GlobalArgs& global, const LaunchArgs& args) {
  std::string note;
  GRPO_TRY(core::Plan plan, build_plan(global, args.plan, args.trainer_cmd.empty(), &note));
  if (!note.empty()) print_warning(note);
  return plan;
}

int cmd_render(const GlobalArgs& global, const LaunchArgs& given) {
  if (!given.engine.empty()) return cmd_verl(global, given, false);
  if (given.plan.profile.empty() || given.plan.model.empty()) {
    print_error("--profile and --model are required (or --engine verl SCRIPT); see --help");
    return kExitUsage;
  }
  if (!given.script.empty()) {
    print_error("unexpected argument " + core::shell_quote(given.script) +
                " (a verl script needs --engine verl)");
    return kExitUsage;
  }
  const LaunchArgs args = split_trainer_sets(given);
  auto built = build_launch_plan(global, args);
  if (!built.ok()) return fail(built.error());
  auto p = prepare(global, args, std::move(built).value(), true);
  if (!p.ok()) return fail(p.error());
  if (!p->unsupported_layout.empty()) print_warning(p->unsupported_layout);
  std::cout << p->script;
  return kExitOk;
}

int cmd_submit(const GlobalArgs& global, const LaunchArgs& given) {
  if (!given.engine.empty()) return cmd_verl(global, given, true);
  if (given.plan.profile.empty() || given.plan.model.empty()) {
    print_error("--profile and --model are required (or --engine verl SCRIPT); see --help");
    return kExitUsage;
  }
  if (!given.script.empty()) {
    print_error("unexpected argument " + core::shell_quote(given.script) +
                " (a verl script needs --engine verl)");
    return kExitUsage;
  }
  const LaunchArgs args = split_trainer_sets(given);
  auto built = build_launch_plan(global, args);
  if (!built.ok()) return fail(built.error());
  if (!core::plan_ok(built.value())) {
    if (args.plan.format == "json") {
      std::cout << core::json_text(core::plan_to_json(built.value()), 2) << "\n";
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
  auto prepared = prepare(global, args, std::move(built).value(), true);
  if (!prepared.ok()) return fail(prepared.error());
  Prepared& p = prepared.value();
  if (!p.unsupported_layout.empty()) {
    if (!args.plan.dry_run) {
      print_error(p.unsupported_layout + "; nothing was submitted");
      return kExitInput;
    }
    print_warning(p.unsupported_layout);
  }
  if (args.plan.dry_run) {
    if (args.plan.format == "json") {
      nlohmann::json j = {{"plan", core::plan_to_json(p.plan)}, {"sbatch", p.script}};
      std::cout << core::json_text(j, 2) << "\n";
    } else {
      std::cout << p.script;
    }
    return kExitOk;
  }

  auto id = submit_run_dir(p.run_dir, run_dir_files(p), {std::string(core::run_dir::kBatchScript)},
                           args.sbatch_timeout_s, p.run.created_utc);
  if (!id.ok()) return fail(id.error());
  std::cout << "Submitted batch job " << *id << ": " << p.plan.model.name << " on "
            << p.plan.cluster.name << ", " << p.run.nodes << " node(s) x " << p.run.ranks_per_node
            << " rank(s)\n";
  print_follow(p.run_dir, *id);
  return kExitOk;
}

}  // namespace grpo::cli
