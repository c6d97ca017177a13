// The expansion phase of the shell reader: parameter expansions, word splitting of unquoted
// expansions (IFS = space, tab, newline), "$@" and "${ARR[@]}", the dirname / pwd command
// substitution idioms. Every character keeps the place it was written; see shell_eval.h.
// Arithmetic, patterns and tests are in shell_conditions.cpp.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>

#include "grpo/core/text.h"
#include "shell_eval.h"

namespace grpo::core::shell {
namespace {

bool is_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string dirname_of(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const auto slash = s.rfind('/');
  if (slash == std::string::npos) return ".";
  s.resize(slash);
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s.empty() ? "/" : s;
}

std::string basename_of(std::string s, const std::string& suffix) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const auto slash = s.rfind('/');
  if (slash != std::string::npos && s.size() > 1) s = s.substr(slash + 1);
  if (!suffix.empty() && s.size() > suffix.size() &&
      s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
    s.resize(s.size() - suffix.size());
  }
  return s;
}

std::uint8_t expansion_flags(bool quoted, bool field, bool unresolved) {
  if (quoted) return static_cast<std::uint8_t>(field ? kQuotedChar | kFieldChar : kQuotedChar);
  return static_cast<std::uint8_t>(unresolved ? kFieldChar : kSplitChar | kFieldChar);
}

}  // namespace

// Where the character `n` of `body` is, when `body` starts at `start`.
Loc offset_loc(Loc start, const std::string& body, std::size_t n) {
  for (std::size_t i = 0; i < n && i < body.size(); ++i) {
    if (body[i] == '\n') {
      ++start.line;
      start.col = 1;
    } else {
      ++start.col;
    }
  }
  return start;
}

Text Text::substr(std::size_t pos, std::size_t n) const {
  Text t;
  if (pos >= s.size()) return t;
  t.s = s.substr(pos, n);
  t.info.assign(info.begin() + static_cast<std::ptrdiff_t>(pos),
                info.begin() + static_cast<std::ptrdiff_t>(pos + t.s.size()));
  return t;
}

std::uint32_t Text::first_reason() const {
  for (const auto& i : info)
    if (i.reason != 0) return i.reason;
  return 0;
}

Text Text::made(std::string_view s, Loc at, std::uint32_t reason) {
  Text t;
  t.s = std::string(s);
  t.info.assign(s.size(), CharInfo{at, reason, 0});
  return t;
}

// Collects the pieces of one word into fields.
struct Evaluator::Builder {
  bool split = true;  // false: one field (assignment values, [[ ]] operands)
  std::vector<Field> out;
  Text cur;
  bool has = false;           // cur holds something
  bool quoted_empty = false;  // "" or '' seen: an empty word is kept
  bool multi = false;         // "$@" / "${A[@]}" seen: an empty one leaves no word
  bool args = false;          // "$@" of the script

  void add(const Text& t) {
    for (std::size_t i = 0; i < t.s.size(); ++i) {
      const char c = t.s[i];
      if (split && (t.info[i].flags & kSplitChar) && (c == ' ' || c == '\t' || c == '\n')) {
        cut(false);
        continue;
      }
      cur.push(c, t.info[i]);
      has = true;
    }
  }
  void cut(bool force) {
    if (force || has || args || (quoted_empty && !multi))
      out.push_back(Field{std::move(cur), args});
    cur = Text{};
    has = quoted_empty = args = false;
  }
  std::vector<Field> finish() {
    if (!split) {
      out.push_back(Field{std::move(cur), args});
    } else if (has || args || (quoted_empty && !multi)) {
      out.push_back(Field{std::move(cur), args});
    }
    return std::move(out);
  }
};

std::uint32_t Evaluator::reason(UnresolvedKind kind, const std::string& why) {
  const auto key = std::make_pair(static_cast<int>(kind), why);
  const auto it = reason_ids_.find(key);
  if (it != reason_ids_.end()) return it->second;
  reasons_.push_back(Reason{kind, why});
  const auto id = static_cast<std::uint32_t>(reasons_.size() - 1);
  reason_ids_.emplace(key, id);
  return id;
}

Text Evaluator::unresolved_text(const std::string& text, Loc at, UnresolvedKind kind,
                                const std::string& why) {
  return Text::made(text, at, reason(kind, why));
}

Status Evaluator::charge(std::size_t work, Loc at) {
  work_ += work;
  if (work_ <= kWorkBudget) return ok_status();
  return make_error(ErrorKind::kParse,
                    "the script is too large to follow statically (more than " +
                        std::to_string(kWorkBudget >> 20) + "M characters expanded)",
                    {files_[at.file], at.line, at.col});
}

Result<std::vector<Field>> Evaluator::fields(const Word& w, int depth) {
  Builder b;
  GRPO_TRY_STATUS(expand_parts(w.parts, false, false, b, depth));
  return b.finish();
}

Result<Text> Evaluator::single(const Word& w, int depth) {
  Builder b;
  b.split = false;
  GRPO_TRY_STATUS(expand_parts(w.parts, false, false, b, depth));
  return std::move(b.finish().front().text);
}

Result<std::vector<Text>> Evaluator::assigned_values(const Word& w) {
  std::vector<Text> out;
  if (w.is_array) {
    for (const Word& e : w.array) {
      GRPO_TRY(std::vector<Field> fs, fields(e));
      for (auto& f : fs) {
        if (f.from_args)
          f.text = unresolved_text("$@", e.loc, UnresolvedKind::kPositional,
                                   "the script's arguments $@");
        out.push_back(std::move(f.text));
      }
    }
  } else {
    Word value = w;
    if (!value.parts.empty() && value.parts[0].kind == WordPart::Kind::kLiteral) {
      WordPart& first = value.parts[0];
      first.text.erase(0, w.assign_prefix);
      first.locs.erase(first.locs.begin(),
                       first.locs.begin() + static_cast<std::ptrdiff_t>(
                                                std::min(w.assign_prefix, first.locs.size())));
    }
    GRPO_TRY(Text t, single(value));
    out.push_back(std::move(t));
  }
  for (auto& t : out)
    for (auto& i : t.info) i.flags = 0;
  return out;
}

Status Evaluator::expand_parts(const std::vector<WordPart>& parts, bool in_dq, bool literal_splits,
                               Builder& b, int depth) {
  for (const WordPart& p : parts) {
    const bool quoted = p.quoted || in_dq;
    switch (p.kind) {
      case WordPart::Kind::kLiteral: {
        if (p.text.empty()) {
          if (p.quoted) b.quoted_empty = true;
          break;
        }
        GRPO_TRY_STATUS(charge(p.text.size(), p.loc));
        Text t;
        const std::uint8_t flags = quoted           ? kQuotedChar
                                   : literal_splits ? (kSplitChar | kFieldChar)
                                                    : 0;
        for (std::size_t i = 0; i < p.text.size(); ++i)
          t.push(p.text[i], CharInfo{i < p.locs.size() ? p.locs[i] : p.loc, 0, flags});
        b.add(t);
        break;
      }
      case WordPart::Kind::kTilde: {
        const auto home = st_.vars.find("HOME");
        Text t = home != st_.vars.end() && !home->second.values.empty() ? home->second.values[0]
                                                                        : Text::made("~", p.loc);
        for (auto& i : t.info) {
          i.flags = kQuotedChar;
          if (i.loc.line == 0) i.loc = p.loc;
        }
        b.add(t);
        break;
      }
      case WordPart::Kind::kParam:
        GRPO_TRY_STATUS(expand_param(p, quoted, b, depth));
        break;
      case WordPart::Kind::kCommand:
      case WordPart::Kind::kArith: {
        Text t;
        if (p.kind == WordPart::Kind::kCommand) {
          GRPO_TRY(t, substitution(p, depth));
        } else {
          const std::string raw = "$((" + p.text + "))";
          const std::string why = "arithmetic expansion " + raw;
          auto w = depth < kMaxExpansionDepth
                       ? parse_word_text(p.text, p.body_loc, files_[p.loc.file], true)
                       : Result<Word>(make_error(ErrorKind::kParse, "too deep"));
          std::optional<long long> v;
          if (w.ok()) {
            GRPO_TRY(Text e, single(w.value(), depth + 1));
            if (!e.unresolved()) v = arithmetic(e.s);
          }
          t = v ? Text::made(std::to_string(*v), p.loc)
                : unresolved_text(raw, p.loc, UnresolvedKind::kArithmetic, why);
        }
        for (auto& i : t.info) i.flags = expansion_flags(quoted, false, i.reason != 0);
        GRPO_TRY_STATUS(charge(t.s.size(), p.loc));
        b.add(t);
        break;
      }
    }
  }
  return ok_status();
}

Result<std::optional<long long>> Evaluator::index_of(const std::string& index) {
  auto w = parse_word_text(index, Loc{}, files_[0], true);
  if (!w.ok()) return std::optional<long long>{};
  GRPO_TRY(Text t, single(w.value(), kMaxExpansionDepth - 1));
  if (t.unresolved()) return std::optional<long long>{};
  return arithmetic(t.s);
}

Result<Evaluator::Value> Evaluator::lookup(const std::string& name, const std::string& index,
                                           Loc at) {
  Value v;
  const std::string shown = "$" + name + (index.empty() ? "" : "[" + index + "]");
  const std::vector<Field>& pos = st_.positional;
  std::size_t known = 0;  // positional parameters before the script's unknown arguments
  while (known < pos.size() && !pos[known].from_args) ++known;
  if (name == "@" || name == "*") {
    v.set = true;
    v.multi = true;
    v.star = name == "*";
    v.args = known < pos.size();
    for (std::size_t k = 0; k < known; ++k) v.items.push_back(pos[k].text);
    return v;
  }
  if (name == "#") {
    v.set = true;
    v.items.push_back(known == pos.size()
                          ? Text::made(std::to_string(pos.size()), at)
                          : unresolved_text("$#", at, UnresolvedKind::kPositional,
                                            "the number of the script's arguments $#"));
    return v;
  }
  if (is_digits(name)) {
    const std::size_t n = name.size() > 4 ? 10000 : std::stoul(name);
    if (n == 0) {
      v.set = true;
      v.items.push_back(Text::made(script_name_, at));
    } else if (n <= known) {
      v.set = true;
      v.items.push_back(pos[n - 1].text);
    } else if (known == pos.size()) {
      v.known_empty = true;
    } else {
      v.unset_kind = UnresolvedKind::kPositional;
      v.unset_why = "positional parameter $" + name + " (an argument of the script)";
    }
    return v;
  }
  if (name.size() == 1 && std::string_view("?$!-").find(name[0]) != std::string_view::npos) {
    v.set = true;
    v.items.push_back(
        unresolved_text("$" + name, at, UnresolvedKind::kRunTime,
                        "special parameter $" + name + ", only known when the script runs"));
    return v;
  }
  const auto it = st_.vars.find(name);
  if (it == st_.vars.end() || (!it->second.array && it->second.values.empty())) {
    if (name == "BASH_SOURCE" || name == "LINENO") {
      v.set = true;
      v.items.push_back(
          Text::made(name == "LINENO" ? std::to_string(at.line) : files_[at.file], at));
      v.multi = index == "@" || index == "*";
      return v;
    }
    for (const char* dynamic : {"RANDOM", "SRANDOM", "SECONDS", "EPOCHSECONDS", "EPOCHREALTIME",
                                "BASHPID", "PPID", "HOSTNAME"}) {
      if (name == dynamic) {
        v.set = true;
        v.items.push_back(unresolved_text(shown, at, UnresolvedKind::kRunTime,
                                          "$" + name + " is only known when the script runs"));
        return v;
      }
    }
    v.unset_why =
        "unset variable $" + name + (st_.nounset ? " (under set -u the script stops here)" : "");
    return v;
  }
  const Variable& var = it->second;
  if (index.empty()) {
    v.set = !var.values.empty();
    v.known_empty = !v.set;
    if (v.set) v.items.push_back(var.values[0]);
    return v;
  }
  if (index == "@" || index == "*") {
    v.set = !var.values.empty();
    v.known_empty = !v.set;
    v.multi = true;
    v.star = index == "*";
    v.items = var.values;
    return v;
  }
  GRPO_TRY(std::optional<long long> k, index_of(index));
  if (!k) {
    v.set = true;
    v.items.push_back(unresolved_text("${" + name + "[" + index + "]}", at, UnresolvedKind::kOther,
                                      "array subscript [" + index + "] is not known statically"));
    return v;
  }
  const long long size = static_cast<long long>(var.values.size());
  const long long element = *k < 0 ? size + *k : *k;
  v.set = element >= 0 && element < size;
  v.known_empty = !v.set;
  if (v.set) v.items.push_back(var.values[static_cast<std::size_t>(element)]);
  return v;
}

Result<Text> Evaluator::default_word(const std::string& text, Loc at, bool quoted, int depth) {
  GRPO_TRY_STATUS(charge(text.size(), at));
  GRPO_TRY(Word w, parse_word_text(text, at, files_[at.file], quoted));
  Builder nb;
  nb.split = false;
  GRPO_TRY_STATUS(expand_parts(w.parts, quoted, !quoted, nb, depth + 1));
  return std::move(nb.finish().front().text);
}

Status Evaluator::add_unresolved(const ParamOp& o, UnresolvedKind kind, const std::string& why,
                                 Builder& b) {
  Text t = unresolved_text(o.raw, o.part.loc, kind, why);
  for (auto& i : t.info) i.flags = expansion_flags(o.quoted, false, true);
  b.add(t);
  return ok_status();
}

Status Evaluator::emit_value(const Value& val, const ParamOp& o, Builder& b) {
  const Loc loc = o.part.loc;
  if (val.args && !b.split)
    return add_unresolved(o, UnresolvedKind::kPositional, "the script's arguments $" + o.name, b);
  if (val.args) {
    b.args = true;
    b.multi = true;
  }
  std::vector<Text> items = val.items;
  std::size_t size = 0;
  for (auto& t : items) {
    size += t.s.size();
    for (auto& ci : t.info) {
      ci.flags = expansion_flags(o.quoted, val.multi, ci.reason != 0);
      if (ci.loc.line == 0) ci.loc = loc;  // the environment's values
    }
  }
  GRPO_TRY_STATUS(charge(size + 1, loc));
  if (!val.multi) {
    if (!items.empty()) b.add(items[0]);
    return ok_status();
  }
  b.multi = true;
  for (std::size_t k = 0; k < items.size(); ++k) {
    b.add(items[k]);
    if (k + 1 == items.size()) break;
    if (b.split && !(o.quoted && val.star)) {
      b.cut(o.quoted);
    } else {
      Text sep = Text::made(" ", loc);
      sep.info[0].flags = expansion_flags(o.quoted, true, false);
      b.add(sep);
    }
  }
  return ok_status();
}

// ${#NAME}: the length of the value, or the number of elements.
Status Evaluator::expand_length(const Value& v, const ParamOp& o, Builder& b) {
  const Loc loc = o.part.loc;
  if (!o.op_word.empty())
    return add_unresolved(o, UnresolvedKind::kOther, "parameter expansion " + o.raw, b);
  if (v.args)
    return add_unresolved(o, UnresolvedKind::kPositional, "the number of the script's arguments",
                          b);
  if (v.multi) {
    Text t = Text::made(std::to_string(v.items.size()), loc);
    b.add(t);
    return ok_status();
  }
  if (!v.set && !v.known_empty) return add_unresolved(o, v.unset_kind, v.unset_why, b);
  if (!v.items.empty() && v.items[0].unresolved()) {
    Text t = Text::made(o.raw, loc, v.items[0].first_reason());
    b.add(t);
    return ok_status();
  }
  b.add(Text::made(std::to_string(v.items.empty() ? 0 : v.items[0].s.size()), loc));
  return ok_status();
}

Status Evaluator::expand_param(const WordPart& p, bool quoted, Builder& b, int depth) {
  const std::string& body = p.text;
  ParamOp o{p, p.braced ? "${" + body + "}" : "$" + body, {}, {}, {}, quoted, depth, 0};
  const std::string& raw = o.raw;
  auto unresolved = [&](UnresolvedKind kind, const std::string& why) {
    return add_unresolved(o, kind, why, b);
  };
  if (depth > kMaxExpansionDepth)
    return unresolved(UnresolvedKind::kOther, "expansion nested too deeply");
  // ${#NAME}, NAME, [index], then the operator and its word.
  std::size_t i = 0;
  bool length = false;
  if (p.braced && body.size() > 1 && body[0] == '#') {
    length = true;
    i = 1;
  }
  if (p.braced && body.size() > 1 && body[0] == '!')
    return unresolved(UnresolvedKind::kOther, "indirect expansion " + raw);
  const std::size_t name_start = i;
  if (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) {
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i;
  } else if (i < body.size() && !is_name_start(body[i])) {
    ++i;  // @ * # ? $ ! -
  } else {
    while (i < body.size() && is_name_char(body[i])) ++i;
  }
  o.name = body.substr(name_start, i - name_start);
  const std::string& name = o.name;
  if (name.empty() ||
      (!is_name_start(name[0]) && !std::isdigit(static_cast<unsigned char>(name[0])) &&
       std::string_view("@*#?$!-").find(name[0]) == std::string_view::npos)) {
    return unresolved(UnresolvedKind::kOther, "parameter expansion " + raw);
  }
  std::string index;
  if (i < body.size() && body[i] == '[' && p.braced) {
    const auto close = body.find(']', i);
    if (close == std::string::npos)
      return unresolved(UnresolvedKind::kOther, "bad subscript in " + raw);
    index = body.substr(i + 1, close - i - 1);
    i = close + 1;
  }
  o.op_word = body.substr(i);
  const std::string& op_word = o.op_word;
  GRPO_TRY(Value v, lookup(name, index, p.loc));
  if (!v.set && !v.known_empty && v.unset_why.empty()) v.unset_why = "unset variable $" + name;
  auto unset = [&]() { return unresolved(v.unset_kind, v.unset_why); };
  auto nonempty = [&]() {
    if (!v.set) return false;
    if (v.args) return true;
    for (const auto& t : v.items)
      if (!t.s.empty()) return true;
    return false;
  };
  o.word_loc = offset_loc(p.body_loc, body, i + (op_word.size() > 1 && op_word[0] == ':' ? 2 : 1));

  if (length) return expand_length(v, o, b);
  if (op_word.empty()) {
    if (v.set || v.known_empty) return emit_value(v, o, b);
    return unset();
  }
  auto op_is = [&](std::string_view op) { return op_word.rfind(op, 0) == 0; };
  const bool colon = op_word[0] == ':' && op_word.size() > 1 &&
                     std::string_view("-=?+").find(op_word[1]) != std::string_view::npos;
  o.op = colon ? op_word[1] : op_word[0];
  const char op = o.op;
  if (colon || op == '-' || op == '=' || op == '?' || op == '+') {
    const std::string word = op_word.substr(colon ? 2 : 1);
    const bool have = colon ? nonempty() : v.set;
    if (op == '-' || op == '=') {
      if (have) return emit_value(v, o, b);
      GRPO_TRY(Text d, default_word(word, o.word_loc, quoted, depth));
      if (op == '=' && is_name(name)) {
        Text stored = d;
        for (auto& ci : stored.info) ci.flags = 0;
        set_var(name, {std::move(stored)}, false, p.loc);
      }
      b.add(d);
      return ok_status();
    }
    if (op == '?') {
      if (have) return emit_value(v, o, b);
      return unresolved(UnresolvedKind::kRequiredVariable,
                        "required variable " + name + " is unset");
    }
    if (!have) return ok_status();  // + on an unset value: nothing
    GRPO_TRY(Text alt, default_word(word, o.word_loc, quoted, depth));
    b.add(alt);
    return ok_status();
  }
  if (v.args) return unresolved(UnresolvedKind::kPositional, "the script's arguments in " + raw);
  if (!v.set && !v.known_empty) return unset();
  for (const auto& t : v.items) {
    if (t.unresolved()) {
      Text u = Text::made(raw, p.loc, t.first_reason());
      for (auto& ci : u.info) ci.flags = expansion_flags(quoted, false, true);
      b.add(u);
      return ok_status();
    }
  }
  Value result = v;
  std::string why = "parameter expansion " + raw;
  if (op_is("#") || op_is("%")) {
    GRPO_TRY(why, remove_pattern(result, o));
  } else if (op_is("^") || op_is(",")) {
    GRPO_TRY(why, convert_case(result, o));
  } else if (op_is("/")) {
    GRPO_TRY(why, replace_pattern(result, o));
  } else if (op_word[0] == ':') {  // ${NAME:offset[:length]}
    GRPO_TRY(why, substring(result, o));
  }
  if (!why.empty()) return unresolved(UnresolvedKind::kOther, why);
  return emit_value(result, o, b);
}

Result<Text> Evaluator::substitution(const WordPart& p, int depth) {
  const std::string raw = p.backquote ? "`" + p.text + "`" : "$(" + p.text + ")";
  const Text unknown = unresolved_text(raw, p.loc, UnresolvedKind::kCommandSubstitution,
                                       "command substitution " + raw);
  if (depth >= kMaxExpansionDepth || p.text.size() > 4096) return unknown;
  GRPO_TRY_STATUS(charge(p.text.size(), p.loc));
  auto parsed = parse_script(p.text, p.body_loc, files_[p.loc.file]);
  if (!parsed.ok()) return unknown;
  const List& l = parsed.value();
  // The words of pipeline k of and-or list a, when it is one plain command.
  auto words = [&](const AndOr& a, std::size_t k) -> const std::vector<Word>* {
    if (k >= a.pipelines.size() || a.pipelines[k].commands.size() != 1 || a.pipelines[k].negated ||
        a.background)
      return nullptr;
    const Command& c = a.pipelines[k].commands[0];
    if (c.kind != Command::Kind::kSimple || c.words.empty() || !c.words[0].assign_name.empty())
      return nullptr;
    return &c.words;
  };
  auto strings =
      [&](const std::vector<Word>* ws) -> Result<std::optional<std::vector<std::string>>> {
    std::vector<std::string> out;
    for (const Word& w : *ws) {
      GRPO_TRY(std::vector<Field> fs, fields(w, depth + 1));
      for (const auto& f : fs) {
        if (f.from_args || f.text.unresolved()) return std::optional<std::vector<std::string>>{};
        out.push_back(f.text.s);
      }
    }
    return std::optional<std::vector<std::string>>{std::move(out)};
  };
  // cd DIR && pwd, cd DIR; pwd: DIR.
  auto cd_pwd = [&](const std::vector<Word>* cd,
                    const std::vector<Word>* pwd) -> Result<std::optional<std::string>> {
    if (cd == nullptr || pwd == nullptr) return std::optional<std::string>{};
    GRPO_TRY(auto a, strings(cd));
    GRPO_TRY(auto b, strings(pwd));
    if (!a || !b || a->front() != "cd" || b->front() != "pwd") return std::optional<std::string>{};
    std::vector<std::string> args;
    for (std::size_t k = 1; k < a->size(); ++k)
      if ((*a)[k].empty() || (*a)[k][0] != '-') args.push_back((*a)[k]);
    if (args.size() != 1) return std::optional<std::string>{};
    return std::optional<std::string>{args[0]};
  };
  std::optional<std::string> value;
  if (l.size() == 1 && l[0].pipelines.size() == 2 && l[0].and_op[0]) {
    GRPO_TRY(value, cd_pwd(words(l[0], 0), words(l[0], 1)));
  } else if (l.size() == 2 && l[0].pipelines.size() == 1 && l[1].pipelines.size() == 1) {
    GRPO_TRY(value, cd_pwd(words(l[0], 0), words(l[1], 0)));
  } else if (l.size() == 1 && l[0].pipelines.size() == 1 && words(l[0], 0) != nullptr) {
    GRPO_TRY(auto ws, strings(words(l[0], 0)));
    if (ws && !ws->empty()) {
      const std::string cmd = ws->front();
      std::vector<std::string> args;
      bool options = true;
      for (std::size_t k = 1; k < ws->size(); ++k) {
        const std::string& a = (*ws)[k];
        if (options && a == "--") {
          options = false;
        } else if (options && a.size() > 1 && a[0] == '-' && cmd != "echo") {
          continue;
        } else if (options && cmd == "echo" && (a == "-n" || a == "-e" || a == "-E")) {
          continue;
        } else {
          options = cmd == "echo" ? false : options;
          args.push_back(a);
        }
      }
      if (cmd == "dirname" && args.size() == 1) value = dirname_of(args[0]);
      if (cmd == "basename" && (args.size() == 1 || args.size() == 2))
        value = basename_of(args[0], args.size() == 2 ? args[1] : "");
      if ((cmd == "realpath" || cmd == "readlink") && args.size() == 1) value = args[0];
      if (cmd == "pwd" && args.empty()) {
        const auto pwd = st_.vars.find("PWD");
        if (pwd != st_.vars.end() && !pwd->second.values.empty() &&
            !pwd->second.values[0].unresolved())
          value = pwd->second.values[0].s;
      }
      if (cmd == "echo") {
        std::string joined;
        for (std::size_t k = 0; k < args.size(); ++k) joined += (k ? " " : "") + args[k];
        value = joined;
      }
    }
  }
  if (!value) return unknown;
  while (!value->empty() && value->back() == '\n') value->pop_back();
  return Text::made(*value, p.loc);
}

ShellWord Evaluator::to_shell_word(const Field& f, Loc word_loc) const {
  ShellWord w;
  w.text = f.text.s;
  w.from_args = f.from_args;
  Loc l = word_loc;
  if (!f.text.info.empty() && (f.text.info[0].flags & kFieldChar)) {
    l = f.text.info[0].loc;
    w.from_expansion = true;
  }
  w.file = files_[l.file];
  w.line = l.line;
  w.column = l.col;
  std::uint32_t last = 0;
  for (const auto& i : f.text.info) {
    if (i.reason == 0 || i.reason == last) continue;
    last = i.reason;
    const Reason& r = reasons_[i.reason];
    if (!w.unresolved) {
      w.unresolved = true;
      w.unresolved_why = r.why;
      w.unresolved_kind = r.kind;
    } else if (w.unresolved_kind != r.kind) {
      w.unresolved_kind = UnresolvedKind::kMixed;
    }
  }
  return w;
}

}  // namespace grpo::core::shell
