// grpo-launch render / submit: flags in, the launch use case (grpo/app/launch.h: plan, prepare,
// create and submit the run directory), what it made printed.
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/plan/plan_render.h"
#include "grpo/shell/shell_quote.h"
#include "launch_common.h"
#include "verl_commands.h"

namespace grpo::cli {

void print_follow(const std::string& run_dir, const std::string& id) {
  std::cout << "Run directory: " << run_dir << "\n"
            << "Follow it:\n"
            << "  tail -f " << core::shell_quote(run_dir + "/slurm-" + id + ".out") << "\n"
            << "  squeue -j " << id << "\n"
            << "  grpo-launch status " << core::shell_quote(run_dir) << "\n";
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
  const LaunchArgs args = app::split_trainer_sets(given);
  auto built = app::build_launch_plan(global.profile_dirs, args, print_warning);
  if (!built.ok()) return fail(built.error());
  auto p = app::prepare(global.profile_dirs, args, std::move(built).value(), true);
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
  const LaunchArgs args = app::split_trainer_sets(given);
  auto built = app::build_launch_plan(global.profile_dirs, args, print_warning);
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
  auto prepared = app::prepare(global.profile_dirs, args, std::move(built).value(), true);
  if (!prepared.ok()) return fail(prepared.error());
  app::Prepared& p = prepared.value();
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

  auto id = app::submit_run_dir(p.run_dir, app::run_dir_files(p),
                                {std::string(core::run_dir::kBatchScript)}, args.sbatch_timeout_s,
                                p.run.created_utc, print_warning);
  if (!id.ok()) return fail(id.error());
  std::cout << "Submitted batch job " << *id << ": " << p.plan.model.name << " on "
            << p.plan.cluster.name << ", " << p.run.nodes << " node(s) x " << p.run.ranks_per_node
            << " rank(s)\n";
  print_follow(p.run_dir, *id);
  return kExitOk;
}

}  // namespace grpo::cli
