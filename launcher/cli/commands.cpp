#include "commands.h"

#include <cstdio>
#include <iostream>

#include "exit_codes.h"
#include "grpo/core/catalog.h"
#include "grpo/core/json_text.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/job/trainer_args.h"
#include "grpo/plan/plan_render.h"
#include "grpo/plan/planner.h"
#include "grpo/shell/shell_quote.h"
#include "grpo/verl/verl_script.h"

namespace grpo::cli {

namespace {
void print_line(const char* level, const std::string& message) {
  std::string one_line = message;
  for (char& c : one_line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "grpo-launch: %s: %s\n", level, one_line.c_str());
}
}  // namespace

void print_error(const std::string& message) {
  print_line("error", message);
}
int fail(const core::Error& e) {
  return fail(e, exit_code_for(e));
}
int fail(const core::Error& e, int code) {
  print_error(e.str());
  return code;
}
void print_warning(const std::string& message) {
  print_line("warning", message);
}

namespace {

io::DirectorySourceProvider make_provider(const GlobalArgs& g) {
  return io::DirectorySourceProvider(
      io::profile_search_path(io::search_inputs_from_environment(g.profile_dirs)));
}

// Input problems (unreadable files, unknown names, bad values) all exit 2.
int input_error(const core::Error& e) {
  print_error(e.str());
  return e.kind == core::ErrorKind::kInternal ? kExitInternal : kExitInput;
}

}  // namespace

core::Result<core::Plan> build_plan(const GlobalArgs& global, const PlanArgs& args,
                                    bool embedded_trainer, std::string* note) {
  const auto provider = make_provider(global);
  std::vector<core::Override> overrides;
  for (const auto& s : args.sets) {
    GRPO_TRY(core::Override o, core::parse_override(s));
    overrides.push_back(std::move(o));
  }
  core::PlanRequest request;
  std::vector<core::Override> profile_overrides;
  GRPO_TRY_STATUS(core::split_layout_overrides(overrides, request.constraints, profile_overrides));
  const core::LayoutConstraints given = request.constraints;
  // --set backend=embedded plans what `grpo-launch run` runs.
  embedded_trainer = embedded_trainer || given.backend == core::Backend::kEmbedded;
  if (embedded_trainer && given.backend == core::Backend::kFsdp) {
    return core::make_error(core::ErrorKind::kInvalidValue,
                            "--set backend=fsdp plans verl's FSDP strategy, which the embedded "
                            "grpo-trainer does not run (it runs data and expert parallelism); use "
                            "`grpo-launch plan --emit verl`, or run your own trainer with "
                            "--trainer-cmd");
  }
  if (embedded_trainer) core::limit_to_embedded_trainer(request.constraints, true);
  GRPO_TRY(request.cluster, core::load_cluster(provider, args.profile, profile_overrides));
  GRPO_TRY(request.model, core::load_model(provider, args.model));
  // `run` says in one line before anything starts that grpo-trainer cannot build this model.
  if (embedded_trainer) {
    GRPO_TRY_STATUS(
        core::embedded_trainer_supports(request.model, request.cluster.grpo.seq_length()));
  }
  if (!args.engines.empty()) {
    GRPO_TRY(request.engines, core::parse_engine_versions(args.engines));
  }
  request.alternatives = args.alternatives;
  core::Plan plan = core::make_plan(request);
  if (embedded_trainer && !core::plan_ok(plan)) {
    // Nothing fits with the optimizer state whole on every rank (as grpo-trainer keeps it): plan
    // with Megatron's memory savings, and say that the estimate assumes them.
    request.constraints = given;
    core::limit_to_embedded_trainer(request.constraints, false);
    core::Plan loose = core::make_plan(request);
    if (core::plan_ok(loose)) {
      if (note != nullptr) {
        *note =
            "no layout fits with the whole optimizer state on every rank, as grpo-trainer keeps "
            "it; this plan's memory estimate assumes " +
            std::string(loose.best.layout.distributed_optimizer ? "Megatron's distributed optimizer"
                                                                : "offload or recompute") +
            ", which the embedded trainer does not have yet";
      }
      return loose;
    }
  }
  return plan;
}

namespace {

// The command line that asked for the plan, for the script's header: the profile, the model and
// the --set values as given (shell-quoted).
std::string plan_command(const PlanArgs& args) {
  std::vector<std::string> words = {"grpo-launch", "plan",    "--profile",
                                    args.profile,  "--model", args.model};
  for (const auto& s : args.sets) {
    words.push_back("--set");
    words.push_back(s);
  }
  if (!args.engines.empty()) {
    words.push_back("--engines");
    words.push_back(args.engines);
  }
  words.push_back("--emit");
  words.push_back(args.emit);
  std::string line = core::shell_join(words);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';  // the header is one comment line
  }
  return line;
}

// plan --emit verl [-o FILE]: the script on stdout, or written atomically (0755) to FILE.
int emit_verl(const core::Plan& plan, const PlanArgs& args) {
  core::VerlScriptOptions options;
  options.version = GRPO_VERSION;
  options.command = plan_command(args);
  auto script = core::render_verl_script(plan, options);
  if (!script.ok()) {
    print_error(script.error().str());
    return exit_code_for(script.error());
  }
  if (args.output.empty() || args.output == "-") {
    std::cout << script.value();
    return kExitOk;
  }
  if (auto st = io::write_file_atomic(args.output, script.value(), 0755); !st.ok()) {
    print_error(st.error().str());
    return exit_code_for(st.error());
  }
  std::cerr << "grpo-launch: wrote " << args.output << " (check it with: grpo-launch check "
            << core::shell_quote(args.output) << " --profile " << plan.cluster.name << ")\n";
  return kExitOk;
}

}  // namespace

int cmd_plan(const GlobalArgs& global, const PlanArgs& args) {
  if (args.format != "text" && args.format != "json") {
    print_error("--format must be text or json, not '" + args.format + "'");
    return kExitUsage;
  }
  if (!args.emit.empty() && args.emit != "verl") {
    print_error("--emit must be verl, not '" + args.emit + "'");
    return kExitUsage;
  }
  if (args.emit.empty() && !args.output.empty()) {
    print_error("-o/--output needs --emit verl");
    return kExitUsage;
  }
  auto built = build_plan(global, args);
  if (!built.ok()) return input_error(built.error());
  const core::Plan& plan = built.value();
  if (!args.emit.empty()) return emit_verl(plan, args);
  if (args.format == "json") {
    std::cout << core::json_text(core::plan_to_json(plan), 2) << "\n";
  } else {
    std::cout << core::render_summary(plan);
  }
  return core::plan_ok(plan) ? kExitOk : kExitFindings;
}

int cmd_profiles(const GlobalArgs& global, const std::string& format) {
  const auto provider = make_provider(global);
  if (format == "json") {
    nlohmann::json j;
    j["search_path"] = nlohmann::json::array();
    for (const auto& d : provider.search_path()) j["search_path"].push_back(d.string());
    for (auto kind : {core::CatalogKind::kCluster, core::CatalogKind::kModel}) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& n : provider.names(kind)) {
        list.push_back({{"name", n}, {"path", provider.locate(kind, n).value_or("").string()}});
      }
      j[kind == core::CatalogKind::kCluster ? "clusters" : "models"] = std::move(list);
    }
    std::cout << core::json_text(j, 2) << "\n";
    return kExitOk;
  }
  std::cout << "Search path (first match wins):\n";
  for (const auto& d : provider.search_path()) std::cout << "  " << d.string() << "\n";
  for (auto kind : {core::CatalogKind::kCluster, core::CatalogKind::kModel}) {
    std::cout << (kind == core::CatalogKind::kCluster ? "\nClusters:\n" : "\nModels:\n");
    for (const auto& n : provider.names(kind)) {
      std::cout << "  " << n << "  (" << provider.locate(kind, n).value_or("").string() << ")\n";
    }
  }
  return kExitOk;
}

}  // namespace grpo::cli
