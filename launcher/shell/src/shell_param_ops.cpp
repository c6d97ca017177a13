// The operators of a parameter expansion that rewrite a set, known value (bash(1), "Parameter
// Expansion"): pattern removal, case conversion, pattern substitution and substrings. Part of
// the expansion phase (shell_expand.cpp), kept apart for size; each gives "" or why the
// expansion cannot be resolved statically.
#include <algorithm>
#include <cctype>

#include "shell_eval.h"

namespace grpo::core::shell {

// ${NAME#pattern}, ##, %, %%: the shortest or longest matching prefix or suffix removed.
Result<std::string> Evaluator::remove_pattern(Value& result, const ParamOp& o) {
  const std::string& op_word = o.op_word;
  const char op = o.op;
  const bool prefix = op == '#';
  const bool longest = op_word.size() > 1 && op_word[1] == op;
  GRPO_TRY(Text pat, default_word(op_word.substr(longest ? 2 : 1), o.word_loc, false, o.depth));
  if (pat.unresolved()) return "pattern not known in " + o.raw;
  for (auto& t : result.items) {
    const std::size_t n = t.s.size();
    GRPO_TRY_STATUS(charge((n + 1) * (pat.s.size() + 1), o.part.loc));
    for (std::size_t k = 0; k <= n; ++k) {
      const std::size_t len = longest ? n - k : k;
      const std::string part = prefix ? t.s.substr(0, len) : t.s.substr(n - len);
      if (glob_match(pat, part)) {
        t = prefix ? t.substr(len) : t.substr(0, n - len);
        break;
      }
    }
  }
  return std::string();
}

// ${NAME^}, ^^, ",", ",,": the first or every character's case changed.
Result<std::string> Evaluator::convert_case(Value& result, const ParamOp& o) {
  const std::string& op_word = o.op_word;
  const char op = o.op;
  if (op_word.find_first_not_of(op) != std::string::npos) return "parameter expansion " + o.raw;
  for (auto& t : result.items) {
    for (std::size_t k = 0; k < t.s.size() && (op_word.size() == 2 || k == 0); ++k) {
      const auto c = static_cast<unsigned char>(t.s[k]);
      t.s[k] = static_cast<char>(op == '^' ? std::toupper(c) : std::tolower(c));
    }
  }
  return std::string();
}

// ${NAME/pattern/string}, //, /#, /%: the first, every, leading or trailing match replaced.
Result<std::string> Evaluator::replace_pattern(Value& result, const ParamOp& o) {
  std::string spec = o.op_word.substr(1);
  const char anchor =
      !spec.empty() && (spec[0] == '/' || spec[0] == '#' || spec[0] == '%') ? spec[0] : 0;
  if (anchor) spec.erase(0, 1);
  std::size_t slash = 0;
  while (slash < spec.size() && spec[slash] != '/') slash += spec[slash] == '\\' ? 2 : 1;
  GRPO_TRY(Text pat,
           default_word(spec.substr(0, std::min(slash, spec.size())), o.word_loc, false, o.depth));
  Text rep;
  if (slash < spec.size()) {
    GRPO_TRY(rep, default_word(spec.substr(slash + 1), offset_loc(o.word_loc, spec, slash + 1),
                               o.quoted, o.depth));
  }
  if (pat.unresolved() || rep.unresolved() || pat.s.empty()) return "parameter expansion " + o.raw;
  for (auto& t : result.items) {
    const std::size_t n = t.s.size();
    GRPO_TRY_STATUS(charge((n + 1) * (n + 1) * (pat.s.size() + 1) / 8 + n, o.part.loc));
    Text out;
    std::size_t k = 0;
    bool replaced = false;
    while (k <= n) {
      std::size_t match = 0;
      const bool may = (anchor != '#' || k == 0) && (anchor == '/' || !replaced);
      for (std::size_t len = n - k; may && len > 0; --len) {
        if (anchor == '%' && k + len != n) continue;
        if (glob_match(pat, t.s.substr(k, len))) {
          match = len;
          break;
        }
      }
      if (match > 0) {
        out.append(rep);
        k += match;
        replaced = true;
        continue;
      }
      if (k < n) out.push(t.s[k], t.info[k]);
      ++k;
    }
    t = std::move(out);
  }
  return std::string();
}

// ${NAME:offset[:length]}: characters of a value, or elements of an array or of "$@".
Result<std::string> Evaluator::substring(Value& result, const ParamOp& o) {
  const std::string spec = o.op_word.substr(1);
  const auto colon2 = spec.find(':');
  auto number = [&](const std::string& e) -> Result<std::optional<long long>> {
    auto w = parse_word_text(e, o.word_loc, files_[o.part.loc.file], true);
    if (!w.ok()) return std::optional<long long>{};
    GRPO_TRY(Text t, single(w.value(), o.depth + 1));
    if (t.unresolved()) return std::optional<long long>{};
    return arithmetic(t.s);
  };
  GRPO_TRY(std::optional<long long> off, number(spec.substr(0, colon2)));
  std::optional<long long> len;
  if (colon2 != std::string::npos) {
    GRPO_TRY(len, number(spec.substr(colon2 + 1)));
    if (!len) off.reset();
  }
  if (!off) return "parameter expansion " + o.raw;
  auto slice = [&](long long size, long long& from, long long& count) {
    from = *off < 0 ? std::max(0LL, size + *off) : std::min(*off, size);
    count = !len       ? size - from
            : *len < 0 ? std::max(0LL, size + *len - from)
                       : std::min(*len, size - from);
  };
  long long from = 0, count = 0;
  if (result.multi) {
    const bool positional = o.name == "@" || o.name == "*";
    long long size = static_cast<long long>(result.items.size()) + (positional ? 1 : 0);
    slice(size, from, count);
    std::vector<Text> items;
    for (long long k = from; k < from + count; ++k) {
      if (positional && k == 0) {
        items.push_back(Text::made(script_name_, o.part.loc));
      } else {
        items.push_back(result.items[static_cast<std::size_t>(k - (positional ? 1 : 0))]);
      }
    }
    result.items = std::move(items);
  } else if (!result.items.empty()) {
    Text& t = result.items[0];
    slice(static_cast<long long>(t.s.size()), from, count);
    t = t.substr(static_cast<std::size_t>(from), static_cast<std::size_t>(count));
  }
  return std::string();
}

}  // namespace grpo::core::shell
