// Builtins of the shell reader that change its state: assignments and declarations (export,
// declare, local, readonly), set, and source of files next to the script.
#include <algorithm>

#include "shell_eval.h"

namespace grpo::core::shell {
namespace {

std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= p.size()) {
    const auto slash = p.find('/', i);
    const std::string part =
        p.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    if (part == "..") {
      if (!out.empty() && out.back() != "..") {
        out.pop_back();
      } else {
        out.push_back(part);
      }
    } else if (!part.empty() && part != ".") {
      out.push_back(part);
    }
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  return out;
}

std::string join_path(const std::vector<std::string>& parts, bool absolute) {
  std::string out = absolute ? "/" : "";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

}  // namespace

std::string normalize_path(const std::string& path) {
  return join_path(split_path(path), !path.empty() && path[0] == '/');
}

ShellAssignment Evaluator::assignment(const std::string& name, const std::vector<Text>& values,
                                      Loc at, bool exported) const {
  Field f;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) f.text.push(' ', CharInfo{at, 0, 0});
    f.text.append(values[i]);
  }
  for (auto& c : f.text.info) c.flags = 0;
  return ShellAssignment{name, to_shell_word(f, at), exported};
}

Status Evaluator::assign(const Word& w, bool exported, bool local, ShellCommand* record) {
  const std::string& name = w.assign_name;
  if (local && !st_.frames.empty() && st_.frames.back().count(name) == 0) {
    const auto it = st_.vars.find(name);
    st_.frames.back()[name] =
        it == st_.vars.end() ? std::nullopt : std::optional<Variable>(it->second);
  }
  GRPO_TRY(std::vector<Text> values, assigned_values(w));
  std::size_t size = 0;
  for (const auto& t : values) size += t.s.size();
  GRPO_TRY_STATUS(charge(size + 1, w.loc));
  const auto it = st_.vars.find(name);
  const bool existed = it != st_.vars.end() && (it->second.array || !it->second.values.empty());
  if (!w.assign_index.empty()) {  // NAME[i]=value
    auto index = index_of(w.assign_index);
    if (!index.ok()) return index.error();
    const std::optional<long long> k = index.value();
    std::vector<Text> all = existed ? it->second.values : std::vector<Text>{};
    if (!k || *k < 0 || *k > 4096 || values.empty()) {
      mark_unknown(name, w.loc, "element [" + w.assign_index + "] of " + name + " is not known");
    } else {
      if (all.size() <= static_cast<std::size_t>(*k)) all.resize(static_cast<std::size_t>(*k) + 1);
      all[static_cast<std::size_t>(*k)] = std::move(values[0]);
      set_var(name, std::move(all), true, w.loc);
    }
  } else if (w.assign_append && existed) {
    std::vector<Text> all = it->second.values;
    const bool array = it->second.array || w.is_array;
    if (w.is_array) {
      all.insert(all.end(), values.begin(), values.end());
    } else if (!values.empty()) {
      if (all.empty()) all.emplace_back();
      all[0].append(values[0]);
    }
    set_var(name, std::move(all), array, w.loc);
  } else {
    set_var(name, std::move(values), w.is_array, w.loc);
  }
  Variable& v = st_.vars[name];
  if (exported && !v.exported) {
    v.exported = true;
    exported_cache_.reset();
  }
  ShellAssignment a = assignment(name, v.values, w.loc, v.exported);
  if (record != nullptr) record->prefix.push_back(a);
  out_.assignments.push_back(std::move(a));
  return ok_status();
}

Result<Tri> Evaluator::declaration(const Command& c, std::size_t first,
                                   const std::string& builtin) {
  bool exporting = builtin == "export";
  bool global = false;
  for (std::size_t k = first + 1; k < c.words.size(); ++k) {
    const std::string& t = c.words[k].plain;
    if (t.size() > 1 && t[0] == '-') {
      exporting = exporting || t.find('x') != std::string::npos;
      global = global || t.find('g') != std::string::npos;
    }
  }
  const bool local = builtin == "local" ||
                     (!global && call_depth_ > 0 && builtin != "export" && builtin != "readonly");
  for (std::size_t k = first + 1; k < c.words.size(); ++k) {
    const Word& w = c.words[k];
    if (!w.assign_name.empty()) {
      GRPO_TRY_STATUS(assign(w, exporting, local, nullptr));
      continue;
    }
    GRPO_TRY(std::vector<Field> fs, fields(w));
    for (const Field& f : fs) {
      const std::string& name = f.text.s;
      if (!is_name(name) || f.text.unresolved()) continue;
      if (local && !st_.frames.empty() && st_.frames.back().count(name) == 0) {
        const auto it = st_.vars.find(name);
        st_.frames.back()[name] =
            it == st_.vars.end() ? std::nullopt : std::optional<Variable>(it->second);
        if (builtin == "local") st_.vars.erase(name);
      }
      if (exporting) {
        Variable& v = st_.vars[name];
        v.exported = true;
        v.assigned = c.words[k].loc;
        exported_cache_.reset();
      }
    }
  }
  return Tri::kTrue;
}

Result<Tri> Evaluator::set_builtin(const std::vector<Field>& args) {
  for (std::size_t k = 1; k < args.size(); ++k) {
    const std::string& a = args[k].text.s;
    if (a == "--" || a.empty() || (a[0] != '-' && a[0] != '+')) {
      st_.positional.assign(args.begin() + static_cast<std::ptrdiff_t>(k + (a == "--")),
                            args.end());
      break;
    }
    const bool on = a[0] == '-';
    for (std::size_t i = 1; i < a.size(); ++i) {
      if (a[i] == 'u') st_.nounset = on;
      if (a[i] == 'o' && k + 1 < args.size() && args[++k].text.s == "nounset") st_.nounset = on;
    }
  }
  return Tri::kTrue;
}

Result<Tri> Evaluator::source(const std::vector<Field>& args, Loc at) {
  if (args.size() < 2) return Tri::kUnknown;
  const Field& f = args[1];
  const std::string shown = "`" + args[0].text.s + " " + f.text.s + "` at " + where(at);
  auto skip = [&](const std::string& why) -> Result<Tri> {
    note(shown + " is not followed: " + why);
    return Tri::kUnknown;
  };
  if (f.from_args || f.text.unresolved())
    return skip("the file name is not known statically (" + reasons_[f.text.first_reason()].why +
                ")");
  // A name that starts with the script's directory ("$(dirname "$0")/x.sh") is relative to the
  // working directory, as bash reads it; any other relative name is taken relative to the
  // script's directory. Either way the file must be inside that directory.
  const std::string& name = f.text.s;
  if (name.empty()) return skip("the file name is empty");
  const std::vector<std::string> base = split_path(script_dir_.empty() ? "." : script_dir_);
  const bool base_abs = !script_dir_.empty() && script_dir_[0] == '/';
  const std::string prefix =
      script_dir_.empty() || script_dir_ == "/" ? script_dir_ : script_dir_ + "/";
  const std::string candidate = name[0] == '/' || name.rfind(prefix, 0) == 0 ? name : prefix + name;
  const std::vector<std::string> parts = split_path(candidate);
  std::optional<std::string> path;
  if ((candidate[0] == '/') == base_abs && parts.size() > base.size() &&
      std::equal(base.begin(), base.end(), parts.begin()) &&
      std::find(parts.begin(), parts.end(), "..") == parts.end()) {
    path = join_path(parts, base_abs);
  }
  if (!path) return skip("only files in the script's directory are read");
  if (!options_.read_file) return skip("no file reader was given");
  if (std::find(active_.begin(), active_.end(), *path) != active_.end())
    return skip("the file is already being read (it sources itself)");
  if (source_depth_ >= options_.max_source_depth || files_.size() > kMaxSourcedFiles) {
    return skip("sourced files nested deeper than " + std::to_string(options_.max_source_depth) +
                " or more than " + std::to_string(kMaxSourcedFiles) + " files");
  }
  auto text = options_.read_file(*path);
  if (!text.ok()) return skip(text.error().message);
  if (text->size() > kMaxScriptBytes || text->find('\0') != std::string::npos)
    return skip("not a text file of at most 4 MiB");
  GRPO_TRY_STATUS(charge(text->size(), at));
  const auto index = static_cast<std::uint32_t>(files_.size());
  files_.push_back(*path);
  out_.sourced.push_back(*path);
  GRPO_TRY(List l, parse_script(text.value(), Loc{index, 1, 1}, *path));
  std::vector<Field> saved;
  const bool with_args = args.size() > 2;
  if (with_args) {
    saved = std::move(st_.positional);
    st_.positional.assign(args.begin() + 2, args.end());
  }
  returned_.emplace_back();
  ++source_depth_;
  active_.push_back(*path);
  auto r = list(l);
  active_.pop_back();
  --source_depth_;
  if (!r.ok()) return r.error();
  join_returns("the ways out of " + shown);
  if (with_args) st_.positional = std::move(saved);
  return Tri::kTrue;
}

}  // namespace grpo::core::shell
