// The control-flow phase of the shell reader: follows the parsed script (shell_parse.cpp) in
// order with the expansions of shell_expand.cpp. Decidable if / case / && / || take their branch;
// undecidable ones are read on every branch and the states merged (variables that differ become
// unresolved); loops are read once; functions are followed at each call; `source` reads files
// next to the script. Nothing is run.
#include "grpo/shell/shell_script.h"

#include <algorithm>
#include <charconv>
#include <functional>

#include "shell_eval.h"

namespace grpo::core {
namespace shell {
namespace {

bool same(const Variable& a, const Variable& b) {
  if (a.array != b.array || a.values.size() != b.values.size()) return false;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    const Text& x = a.values[i];
    const Text& y = b.values[i];
    if (x.s != y.s) return false;
    for (std::size_t k = 0; k < x.info.size(); ++k)
      if (x.info[k].reason != y.info[k].reason) return false;
  }
  return true;
}

// Commands whose failure a launch script does not plan for: taken to succeed.
bool assumed_to_succeed(const std::string& name) {
  for (const char* n : {"echo",  "printf", "cd",    "pushd", "popd",   "mkdir",  "cp",    "mv",
                        "ln",    "rm",     "touch", "chmod", "trap",   "ulimit", "umask", "shopt",
                        "sleep", "wait",   "alias", "hash",  "source", "."}) {
    if (name == n) return true;
  }
  return false;
}

std::string condition_text(const List& l) {
  std::string out;
  for (const AndOr& a : l) out += (out.empty() ? "" : "; ") + a.text;
  return out;
}

}  // namespace

Evaluator::Evaluator(const ShellReadOptions& options, std::string script_name)
    : options_(options), script_name_(std::move(script_name)) {
  reasons_.push_back(Reason{UnresolvedKind::kNone, ""});
  files_.push_back(script_name_);
  const auto slash = script_name_.rfind('/');
  script_dir_ = slash == std::string::npos ? "" : slash == 0 ? "/" : script_name_.substr(0, slash);
  for (const auto& [k, v] : options.environment) st_.vars[k].values = {Text::made(v, Loc{})};
}

void Evaluator::note(const std::string& text) {
  if (out_.notes.size() < 64 &&
      std::find(out_.notes.begin(), out_.notes.end(), text) == out_.notes.end()) {
    out_.notes.push_back(text);
  }
}

std::string Evaluator::where(Loc at) const {
  return files_[at.file] + ":" + std::to_string(at.line) + ":" + std::to_string(at.col);
}

Result<ParsedScript> Evaluator::run(std::string_view text) {
  out_.file = script_name_;
  GRPO_TRY(List l, parse_script(text, Loc{0, 1, 1}, script_name_));
  active_.push_back(normalize_path(script_name_));
  GRPO_TRY_STATUS(list(l));
  GRPO_TRY(auto exported, exported_now(Loc{}));
  for (const auto& [name, a] : *exported) out_.exports[name] = a;
  return std::move(out_);
}

Result<std::shared_ptr<const std::map<std::string, ShellAssignment>>> Evaluator::exported_now(
    Loc at) {
  if (exported_cache_) return exported_cache_;
  auto m = std::make_shared<std::map<std::string, ShellAssignment>>();
  for (const auto& [name, v] : st_.vars) {
    if (v.exported) (*m)[name] = assignment(name, v.values, v.assigned, true);
  }
  GRPO_TRY_STATUS(charge(16 * m->size(), at));
  exported_cache_ = m;
  return exported_cache_;
}

Result<State> Evaluator::copy_state(Loc at) {
  std::size_t size = 256;
  for (const auto& [name, v] : st_.vars) {
    size += 32 + name.size();
    for (const auto& t : v.values) size += t.s.size();
  }
  GRPO_TRY_STATUS(charge(size, at));
  return st_;
}

void Evaluator::set_var(const std::string& name, std::vector<Text> values, bool array, Loc at) {
  Variable& v = st_.vars[name];
  v.values = std::move(values);
  v.array = array;
  v.assigned = at;
  if (v.exported) exported_cache_.reset();
}

void Evaluator::mark_unknown(const std::string& name, Loc at, const std::string& why) {
  set_var(name, {unresolved_text("$" + name, at, UnresolvedKind::kConditional, why)}, false, at);
}

void Evaluator::merge(std::vector<State> outcomes, const std::string& what) {
  exported_cache_.reset();
  std::vector<State> go_on;
  std::optional<State> exited;
  for (State& s : outcomes) {
    if (s.flow == Flow::kExit) {
      if (!exited) exited = std::move(s);
    } else if (s.flow == Flow::kReturn && !returned_.empty()) {
      returned_.back().push_back(std::move(s));
    } else {
      s.flow = Flow::kNormal;
      go_on.push_back(std::move(s));
    }
  }
  if (go_on.empty()) {
    if (!returned_.empty() && !returned_.back().empty()) {
      st_ = std::move(returned_.back().back());
      returned_.back().pop_back();
    } else if (exited) {
      st_ = std::move(*exited);
    }
    return;
  }
  State m = std::move(go_on[0]);
  auto differs = [&](const std::string& name, const Variable* a, const Variable* b) {
    Variable u;
    u.exported = (a != nullptr && a->exported) || (b != nullptr && b->exported);
    u.assigned = a != nullptr ? a->assigned : b->assigned;
    u.values = {unresolved_text("$" + name, u.assigned, UnresolvedKind::kConditional,
                                "$" + name + " differs between " + what)};
    return u;
  };
  for (std::size_t k = 1; k < go_on.size(); ++k) {
    State& s = go_on[k];
    for (auto& [name, var] : m.vars) {
      const auto other = s.vars.find(name);
      if (other == s.vars.end()) {
        var = differs(name, &var, nullptr);
      } else if (!same(var, other->second)) {
        var = differs(name, &var, &other->second);
      } else {
        var.exported = var.exported || other->second.exported;
      }
    }
    for (auto& [name, var] : s.vars) {
      if (m.vars.count(name) == 0) m.vars[name] = differs(name, nullptr, &var);
    }
    for (auto& [name, f] : s.functions) m.functions.emplace(name, f);
    m.nounset = m.nounset || s.nounset;
  }
  st_ = std::move(m);
}

Status Evaluator::list(const List& l) {
  for (const AndOr& a : l) {
    if (st_.flow != Flow::kNormal) break;
    GRPO_TRY(Tri t, and_or(a));
    (void)t;
  }
  return ok_status();
}

Result<Tri> Evaluator::list_status(const List& l) {
  Tri s = Tri::kTrue;
  for (const AndOr& a : l) {
    if (st_.flow != Flow::kNormal) break;
    GRPO_TRY(s, and_or(a));
  }
  return s;
}

Result<Tri> Evaluator::and_or(const AndOr& a) {
  if (a.background) {  // runs in a subshell
    GRPO_TRY(State saved, copy_state(a.loc));
    AndOr fg = a;
    fg.background = false;
    GRPO_TRY(Tri t, and_or(fg));
    (void)t;
    st_ = std::move(saved);
    exported_cache_.reset();
    return Tri::kTrue;
  }
  const std::string note =
      "`" + a.text + "` at " + where(a.loc) + " cannot be decided statically; both ways were read";
  bool noted = false;
  // Follows pipelines k.. given the status s so far.
  // Past 8 undecidable steps in one list, each further step is read and merged with not
  // reading it, in order (no more branching into every combination).
  std::function<Result<Tri>(std::size_t, Tri, int)> from = [&](std::size_t k, Tri s,
                                                               int depth) -> Result<Tri> {
    for (; k < a.pipelines.size() && st_.flow == Flow::kNormal; ++k) {
      const bool is_and = a.and_op[k - 1];
      if (s != Tri::kUnknown) {
        if ((s == Tri::kTrue) == is_and) {
          GRPO_TRY(s, pipeline(a.pipelines[k]));
        }
        continue;
      }
      if (!noted) {
        noted = true;
        conditions_.push_back(note);
      }
      if (depth >= 8) {  // run or not, merged step by step
        GRPO_TRY(State skipped, copy_state(a.loc));
        GRPO_TRY(Tri ran, pipeline(a.pipelines[k]));
        (void)ran;
        std::vector<State> both;
        both.push_back(std::move(st_));
        both.push_back(std::move(skipped));
        merge(std::move(both), "the ways through " + note.substr(0, note.find(" cannot")));
        continue;
      }
      GRPO_TRY(State skipped, copy_state(a.loc));
      GRPO_TRY(Tri ran, pipeline(a.pipelines[k]));
      GRPO_TRY(Tri r1, from(k + 1, ran, depth + 1));
      State after_run = std::move(st_);
      st_ = std::move(skipped);
      GRPO_TRY(Tri r2, from(k + 1, tri(!is_and), depth + 1));
      std::vector<State> both;
      both.push_back(std::move(after_run));
      both.push_back(std::move(st_));
      merge(std::move(both), "the ways through " + note.substr(0, note.find(" cannot")));
      return r1 == r2 ? r1 : Tri::kUnknown;
    }
    return s;
  };
  GRPO_TRY(Tri first, pipeline(a.pipelines[0]));
  auto r = from(1, first, 0);
  if (noted) conditions_.pop_back();
  return r;
}

Result<Tri> Evaluator::pipeline(const Pipeline& p) {
  Tri s = Tri::kTrue;
  if (p.commands.size() == 1) {
    GRPO_TRY(s, command(p.commands[0]));
  } else {
    for (const Command& c : p.commands) {  // each part of a pipeline runs in a subshell
      GRPO_TRY(State saved, copy_state(c.loc));
      GRPO_TRY(s, command(c));
      st_ = std::move(saved);
      exported_cache_.reset();
    }
  }
  return p.negated ? tri_not(s) : s;
}

Result<Tri> Evaluator::command(const Command& c) {
  GRPO_TRY_STATUS(charge(16, c.loc));
  // Compound commands inside function calls inside sources: bounded, whatever the input.
  if (nesting_ >= kMaxEvalNesting) {
    return make_error(
        ErrorKind::kParse,
        "commands, calls and sources nested deeper than " + std::to_string(kMaxEvalNesting),
        {files_[c.loc.file], c.loc.line, c.loc.col});
  }
  ++nesting_;
  auto r = command_inner(c);
  --nesting_;
  return r;
}

Result<Tri> Evaluator::command_inner(const Command& c) {
  switch (c.kind) {
    case Command::Kind::kSimple:
      return simple(c);
    case Command::Kind::kIf:
      return if_command(c);
    case Command::Kind::kCase:
      return case_command(c);
    case Command::Kind::kFor:
    case Command::Kind::kWhile:
    case Command::Kind::kUntil:
      return loop_command(c);
    case Command::Kind::kGroup:
      return list_status(c.body);
    case Command::Kind::kSubshell: {
      GRPO_TRY(State saved, copy_state(c.loc));
      GRPO_TRY(Tri s, list_status(c.body));
      st_ = std::move(saved);
      exported_cache_.reset();
      return s;
    }
    case Command::Kind::kFunction:
      st_.functions[c.name] = c.function_body;
      return Tri::kTrue;
    case Command::Kind::kCond: {
      std::vector<Text> args;
      for (const Word& w : c.words) {
        GRPO_TRY(Text t, single(w));
        args.push_back(std::move(t));
      }
      return test(args, true);
    }
    case Command::Kind::kArith: {
      auto w = parse_word_text(c.text, c.loc, files_[c.loc.file], true);
      if (!w.ok()) return Tri::kUnknown;
      GRPO_TRY(Text t, single(w.value()));
      const auto v = t.unresolved() ? std::nullopt : arithmetic(t.s);
      return v ? tri(*v != 0) : Tri::kUnknown;
    }
  }
  return Tri::kUnknown;
}

Result<Tri> Evaluator::if_command(const Command& c) {
  std::vector<State> outcomes;
  std::string note;
  auto undecided = [&](const Clause& cl) {
    if (!note.empty()) return;
    note = "`if " + condition_text(cl.condition) + "` at " + where(c.loc);
    conditions_.push_back(note + " cannot be decided statically; both branches were read");
  };
  auto finish = [&](Tri s) -> Result<Tri> {
    if (note.empty()) return s;
    outcomes.push_back(std::move(st_));
    merge(std::move(outcomes), "the branches of " + note);
    conditions_.pop_back();
    return Tri::kUnknown;
  };
  for (const Clause& cl : c.clauses) {
    GRPO_TRY(Tri t, list_status(cl.condition));
    if (st_.flow != Flow::kNormal) return finish(t);
    if (t == Tri::kTrue) {
      GRPO_TRY(Tri s, list_status(cl.body));
      return finish(s);
    }
    if (t == Tri::kFalse) continue;
    undecided(cl);
    GRPO_TRY(State before, copy_state(c.loc));
    GRPO_TRY(Tri s, list_status(cl.body));
    (void)s;
    outcomes.push_back(std::move(st_));
    st_ = std::move(before);
  }
  GRPO_TRY(Tri s, list_status(c.body));
  return finish(s);
}

Result<Tri> Evaluator::case_command(const Command& c) {
  GRPO_TRY(Text subject, single(c.subject));
  std::vector<State> outcomes;
  std::string note;
  auto finish = [&](Tri s) -> Result<Tri> {
    if (note.empty()) return s;
    outcomes.push_back(std::move(st_));
    merge(std::move(outcomes), "the arms of " + note);
    conditions_.pop_back();
    return Tri::kUnknown;
  };
  // Runs arm i and the arms it falls through to (;&).
  auto run_arm = [&](std::size_t i) -> Result<Tri> {
    Tri s = Tri::kTrue;
    for (; i < c.arms.size(); ++i) {
      GRPO_TRY(s, list_status(c.arms[i].body));
      if (!c.arms[i].fallthrough || st_.flow != Flow::kNormal) break;
    }
    return s;
  };
  for (std::size_t i = 0; i < c.arms.size(); ++i) {
    Tri m = Tri::kFalse;
    for (const Word& pw : c.arms[i].patterns) {
      GRPO_TRY(Text pat, single(pw));
      const Tri one = subject.unresolved() || pat.unresolved() ? Tri::kUnknown
                                                               : tri(glob_match(pat, subject.s));
      m = tri_or(m, one);
    }
    if (m == Tri::kFalse) continue;
    if (m == Tri::kTrue) {
      GRPO_TRY(Tri s, run_arm(i));
      if (c.arms[i].keep_matching && st_.flow == Flow::kNormal) continue;
      return finish(s);
    }
    if (note.empty()) {
      note = "`case " + raw_text(c.subject) + "` at " + where(c.loc);
      conditions_.push_back(note + " cannot be decided statically; every arm was read");
    }
    GRPO_TRY(State before, copy_state(c.loc));
    GRPO_TRY(Tri s, run_arm(i));
    (void)s;
    outcomes.push_back(std::move(st_));
    st_ = std::move(before);
  }
  return finish(Tri::kTrue);
}

Result<Tri> Evaluator::loop_command(const Command& c) {
  std::string note;
  bool runs_for_sure = false;
  if (c.kind == Command::Kind::kFor) {
    note = "`for " + (c.name.empty() ? std::string("((...))") : c.name) + "` at " + where(c.loc);
    std::vector<Field> items;
    if (c.has_list) {
      for (const Word& w : c.words) {
        GRPO_TRY(std::vector<Field> fs, fields(w));
        items.insert(items.end(), fs.begin(), fs.end());
      }
    } else {
      items = st_.positional;
    }
    bool known = !c.name.empty();
    for (const auto& f : items) known = known && !f.from_args && !f.text.unresolved();
    if (known && items.empty()) return Tri::kTrue;
    runs_for_sure = known;
  } else {
    const bool is_while = c.kind == Command::Kind::kWhile;
    note = std::string("`") + (is_while ? "while " : "until ") +
           condition_text(c.clauses[0].condition) + "` at " + where(c.loc);
    GRPO_TRY(Tri t, list_status(c.clauses[0].condition));
    if (st_.flow != Flow::kNormal || t == tri(!is_while)) return Tri::kTrue;
  }
  conditions_.push_back(note + ": the loop body was read once");
  std::vector<State> outcomes;
  if (!runs_for_sure) {
    GRPO_TRY(State before, copy_state(c.loc));
    outcomes.push_back(std::move(before));
  }
  if (!c.name.empty()) mark_unknown(c.name, c.loc, "$" + c.name + " is the variable of " + note);
  const List& body = c.kind == Command::Kind::kFor ? c.body : c.clauses[0].body;
  ++loop_depth_;
  auto r = list(body);
  --loop_depth_;
  if (!r.ok()) return r.error();
  if (st_.flow == Flow::kBreak) st_.flow = Flow::kNormal;
  outcomes.push_back(std::move(st_));
  merge(std::move(outcomes), "the runs of " + note);
  conditions_.pop_back();
  return Tri::kUnknown;
}

Result<Tri> Evaluator::simple(const Command& c) {
  std::size_t first = 0;
  while (first < c.words.size() && !c.words[first].assign_name.empty()) ++first;
  ShellCommand rec;
  rec.file = files_[c.loc.file];
  rec.line = c.loc.line;
  GRPO_TRY(rec.exported, exported_now(c.loc));
  rec.conditions = conditions_;
  std::vector<Field> fs;
  std::vector<Loc> locs;
  for (std::size_t k = first; k < c.words.size(); ++k) {
    GRPO_TRY(std::vector<Field> more, fields(c.words[k]));
    for (auto& f : more) {
      fs.push_back(std::move(f));
      locs.push_back(c.words[k].loc);
    }
  }
  if (fs.empty()) {  // assignments only (or a command that expands to nothing)
    for (std::size_t k = 0; k < first; ++k) GRPO_TRY_STATUS(assign(c.words[k], false, false, &rec));
    out_.commands.push_back(std::move(rec));
    return Tri::kTrue;
  }
  for (std::size_t k = 0; k < first; ++k) {
    GRPO_TRY(std::vector<Text> values, assigned_values(c.words[k]));
    ShellAssignment a = assignment(c.words[k].assign_name, values, c.words[k].loc, true);
    rec.prefix.push_back(a);
    out_.assignments.push_back(std::move(a));
  }
  for (std::size_t k = 0; k < fs.size(); ++k) rec.words.push_back(to_shell_word(fs[k], locs[k]));
  GRPO_TRY_STATUS(charge(rec.words.size() * 16 + rec.conditions.size() * 64, c.loc));
  out_.commands.push_back(std::move(rec));

  if (fs[0].text.unresolved() || fs[0].from_args) return Tri::kUnknown;
  const std::string name = fs[0].text.s;
  const std::string head = c.words[first].plain;
  if (st_.functions.count(name) > 0) {
    return call(name, std::vector<Field>(fs.begin() + 1, fs.end()), c.loc);
  }
  if (name == "source" || name == ".") return source(fs, c.loc);
  if (head == "export" || head == "declare" || head == "typeset" || head == "local" ||
      head == "readonly") {
    return declaration(c, first, head);
  }
  if (name == "set") return set_builtin(fs);
  if (name == "shift") {
    std::size_t n = 1;
    if (fs.size() > 1) {
      const std::string& a = fs[1].text.s;
      std::from_chars(a.data(), a.data() + a.size(), n);
    }
    auto& pos = st_.positional;
    while (n-- > 0 && !pos.empty() && !pos.front().from_args) pos.erase(pos.begin());
    return Tri::kTrue;
  }
  if (name == "unset") {
    const bool functions = fs.size() > 1 && fs[1].text.s == "-f";
    for (std::size_t k = 1; k < fs.size(); ++k) {
      if (functions) {
        st_.functions.erase(fs[k].text.s);
      } else {
        st_.vars.erase(fs[k].text.s);
      }
    }
    exported_cache_.reset();
    return Tri::kTrue;
  }
  if (name == "exit") {
    st_.flow = Flow::kExit;
    return Tri::kTrue;
  }
  if (name == "return") {
    if (call_depth_ > 0 || source_depth_ > 0) st_.flow = Flow::kReturn;
    return Tri::kTrue;
  }
  if (name == "break" || name == "continue") {
    if (loop_depth_ > 0) st_.flow = Flow::kBreak;
    return Tri::kTrue;
  }
  if (name == "true" || name == ":") return Tri::kTrue;
  if (name == "false") return Tri::kFalse;
  if (name == "[" || name == "test") {
    std::vector<Text> args;
    for (std::size_t k = 1; k < fs.size(); ++k) {
      if (fs[k].from_args) return Tri::kUnknown;
      args.push_back(fs[k].text);
    }
    if (name == "[") {
      if (args.empty() || args.back().s != "]") return Tri::kUnknown;
      args.pop_back();
    }
    return test(args, false);
  }
  // Builtins that set variables from input: the variables become unknown.
  std::vector<std::string> targets;
  if (name == "read" || name == "mapfile" || name == "readarray") {
    for (std::size_t k = 1; k < fs.size(); ++k) {
      const std::string& a = fs[k].text.s;
      if (a.size() > 1 && a[0] == '-') {
        if (a == "-a" && k + 1 < fs.size())
          targets.push_back(fs[++k].text.s);
        else if (a.find_first_of("pdntuiNCcsO") != std::string::npos && a.size() == 2)
          ++k;
        continue;
      }
      targets.push_back(a);
    }
    if (targets.empty()) targets.push_back(name == "read" ? "REPLY" : "MAPFILE");
  } else if (name == "printf" && fs.size() > 2 && fs[1].text.s == "-v") {
    targets.push_back(fs[2].text.s);
  } else if (name == "getopts" && fs.size() > 2) {
    targets.push_back(fs[2].text.s);
  }
  for (const auto& t : targets) {
    if (is_name(t))
      mark_unknown(t, c.loc, "$" + t + " is read by `" + name + "` at " + where(c.loc));
  }
  return assumed_to_succeed(name) ? Tri::kTrue : Tri::kUnknown;
}

Result<Tri> Evaluator::call(const std::string& name, std::vector<Field> args, Loc at) {
  if (call_depth_ >= kMaxCallDepth) {
    note(where(at) + ": the call of " + name +
         " is not followed: function calls nested deeper than " + std::to_string(kMaxCallDepth));
    return Tri::kUnknown;
  }
  const std::shared_ptr<const Command> body = st_.functions[name];
  std::vector<Field> saved = std::move(st_.positional);
  st_.positional = std::move(args);
  st_.frames.emplace_back();
  returned_.emplace_back();
  ++call_depth_;
  auto r = command(*body);
  --call_depth_;
  if (!r.ok()) return r;
  join_returns("the ways out of " + name + " (called at " + where(at) + ")");
  if (!st_.frames.empty()) {
    for (auto& [n, v] : st_.frames.back()) {
      if (v) {
        st_.vars[n] = std::move(*v);
      } else {
        st_.vars.erase(n);
      }
    }
    st_.frames.pop_back();
  }
  st_.positional = std::move(saved);
  exported_cache_.reset();
  return r;
}

void Evaluator::join_returns(const std::string& what) {
  if (st_.flow == Flow::kReturn) st_.flow = Flow::kNormal;
  std::vector<State> returns = std::move(returned_.back());
  returned_.pop_back();
  if (!returns.empty() && st_.flow != Flow::kExit) {
    for (auto& s : returns) s.flow = Flow::kNormal;
    returns.push_back(std::move(st_));
    merge(std::move(returns), what);
  }
}

}  // namespace shell

Result<ParsedScript> read_shell_script(std::string_view text, std::string_view file_name,
                                       const ShellReadOptions& options) {
  if (text.size() > shell::kMaxScriptBytes) {
    return make_error(ErrorKind::kParse, "script larger than 4 MiB",
                      {std::string(file_name), 0, 0});
  }
  if (text.find('\0') != std::string_view::npos) {
    return make_error(ErrorKind::kParse, "not a text file (NUL byte)",
                      {std::string(file_name), 0, 0});
  }
  shell::Evaluator evaluator(options, std::string(file_name));
  return evaluator.run(text);
}

}  // namespace grpo::core
