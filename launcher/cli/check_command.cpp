// grpo-launch check: reads verl launch scripts and reports diagnostics (docs/check.md).
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/core/json_text.h"
#include "grpo/core/text.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/plan/plan_render.h"
#include "grpo/verl/checker.h"

namespace grpo::cli {
namespace {

// `source FILE` in a script: regular files only (never a FIFO or a device), 4 MiB at most.
core::Result<std::string> read_sourced_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return core::make_error(core::ErrorKind::kNotFound, "no such file: " + path);
  }
  return io::read_file(path, 4u << 20);
}

std::string layout_line(const core::CheckedRun& r) {
  const auto& d = r.layout.dims;
  std::string s;
  if (r.strategy == "megatron") {
    s = "Megatron TP=" + std::to_string(d.tp) + " PP=" + std::to_string(d.pp) +
        " CP=" + std::to_string(d.cp) + " DP=" + std::to_string(d.dp);
    if (d.ep > 1 || d.etp > 1) s += " EP=" + std::to_string(d.ep) + " ETP=" + std::to_string(d.etp);
  } else {
    s = "FSDP over " + std::to_string(d.world_size()) + " ranks";
    if (d.cp > 1) {
      s += " (Ulysses " + std::to_string(d.cp) + ", data-parallel " + std::to_string(d.dp) + ")";
    }
  }
  return s + ", rollout TP=" + std::to_string(r.layout.rollout_tp);
}

void print_text(const core::CheckReport& report) {
  for (const auto& n : report.notes) std::cout << report.file << ": note: " << n << "\n";
  for (const auto& run : report.runs) {
    std::size_t errors = 0, warnings = 0, infos = 0;
    for (const auto& d : run.diagnostics) {
      errors += d.severity == core::Severity::kError;
      warnings += d.severity == core::Severity::kWarning;
      infos += d.severity == core::Severity::kInfo;
    }
    std::cout << (run.file.empty() ? report.file : run.file) << ":" << run.line << ": "
              << run.entry_point << ": ";
    if (run.diagnostics.empty()) {
      std::cout << "no findings\n";
    } else {
      std::cout << errors << (errors == 1 ? " error, " : " errors, ") << warnings
                << (warnings == 1 ? " warning" : " warnings")
                << (infos ? ", " + std::to_string(infos) + " notes" : "") << "\n";
    }
    std::cout << "  checked " << run.overrides << " overrides; model "
              << (run.model.empty() ? "unknown" : run.model) << "; " << run.nodes << " x "
              << run.gpus_per_node << " devices of " << run.profile
              << (run.profile_is_default ? " (default hardware: pass --profile)" : "") << "; "
              << layout_line(run) << "; rules of verl " << run.engines.verl.str()
              << ", Megatron-Core " << run.engines.megatron.str() << ", vLLM "
              << run.engines.vllm.str()
              << (run.passes_args ? "; arguments passed as $@ are not checked" : "") << "\n";
    if (run.memory) {
      const auto& m = *run.memory;
      std::cout << "  memory per device: training " << core::format_gib(m.training.floor_total())
                << " floor, " << core::format_gib(m.training.total()) << " worst case; rollout "
                << core::format_gib(m.rollout.total()) << "; of "
                << core::format_gib(m.training.capacity) << " usable ("
                << core::format_gib(m.training.capacity / (1.0 - run.workload.memory_headroom))
                << " less " << core::format_fixed(100.0 * run.workload.memory_headroom, 0)
                << " % kept for the estimate's error)\n";
    }
    for (const auto& c : run.conditions) std::cout << "  read conditionally: " << c << "\n";
    for (auto sev : {core::Severity::kError, core::Severity::kWarning, core::Severity::kInfo}) {
      bool header = false;
      for (const auto& d : run.diagnostics) {
        if (d.severity != sev) continue;
        if (!header) {
          std::cout << "  "
                    << (sev == core::Severity::kError     ? "errors"
                        : sev == core::Severity::kWarning ? "warnings"
                                                          : "notes")
                    << ":\n";
          header = true;
        }
        std::cout << "    " << d.where.str() << ": " << core::to_string(d.code) << ": " << d.message
                  << "\n";
        if (!d.hint.empty()) std::cout << "      fix: " << d.hint << "\n";
      }
    }
  }
}

nlohmann::json run_json(const core::CheckedRun& r) {
  nlohmann::json diags = nlohmann::json::array();
  for (const auto& d : r.diagnostics) diags.push_back(core::diagnostic_to_json(d));
  nlohmann::json j = {{"file", r.file},
                      {"line", r.line},
                      {"entry_point", r.entry_point},
                      {"strategy", r.strategy},
                      {"model", r.model},
                      {"profile", r.profile},
                      {"profile_is_default", r.profile_is_default},
                      {"nodes", r.nodes},
                      {"gpus_per_node", r.gpus_per_node},
                      {"engines", r.engines.str()},
                      {"overrides", r.overrides},
                      {"passes_args", r.passes_args},
                      {"conditions", r.conditions},
                      {"layout", core::layout_to_json(r.layout)},
                      {"diagnostics", diags}};
  if (r.memory) {
    j["memory_gib"] = {{"training", r.memory->training.total() / core::kGiB},
                       {"training_floor", r.memory->training.floor_total() / core::kGiB},
                       {"rollout", r.memory->rollout.total() / core::kGiB},
                       {"rollout_floor", r.memory->rollout.floor_total() / core::kGiB},
                       {"usable", r.memory->training.capacity / core::kGiB}};
  }
  return j;
}

}  // namespace

int cmd_check(const GlobalArgs& global, const CheckArgs& args) {
  const io::DirectorySourceProvider provider(
      io::profile_search_path(io::search_inputs_from_environment(global.profile_dirs)));
  auto schema = io::load_config_schema(io::executable_dir());
  if (!schema.ok()) {
    print_error(schema.error().str());
    return kExitInternal;
  }
  core::CheckOptions options;
  const bool any = args.parallel || args.memory || args.data_types;
  options.parallel = !any || args.parallel;
  options.memory = !any || args.memory;
  options.data_types = !any || args.data_types;
  options.profile = args.profile;
  options.model = args.model;
  if (!args.engines.empty()) {
    auto engines = core::parse_engine_versions(args.engines);
    if (!engines.ok()) {
      print_error(engines.error().str());
      return kExitInput;
    }
    options.engines = engines.value();
  }
  for (const auto& s : args.sets) {
    auto o = core::parse_override(s);
    if (!o.ok()) {
      print_error(o.error().str());
      return kExitInput;
    }
    options.sets.push_back(std::move(o).value());
  }
  // --profile and --model are checked once, before any script.
  if (!args.profile.empty()) {
    auto c = core::load_cluster(provider, args.profile, options.sets);
    if (!c.ok()) {
      print_error(c.error().str());
      return kExitInput;
    }
  }
  if (!args.model.empty()) {
    auto m = core::load_model(provider, args.model);
    if (!m.ok()) {
      print_error(m.error().str());
      return kExitInput;
    }
  }

  bool unreadable = false;
  std::size_t errors = 0, warnings = 0;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : args.files) {
    auto text = io::read_file(file, 4u << 20);
    core::Result<core::CheckReport> report = text.ok() ? [&]() -> core::Result<core::CheckReport> {
      core::ShellReadOptions read_options;
      read_options.read_file = read_sourced_file;
      GRPO_TRY(core::ParsedScript script,
               core::read_shell_script(text.value(), file, read_options));
      return core::check_script(script, schema.value(), provider, options);
    }()
        : core::Result<core::CheckReport>(text.error());
    if (!report.ok()) {
      unreadable = true;
      core::Error e = report.error();
      if (!e.where.known()) e.where.file = file;
      if (e.kind == core::ErrorKind::kNotFound || e.kind == core::ErrorKind::kIo) {
        e.message = "cannot read: " + e.message;
        e.where = core::SourceLocation{file, 0, 0};
      }
      if (args.format == "json") {
        files.push_back({{"file", file}, {"ok", false}, {"error", e.str()}});
      } else {
        print_error(e.str());
      }
      continue;
    }
    errors += report->errors();
    warnings += report->warnings();
    if (args.format == "json") {
      nlohmann::json runs = nlohmann::json::array();
      for (const auto& r : report->runs) runs.push_back(run_json(r));
      files.push_back({{"file", file},
                       {"ok", report->errors() == 0},
                       {"runs", runs},
                       {"not_followed", report->notes}});
    } else {
      print_text(report.value());
    }
  }
  if (args.format == "json") {
    nlohmann::json j = {{"schema", "grpo-launch/check/v1"},
                        {"files", files},
                        {"errors", errors},
                        {"warnings", warnings}};
    std::cout << core::json_text(j, 2) << "\n";
  } else if (args.files.size() > 1) {
    std::cout << errors << " error(s), " << warnings << " warning(s) in " << args.files.size()
              << " files\n";
  }
  if (unreadable) return kExitInput;
  return errors > 0 ? kExitFindings : kExitOk;
}

}  // namespace grpo::cli
