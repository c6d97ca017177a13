// grpo-launch: plan, check, launch and supervise GRPO training. This file only wires the
// command line (CLI11) to commands.cpp; see docs/cli.md and docs/exit-codes.md.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include <ctime>
#include <fstream>

#include "cli_docs.h"
#include "commands.h"
#include "exit_codes.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/supervise/phase_timeouts.h"

namespace {

using grpo::cli::GlobalArgs;
using grpo::cli::PlanArgs;

void add_plan_options(CLI::App* app, PlanArgs& args, bool required) {
  auto* p = app->add_option("--profile,-p", args.profile, "Cluster profile name or .toml file");
  auto* m = app->add_option("--model,-m", args.model,
                            "Model name, .toml file, or Hugging Face model directory (a path "
                            "holding config.json; docs/hf-checkpoints.md)");
  if (required) {
    p->required();
    m->required();
  }
  app->add_option(
         "--set,-s", args.sets,
         "Override a profile field (device.memory_gib=40, grpo.rollout_n=8) or fix a layout "
         "setting (tp=4, pp=2, ep=8, micro_batch=2, rollout_tp=4, recompute=full, ...)")
      ->type_name("KEY=VALUE");
  app->add_option("--engines", args.engines,
                  "Engine versions whose rules apply (default verl=0.7,megatron=0.15,vllm=0.12, "
                  "what verl 0.7 pins)")
      ->type_name("verl=V,megatron=V,vllm=V");
  app->add_option("--format,-f", args.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  app->add_option("--alternatives", args.alternatives, "How many runner-up layouts to show")
      ->check(CLI::Range(0, 20));
}

void add_launch_options(CLI::App* app, grpo::cli::LaunchArgs& args) {
  app->add_option("--trainer-cmd", args.trainer_cmd,
                  "The program every rank runs, in shell syntax but run without a shell "
                  "(default: grpo-trainer --model M --run-dir D)")
      ->type_name("'CMD ARGS'");
  app->add_option("--run-dir", args.run_dir,
                  "Run directory to create (default ./runs/<model>-<profile>-<UTC time>)")
      ->type_name("DIR");
  app->add_option("--template", args.template_file,
                  "sbatch template (default: the installed templates/sbatch.mustache)")
      ->type_name("FILE");
  app->add_option("--sbatch-timeout", args.sbatch_timeout_s, "Seconds to wait for sbatch")
      ->check(CLI::Range(1, 3600));
}

// render / submit --engine verl SCRIPT (docs/verl.md).
void add_engine_options(CLI::App* app, grpo::cli::LaunchArgs& args) {
  app->add_option("--engine", args.engine,
                  "Run an existing verl launch script instead of a plan: `check` must pass, then "
                  "the job starts Ray on the allocation and verl's driver on the head node under "
                  "the supervisor (docs/verl.md); --profile gives the Slurm settings")
      ->check(CLI::IsMember({"verl"}));
  app->add_option("script", args.script, "The verl launch script (with --engine verl)")
      ->type_name("SCRIPT");
}

// The supervisor's settings (run, submit, the bare form): they go to <run_dir>/supervisor.json.
void add_supervisor_options(CLI::App* app, grpo::cli::LaunchArgs& args) {
  auto& f = args.supervisor;
  const char* group = "Supervisor";
  app->add_option("--fault", args.faults,
                  "Inject a fault into grpo-trainer (repeatable; docs/trainer.md), e.g. "
                  "crash@step=12,rank=1")
      ->type_name("SPEC")
      ->group(group);
  app->add_option("--max-restarts", f.max_restarts, "Restarts that failures may spend")
      ->check(CLI::Range(0, 1000))
      ->group(group);
  app->add_option("--backoff", f.backoff_s, "Seconds before the first restart (doubles)")
      ->check(CLI::Range(0.0, 3600.0))
      ->group(group);
  app->add_option("--backoff-max", f.backoff_max_s, "Longest delay between restarts (s)")
      ->check(CLI::Range(0.0, 86400.0))
      ->group(group);
  app->add_option("--no-progress-restarts", f.no_progress_restarts,
                  "Stop (exit 81) after this many restarts in a row without a new checkpoint")
      ->check(CLI::Range(1, 1000))
      ->group(group);
  app->add_option("--hang-timeout", f.hang_timeout_s,
                  "Seconds without a heartbeat that make a rank hung (default: from step times)")
      ->check(CLI::Range(0.1, 86400.0))
      ->group(group);
  app->add_option("--startup-timeout", f.startup_timeout_s,
                  "Least seconds a rank may take to its first step of an attempt")
      ->check(CLI::Range(1.0, 86400.0))
      ->group(group);
  app->add_option("--phase-timeout", f.phase_timeouts,
                  "Fix the hang timeout of one phase instead of calibrating it (repeatable; "
                  "startup, rollout, update, validation, checkpoint, between), e.g. rollout=600")
      ->type_name("PHASE=SECONDS")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            auto p = grpo::supervise::parse_phase_timeout(v);
            return p.ok() ? std::string() : p.error().message;
          },
          ""))
      ->group(group);
  app->add_option("--health-check", f.health_check,
                  "Run CMD on every node before every (re)start; exit non-zero = unhealthy "
                  "(Slurm's HealthCheckProgram contract; split like a shell, run without one)")
      ->type_name("CMD")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            auto words = grpo::core::split_command_line(v);
            if (!words.ok()) return words.error().message;
            return words->empty() ? std::string("empty command") : std::string();
          },
          ""))
      ->group(group);
  app->add_option("--stop-grace", f.stop_grace_s, "Seconds between SIGTERM and SIGKILL")
      ->check(CLI::Range(0.0, 3600.0))
      ->group(group);
  app->add_option("--end-margin", f.end_margin_s,
                  "Yield this many seconds before the job's end time (default: derived from the "
                  "step and checkpoint times; --engine verl: 180, the time verl is told to save "
                  "before)")
      ->check(CLI::Range(0.0, 86400.0))
      ->group(group);
  app->add_option("--min-nodes", f.min_nodes,
                  "Fewest nodes to continue on after losing nodes (default: 1 for grpo-trainer)")
      ->check(CLI::Range(0, 16384))
      ->group(group);
  app->add_option("--spare-nodes", f.spare_nodes,
                  "Hot spares: the job asks for N nodes more than the plan; a lost or unhealthy "
                  "node is replaced by a spare (same layout) before the run shrinks (submit)")
      ->check(CLI::Range(0, 16384))
      ->group(group);
  app->add_flag("--export-hf", f.export_hf,
                "When training succeeds, write the final checkpoint as a Hugging Face model "
                "into <run_dir>/hf (grpo-trainer only; exit 86 if that fails)")
      ->group(group);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    CLI::App app{"grpo-launch: plan, check, launch and supervise GRPO training on Slurm clusters",
                 "grpo-launch"};
    app.set_version_flag("--version,-V", std::string("grpo-launch ") + GRPO_VERSION);
    GlobalArgs global;
    app.add_option("--profile-dir", global.profile_dirs,
                   "Extra directory with clusters/ and models/ (searched first; repeatable)")
        ->type_name("DIR");
    app.add_option("--log-level", global.log_level,
                   "Log level on stderr (default: warn; info for run and supervise)")
        ->check(CLI::IsMember({"error", "warn", "info", "debug"}));

    grpo::cli::LaunchArgs bare;
    add_plan_options(&app, bare.plan, false);
    add_launch_options(&app, bare);
    add_supervisor_options(&app, bare);
    app.add_flag("--dry-run,-n", bare.plan.dry_run,
                 "Print the Parallel Config Summary and the batch script; submit nothing");
    app.footer(
        "Without a subcommand, --profile and --model plan a run and submit it to Slurm (the same "
        "as `submit`);\nwith --dry-run nothing is submitted.\n"
        "Exit codes: 0 ok, 1 findings (infeasible plan, errors found), 2 bad input, 64 usage,\n"
        "69 Slurm unreachable, 70 internal error, 73 cannot write output, 76 request refused;\n"
        "run / supervise: 75 requeued, 80 restart budget used up, 81 no progress, 82 not "
        "retryable,\n83 out of memory, 84 nodes lost, 85 disk full, 86 finished but the "
        "--export-hf "
        "export failed,\n130 interrupted.\n"
        "Profiles are searched in --profile-dir, $GRPO_LAUNCH_PROFILE_PATH, "
        "~/.config/grpo-launch/profiles,\n"
        "then the installed ones. See `grpo-launch profiles`.");

    PlanArgs plan_args;
    auto* plan = app.add_subcommand("plan", "Find a legal, fitting parallel layout and explain it");
    add_plan_options(plan, plan_args, true);
    plan->add_option("--emit", plan_args.emit,
                     "Write the plan as a launch script of that engine instead of the summary: "
                     "verl (python3 -m verl.trainer.main_ppo with the plan's layout, batch sizes, "
                     "offload, recompute, dtype, rollout and environment under verl's own keys; "
                     "Megatron, or FSDP with --set backend=fsdp; docs/verl-emit.md)")
        ->check(CLI::IsMember({"verl"}))
        ->type_name("ENGINE");
    plan->add_option("--output,-o", plan_args.output,
                     "With --emit: write the script to FILE (atomically, mode 0755) instead of "
                     "stdout")
        ->type_name("FILE");

    grpo::cli::CheckArgs check_args;
    auto* check = app.add_subcommand(
        "check",
        "Check verl launch scripts for parallel, memory, data-type, key and environment errors");
    check->add_option("files", check_args.files, "verl launch scripts (bash)")
        ->required()
        ->type_name("FILE");
    check->add_option("--profile,-p", check_args.profile,
                      "Hardware profile (default a100x8); nodes and GPUs come from the script");
    check->add_option("--model,-m", check_args.model,
                      "Model spec (default: from actor_rollout_ref.model.path)");
    check->add_option("--set,-s", check_args.sets, "Override a hardware profile field")
        ->type_name("KEY=VALUE");
    check
        ->add_option("--engines", check_args.engines,
                     "Engine versions whose rules apply (default verl=0.7,megatron=0.15,"
                     "vllm=0.12, what verl 0.7 pins)")
        ->type_name("verl=V,megatron=V,vllm=V");
    check->add_flag("--check-parallel", check_args.parallel,
                    "Parallel sizes, batch sizes, consistency");
    check->add_flag("--check-memory", check_args.memory, "Memory estimate per phase (OOM_RISK)");
    check->add_flag("--check-data-types", check_args.data_types,
                    "Precision settings (DTYPE_CONFLICT)");
    check->add_option("--format,-f", check_args.format, "Output format")
        ->check(CLI::IsMember({"text", "json"}));
    check->footer(
        "Without --check-* flags all three groups run; unknown keys, unresolved values and "
        "environment\n"
        "settings are always checked. Exit: 0 no errors, 1 errors found, 2 a file could not be "
        "read or parsed.");

    grpo::cli::LaunchArgs render_args;
    auto* render =
        app.add_subcommand("render", "Print the sbatch script of a run (submit nothing)");
    add_plan_options(render, render_args.plan, false);
    add_launch_options(render, render_args);
    add_engine_options(render, render_args);

    grpo::cli::LaunchArgs submit_args;
    auto* submit = app.add_subcommand(
        "submit", "Plan, write the run directory and submit the batch job with sbatch");
    add_plan_options(submit, submit_args.plan, false);
    add_launch_options(submit, submit_args);
    add_engine_options(submit, submit_args);
    add_supervisor_options(submit, submit_args);
    submit->add_flag("--dry-run,-n", submit_args.plan.dry_run,
                     "Print the Parallel Config Summary and the batch script; submit nothing");
    submit->footer(
        "Exit: 0 submitted, 1 infeasible plan (--engine verl: check found errors), 2 bad input, "
        "69 Slurm unreachable, 73 run "
        "directory not writable,\n76 sbatch refused the job. On a definite sbatch failure the "
        "run directory is removed.");

    grpo::cli::LaunchArgs run_args;
    auto* run = app.add_subcommand(
        "run", "Plan, write the run directory and supervise training here, without Slurm");
    add_plan_options(run, run_args.plan, true);
    add_launch_options(run, run_args);
    add_supervisor_options(run, run_args);
    run->footer(
        "--set keys of the trainer (data.*, actor_rollout_ref.*, algorithm.*, trainer.*, kernels) "
        "go to grpo-trainer.\nExit: 0 training finished, 80 restart budget used up, 81 no "
        "progress, 82 not retryable (config),\n83 out of memory with nothing left to shrink, 84 "
        "nodes lost, 130 interrupted (after a checkpoint); docs/exit-codes.md.");

    grpo::cli::SuperviseArgs supervise_args;
    auto* supervise = app.add_subcommand(
        "supervise",
        "Supervise a run directory until training finishes: srun steps inside its Slurm job, "
        "local ranks elsewhere");
    supervise->add_option("--run-dir", supervise_args.run_dir, "The run directory")
        ->required()
        ->type_name("DIR");
    supervise->add_option("--srun", supervise_args.srun, "srun to use (path or name in PATH)")
        ->type_name("PATH");
    supervise->add_flag("--local", supervise_args.local,
                        "Run the ranks on this machine even inside a Slurm job");
    supervise->footer(
        "Exit: 0 training finished, 75 requeued (resumes by itself), 80 restart budget used up, "
        "81 no progress,\n82 not retryable, 83 out of memory with nothing left to shrink, 84 nodes "
        "lost, 130 interrupted,\n2 bad run directory or allocation mismatch, 69 Slurm "
        "unreachable.");

    grpo::cli::HealthCheckArgs health_args;
    auto* health = app.add_subcommand(
        "health-check", "Check this node before an attempt (the supervisor's health step)");
    health->group("");  // internal: not listed
    health->add_option("--run-dir", health_args.run_dir, "The run directory")->required();
    health->add_option("--min-free-bytes", health_args.min_free_bytes, "Free space needed");
    health->add_flag("--gpus", health_args.gpus, "nvidia-smi must answer");
    health->add_option("--command", health_args.command, "The run's --health-check");

    grpo::cli::StatusArgs status_args;
    auto* status =
        app.add_subcommand("status", "Show a run's state, progress, restarts and fault counts");
    status
        ->add_option("run", status_args.target,
                     "Run directory, Slurm job id, or a directory of runs (one line each)")
        ->required()
        ->type_name("RUN_DIR|JOB_ID|DIR");
    status->add_option("--format,-f", status_args.format, "Output format")
        ->check(CLI::IsMember({"text", "json"}));
    grpo::cli::EventsArgs events_args;
    auto* events = app.add_subcommand("events", "Print a run's event log (docs/events.md)");
    events->add_option("run", events_args.target, "Run directory or Slurm job id")
        ->required()
        ->type_name("RUN_DIR|JOB_ID");
    events->add_flag("--follow,-F", events_args.follow,
                     "Keep printing new events until the run finishes");
    events
        ->add_option("--type,-t", events_args.types,
                     "Only events of these types (repeatable, comma-separated)")
        ->type_name("TYPE");
    events->add_option("--format,-f", events_args.format, "Output format")
        ->check(CLI::IsMember({"text", "json"}));
    grpo::cli::ReportArgs report_args;
    auto* report =
        app.add_subcommand("report", "Write a self-contained HTML report with the run's charts");
    report
        ->add_option("run", report_args.targets,
                     "Run directory or Slurm job id; two to five of them: the runs overlaid "
                     "(reward, loss, throughput, goodput)")
        ->required()
        ->type_name("RUN_DIR|JOB_ID");
    report
        ->add_option("--output,-o", report_args.output,
                     "Output file (default RUN_DIR/report.html; for several runs "
                     "./compare-report.html)")
        ->type_name("FILE");

    grpo::cli::ExportArgs export_args;
    std::int64_t export_step = -1;
    auto* export_cmd = app.add_subcommand(
        "export", "Write a run's checkpoint as a Hugging Face model directory (safetensors)");
    export_cmd->add_option("run", export_args.run_dir, "Run directory")
        ->required()
        ->type_name("RUN_DIR");
    export_cmd
        ->add_option("--step", export_step,
                     "Checkpoint step (default: the newest checkpoint that verifies)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{999'999'999'999}));
    export_cmd
        ->add_option("--output,-o", export_args.output,
                     "Model directory to create (absent or empty; written whole or not at all)")
        ->required()
        ->type_name("DIR");
    export_cmd->add_option("--dtype", export_args.dtype, "dtype of the tensors (default bf16)")
        ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
    export_cmd
        ->add_option("--max-shard-size", export_args.max_shard_size,
                     "Largest shard, as transformers' save_pretrained (default 5GB; KB, MB, GB, "
                     "KiB, MiB, GiB); one shard is written as model.safetensors")
        ->type_name("SIZE");

    std::string completion_shell = "bash";
    std::string completion_output;
    auto* completion = app.add_subcommand("completion", "Print the shell completion script");
    completion->add_option("shell", completion_shell, "Shell")->check(CLI::IsMember({"bash"}));
    completion->add_option("--output,-o", completion_output, "Write to FILE instead of stdout")
        ->type_name("FILE");
    std::string man_date;
    std::string man_output;
    auto* man =
        app.add_subcommand("man", "Print the man page (roff), generated from these options");
    man->add_option("--date", man_date, "Date shown in the page (default: today)");
    man->add_option("--output,-o", man_output, "Write to FILE instead of stdout")
        ->type_name("FILE");

    std::string profiles_format = "text";
    auto* profiles = app.add_subcommand(
        "profiles", "List the cluster profiles and models found on the search path");
    profiles->add_option("--format,-f", profiles_format, "Output format")
        ->check(CLI::IsMember({"text", "json"}));

    app.require_subcommand(0, 1);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      grpo::cli::print_error(e.what());
      std::cerr << "Run 'grpo-launch --help' for usage.\n";
      return grpo::cli::kExitUsage;
    }

    if (plan->parsed()) return grpo::cli::cmd_plan(global, plan_args);
    if (profiles->parsed()) return grpo::cli::cmd_profiles(global, profiles_format);
    if (completion->parsed() || man->parsed()) {
      const bool is_man = man->parsed();
      if (man_date.empty()) {
        const std::time_t t = std::time(nullptr);
        char buf[16];
        std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
        man_date = buf;
      }
      const std::string text = is_man ? grpo::cli::man_page(app, GRPO_VERSION, man_date)
                                      : grpo::cli::bash_completion(app);
      const std::string& output = is_man ? man_output : completion_output;
      if (output.empty()) {
        std::cout << text;
        return grpo::cli::kExitOk;
      }
      std::ofstream out(output);
      if (!(out << text)) {
        grpo::cli::print_error("cannot write " + output);
        return grpo::cli::kExitCantCreate;
      }
      return grpo::cli::kExitOk;
    }
    if (status->parsed()) return grpo::cli::cmd_status(global, status_args);
    if (export_cmd->parsed()) {
      if (export_step >= 0) export_args.step = export_step;
      return grpo::cli::cmd_export(global, export_args);
    }
    if (events->parsed()) return grpo::cli::cmd_events(global, events_args);
    if (report->parsed()) return grpo::cli::cmd_report(global, report_args);
    if (check->parsed()) return grpo::cli::cmd_check(global, check_args);
    if (render->parsed()) return grpo::cli::cmd_render(global, render_args);
    if (submit->parsed()) return grpo::cli::cmd_submit(global, submit_args);
    if (supervise->parsed()) return grpo::cli::cmd_supervise(global, supervise_args);
    if (health->parsed()) return grpo::cli::cmd_health_check(health_args);
    if (run->parsed()) return grpo::cli::cmd_run(global, run_args);

    if (bare.plan.profile.empty() || bare.plan.model.empty()) {
      grpo::cli::print_error(
          "--profile and --model are required (or give a subcommand); see --help");
      return grpo::cli::kExitUsage;
    }
    return grpo::cli::cmd_submit(global, bare);
  } catch (const std::exception& e) {
    grpo::cli::print_error(std::string("internal error: ") + e.what());
    return grpo::cli::kExitInternal;
  }
}
