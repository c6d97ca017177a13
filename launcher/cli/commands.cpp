#include "commands.h"

#include <cstdio>
#include <iostream>

#include "exit_codes.h"
#include "grpo/app/catalog.h"
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

// Input problems (unreadable files, unknown names, bad values) all exit 2.
int input_error(const core::Error& e) {
  print_error(e.str());
  return e.kind == core::ErrorKind::kInternal ? kExitInternal : kExitInput;
}

}  // namespace

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
  auto built = app::build_plan(global.profile_dirs, args);
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
  const auto provider = app::catalog(global.profile_dirs);
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
