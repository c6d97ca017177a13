// The verl run checker (docs/check.md): finding the entry point, reading the overrides and the
// settings, resolving the model and the cluster, and running the phases in checker_layout.cpp,
// checker_memory.cpp and checker_env.cpp (their shared state: checker_run.h).
#include "grpo/verl/checker.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "checker_run.h"
#include "grpo/core/text.h"
#include "grpo/core/verl_keys.h"
#include "grpo/plan/planner.h"

namespace grpo::core {
namespace checker_detail {

// Keys whose value only names something (the run, where its outputs go): nothing is checked
// against them, so a value known only at run time is a note, not a warning.
bool is_name_key(const std::string& key) {
  for (const char* k :
       {"trainer.project_name", "trainer.experiment_name", "trainer.default_local_dir",
        "trainer.default_hdfs_dir", "trainer.rollout_data_dir", "trainer.validation_data_dir"}) {
    if (key == k) return true;
  }
  return false;
}

// verl's PPO/GRPO trainer and the recipes built on it (main_generation, main_eval and the SFT
// trainer have other configs and are not checked).
bool is_entry_point(const std::string& word) {
  if (word == "verl.trainer.main_ppo") return true;
  if (word.rfind("recipe.", 0) == 0 && word.find(".main_") != std::string::npos) return true;
  const auto slash = word.rfind('/');
  const std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
  return base.rfind("main_ppo", 0) == 0 && base.size() > 3 &&
         base.compare(base.size() - 3, 3, ".py") == 0 && word.find("verl") != std::string::npos;
}

std::string strip_model_suffixes(std::string s) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const char* suffix : {"-instruct", "-base", "-chat", "-hf", "/"}) {
      const std::string suf(suffix);
      if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
        s.resize(s.size() - suf.size());
        changed = true;
      }
    }
  }
  return s;
}

std::string last_component(std::string path) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<std::int64_t> parse_int(const std::string& v) {
  std::int64_t out = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || p != v.data() + v.size()) return std::nullopt;
  return out;
}

// A Hydra float ("1e-6", "0.5", "+2", "inf"); nullopt when any of `v` is left over.
std::optional<double> parse_double(const std::string& v) {
  const char* from = !v.empty() && v.front() == '+' ? v.data() + 1 : v.data();
  const char* end = v.data() + v.size();
  double d = 0;
  const auto [p, ec] = std::from_chars(from, end, d);
  if (ec != std::errc{} || p != end) return std::nullopt;
  return d;
}

Result<CheckedRun> RunChecker::run() {
  run_.file = cmd_.file.empty() ? script_.file : cmd_.file;
  run_.line = cmd_.line;
  run_.conditions = cmd_.conditions;
  run_.engines = options_.engines;
  run_.entry_point = cmd_.words[entry_].text;
  read_overrides();
  check_keys_and_values();
  GRPO_TRY_STATUS(resolve_model_and_cluster());
  if (have_model_) {
    build_layout();
    if (options_.parallel) check_family();
    if (options_.parallel) check_parallel();
    if (options_.parallel) check_token_caps();
    if (options_.data_types) check_data_types();
    if (options_.memory) check_memory();
  }
  check_environment();
  // The script's own lines first, then those of the files it sources.
  std::stable_sort(run_.diagnostics.begin(), run_.diagnostics.end(),
                   [&](const Diagnostic& a, const Diagnostic& b) {
                     const bool a_other = a.where.file != script_.file;
                     const bool b_other = b.where.file != script_.file;
                     if (a_other != b_other) return b_other;
                     if (a.where.file != b.where.file) return a.where.file < b.where.file;
                     if (a.where.line != b.where.line) return a.where.line < b.where.line;
                     if (a.where.column != b.where.column) return a.where.column < b.where.column;
                     return to_string(a.code) < to_string(b.code);
                   });
  return run_;
}

SourceLocation RunChecker::at(const ShellWord& w) const {
  return {w.file.empty() ? script_.file : w.file, w.line, w.column};
}

SourceLocation RunChecker::command_location() const {
  return {cmd_.file.empty() ? script_.file : cmd_.file, cmd_.line, 0};
}

void RunChecker::add(DiagCode code, const std::string& setting, std::string message,
                     std::string hint, SourceLocation where, std::optional<Severity> severity) {
  Diagnostic d = make_diag(code, setting, std::move(message), std::move(hint), std::move(where));
  if (severity) d.severity = *severity;
  // One finding per (code, line): the engines' rules can trip twice over one setting.
  for (const auto& e : run_.diagnostics) {
    if (e.code == d.code && e.where.line == d.where.line && e.where.file == d.where.file &&
        e.setting == d.setting)
      return;
  }
  run_.diagnostics.push_back(std::move(d));
}

void RunChecker::read_overrides() {
  const auto& words = cmd_.words;
  for (std::size_t i = entry_ + 1; i < words.size(); ++i) {
    const ShellWord& w = words[i];
    if (w.from_args && w.text.empty()) {
      run_.passes_args = true;
      continue;
    }
    const std::string& t = w.text;
    if (t.rfind("--config-name", 0) == 0 || t.rfind("--config-path", 0) == 0 || t == "-cn" ||
        t == "-cp") {
      const bool name = t.rfind("--config-name", 0) == 0 || t == "-cn";
      std::string value;
      const auto eq = t.find('=');
      if (eq != std::string::npos) {
        value = t.substr(eq + 1);
      } else if (i + 1 < words.size()) {
        value = words[++i].text;
      }
      if (name) config_name_ = value;
      continue;
    }
    if (t.empty() || t[0] == '-') continue;  // other Hydra flags (--multirun, ...)
    if (w.unresolved && t.find('=') == std::string::npos && t[0] != '~') {
      // Words the reader could not expand ($EXTRA_ARGS unset, set in undecidable branches):
      // they may hold overrides that are not checked.
      add(DiagCode::kUnresolved, t,
          "the words of " + t + " are not known statically (" + w.unresolved_why +
              "): any overrides in them are not checked",
          "set the variable in the script, or pass the overrides literally", at(w),
          Severity::kInfo);
      continue;
    }
    Override o;
    std::string body = t;
    for (const char* p : {"++", "+", "~"}) {
      if (body.rfind(p, 0) == 0) {
        o.prefix = p;
        body = body.substr(std::string(p).size());
        break;
      }
    }
    const auto eq = body.find('=');
    if (eq == std::string::npos && o.prefix != "~") continue;  // not an override
    o.key = body.substr(0, eq);
    o.value = eq == std::string::npos ? std::string{} : body.substr(eq + 1);
    o.where = at(w);
    o.unresolved = w.unresolved;
    o.why = w.unresolved_why;
    o.kind = w.unresolved_kind;
    if (o.key.empty()) continue;
    overrides_.push_back(o);
    by_key_[o.key] = overrides_.size() - 1;
  }
  run_.overrides = overrides_.size();
}

const Override* RunChecker::find(const std::string& key) const {
  const auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : &overrides_[it->second];
}

const Override* RunChecker::usable(const std::string& key) const {
  const Override* o = find(key);
  return o != nullptr && !o->unresolved && o->prefix != "~" ? o : nullptr;
}

SourceLocation RunChecker::where_or_command(const std::string& key) const {
  const Override* o = find(key);
  return o != nullptr ? o->where : command_location();
}

std::int64_t RunChecker::int_setting(const std::string& key, std::int64_t fallback,
                                     std::int64_t min) {
  const Override* o = usable(key);
  if (o == nullptr || ascii_lower(o->value) == "null" || o->value.empty()) return fallback;
  const auto v = parse_int(o->value);
  if (!v || *v < min) {
    add(DiagCode::kInvalidSetting, key,
        key + "=" + o->value + ": expected an integer" +
            (min > 0 ? " >= " + std::to_string(min) : ""),
        "give a whole number", o->where);
    return fallback;
  }
  return *v;
}

bool RunChecker::bool_setting(const std::string& key, bool fallback) {
  const Override* o = usable(key);
  if (o == nullptr || o->value.empty()) return fallback;
  const auto v = parse_bool_word(o->value);
  if (!v) {
    add(DiagCode::kInvalidSetting, key, key + "=" + o->value + ": expected True or False",
        "use True or False", o->where);
    return fallback;
  }
  return *v;
}

double RunChecker::double_setting(const std::string& key, double fallback) {
  const Override* o = usable(key);
  if (o == nullptr || o->value.empty()) return fallback;
  const auto v = parse_double(o->value);
  if (!v) {
    add(DiagCode::kInvalidSetting, key, key + "=" + o->value + ": expected a number",
        "give a number", o->where);
    return fallback;
  }
  return *v;
}

std::string RunChecker::string_setting(const std::string& key, std::string fallback) {
  const Override* o = usable(key);
  if (o == nullptr) return fallback;
  std::string v = o->value;
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
    v = v.substr(1, v.size() - 2);
  return v;
}

void RunChecker::check_keys_and_values() {
  for (const auto& o : overrides_) {
    const KeyCheck k = schema_.check_key(o.key);
    if (!k.known) {
      std::string msg = "'" + o.key + "' is not a setting verl or Megatron-Core knows";
      if (!k.detail.empty()) msg += " (" + k.detail + ")";
      add(DiagCode::kUnknownKey, o.key, msg,
          k.suggestion.empty() ? "remove it; see data/schema/ for the valid keys"
                               : "did you mean '" + k.suggestion + "'?",
          o.where);
    }
    if (o.unresolved) {
      // A run-time value ($(date ...), $RANDOM) in a value that is only a name is expected.
      const bool note =
          o.kind != UnresolvedKind::kMixed && is_name_key(o.key) &&
          (o.kind == UnresolvedKind::kCommandSubstitution || o.kind == UnresolvedKind::kRunTime);
      add(DiagCode::kUnresolved, o.key, o.key + " cannot be resolved statically: " + o.why,
          note ? "nothing is checked against it; this is a note"
               : "give the value literally or with a default (${VAR:-value})",
          o.where, note ? std::optional<Severity>(Severity::kInfo) : std::nullopt);
    }
  }
}

Status RunChecker::resolve_model_and_cluster() {
  // Hardware.
  run_.profile = options_.profile.empty() ? kDefaultCheckProfile : options_.profile;
  run_.profile_is_default = options_.profile.empty();
  GRPO_TRY(cluster_, load_cluster(provider_, run_.profile, options_.sets));
  cluster_.nodes = static_cast<int>(int_setting(verl_key::kNnodes, 1));
  cluster_.gpus_per_node = static_cast<int>(int_setting(verl_key::kGpusPerNode, 8));
  run_.nodes = cluster_.nodes;
  run_.gpus_per_node = cluster_.gpus_per_node;
  // Model.
  if (!options_.model.empty()) {
    GRPO_TRY(model_, load_model(provider_, options_.model));
    have_model_ = true;
  } else if (const Override* o = usable(kModelPath)) {
    // An absolute path that holds a config.json here (the login node often sees the cluster's
    // file system) is read as `--model DIR` would; one that does not exist falls back to the
    // spec whose name or Hugging Face id matches its last component.
    if (const std::string path = string_setting(kModelPath, ""); path.rfind('/', 0) == 0) {
      auto m = load_model(provider_, path);
      if (m.ok()) {
        model_ = std::move(m).value();
        have_model_ = true;
        run_.model = model_.name;
        return ok_status();
      }
      if (m.error().kind != ErrorKind::kNotFound) return m.error();
    }
    const std::string wanted =
        strip_model_suffixes(ascii_lower(last_component(string_setting(kModelPath, ""))));
    for (const auto& name : provider_.names(CatalogKind::kModel)) {
      auto m = load_model(provider_, name);
      if (!m.ok()) continue;
      const std::string hf = strip_model_suffixes(ascii_lower(last_component(m->hf_id)));
      if (wanted == ascii_lower(name) || (!hf.empty() && wanted == hf)) {
        model_ = std::move(m).value();
        have_model_ = true;
        break;
      }
    }
    if (!have_model_) {
      add(DiagCode::kUnresolved, kModelPath,
          "model '" + last_component(o->value) +
              "' matches no model spec, so heads, layers and memory are not checked",
          "pass --model NAME (see `grpo-launch profiles`) or add a spec to your profile "
          "directory",
          o->where);
    }
  } else {
    add(DiagCode::kUnresolved, kModelPath, "the script does not say which model it trains",
        "pass --model NAME", command_location());
  }
  run_.model = have_model_ ? model_.name : "";
  return ok_status();
}

}  // namespace checker_detail

using checker_detail::is_entry_point;
using checker_detail::RunChecker;

std::size_t CheckReport::errors() const {
  std::size_t n = 0;
  for (const auto& r : runs)
    for (const auto& d : r.diagnostics) n += d.severity == Severity::kError;
  return n;
}

std::size_t CheckReport::warnings() const {
  std::size_t n = 0;
  for (const auto& r : runs)
    for (const auto& d : r.diagnostics) n += d.severity == Severity::kWarning;
  return n;
}

std::string_view check_group(DiagCode code) {
  switch (code) {
    case DiagCode::kTpMismatch:
    case DiagCode::kWorldSizeMismatch:
    case DiagCode::kHeadsNotDivisible:
    case DiagCode::kKvHeadsNotDivisible:
    case DiagCode::kLayersNotDivisible:
    case DiagCode::kExpertsNotDivisible:
    case DiagCode::kTpCrossesNode:
    case DiagCode::kGroupSplit:
    case DiagCode::kBatchNotDivisible:
    case DiagCode::kInvalidSetting:
    case DiagCode::kUnevenPipeline:
      return "parallel";
    case DiagCode::kOomRisk:
    case DiagCode::kKvCacheShort:
    case DiagCode::kNoFeasiblePlan:
      return "memory";
    case DiagCode::kDtypeConflict:
      return "data-types";
    case DiagCode::kEnvConflict:
    case DiagCode::kEnvUnknown:
    case DiagCode::kUnknownKey:
    case DiagCode::kUnresolved:
      return "always";
  }
  return "always";
}

Result<CheckReport> check_script(const ParsedScript& script, const ConfigSchema& schema,
                                 const SourceProvider& provider, const CheckOptions& options) {
  CheckReport report;
  report.file = script.file;
  report.notes = script.notes;
  for (const auto& cmd : script.commands) {
    for (std::size_t i = 0; i < cmd.words.size(); ++i) {
      if (!is_entry_point(cmd.words[i].text)) continue;
      // The exported variables as the command starts, and its own prefix.
      std::map<std::string, ShellAssignment> env;
      if (cmd.exported) env = *cmd.exported;
      for (const auto& p : cmd.prefix) env[p.name] = p;
      RunChecker checker(script, cmd, i, schema, provider, options, env);
      GRPO_TRY(CheckedRun run, checker.run());
      report.runs.push_back(std::move(run));
      break;
    }
  }
  if (report.runs.empty()) {
    return make_error(ErrorKind::kParse,
                      "no verl entry point (python3 -m verl.trainer.main_ppo ...) found: not a "
                      "verl launch script",
                      {script.file, 0, 0});
  }
  return report;
}

}  // namespace grpo::core
