// grpo-launch render / submit --engine verl SCRIPT (docs/verl.md): an existing verl launch script
// run inside the allocation under the supervisor. `check` must pass first (its report printed as
// `grpo-launch check` prints it); the run directory is the verl launch use case's
// (grpo/app/verl_launch.h).
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/app/catalog.h"
#include "grpo/app/verl_launch.h"
#include "grpo/core/catalog.h"
#include "grpo/core/run_dir.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/verl/checker.h"
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
  auto prepared = app::prepare_verl(global.profile_dirs, args, report, parsed);
  if (!prepared.ok()) return fail(prepared.error());
  const app::VerlPrepared& p = prepared.value();
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
