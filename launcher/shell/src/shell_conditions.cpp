// Evaluation helpers of the shell reader that decide values: integer arithmetic ($((...)),
// subscripts, (( ))), glob patterns (case, [[ == ]], ${VAR#pattern}) and test expressions
// ([ ], test, [[ ]]) in three-valued logic: true, false, or not known statically.
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>

#include "grpo/core/text.h"
#include "shell_eval.h"

namespace grpo::core::shell {
// Integer arithmetic over literals and known variables: + - * / % ( ), unary signs,
// comparisons. Anything else (or division by zero, overflow) is nullopt.
std::optional<long long> Evaluator::arithmetic(const std::string& expr) const {
  std::size_t i = 0;
  int depth = 0;
  auto skip = [&] {
    while (i < expr.size() && std::isspace(static_cast<unsigned char>(expr[i]))) ++i;
  };
  std::function<std::optional<long long>()> compare;
  std::function<std::optional<long long>()> atom = [&]() -> std::optional<long long> {
    skip();
    if (i >= expr.size() || ++depth > 64) return std::nullopt;
    const char c = expr[i];
    std::optional<long long> out;
    if (c == '(') {
      ++i;
      auto v = compare();
      skip();
      if (v && i < expr.size() && expr[i] == ')') {
        ++i;
        out = v;
      }
    } else if (c == '-' || c == '+' || c == '!') {
      ++i;
      if (auto v = atom()) out = c == '-' ? -*v : c == '!' ? !*v : *v;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      long long v = 0;
      bool ok = true;
      while (i < expr.size() && std::isdigit(static_cast<unsigned char>(expr[i]))) {
        if (v > (1LL << 52)) ok = false;
        v = ok ? v * 10 + (expr[i] - '0') : v;
        ++i;
      }
      if (ok && (i >= expr.size() || !is_name_char(expr[i]))) out = v;
    } else {
      if (c == '$') ++i;
      const bool braced = i < expr.size() && expr[i] == '{';
      if (braced) ++i;
      std::string name;
      while (i < expr.size() && is_name_char(expr[i])) name += expr[i++];
      if (braced && (i >= expr.size() || expr[i++] != '}')) name.clear();
      if (!name.empty() && is_name_start(name[0])) {
        const auto it = st_.vars.find(name);
        if (it != st_.vars.end() && !it->second.values.empty() &&
            !it->second.values[0].unresolved()) {
          const std::string& text = it->second.values[0].s;
          long long v = 0;
          const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
          if (ec == std::errc{} && p == text.data() + text.size() && std::llabs(v) < (1LL << 52))
            out = v;
        }
      }
    }
    --depth;
    return out;
  };
  auto product = [&]() -> std::optional<long long> {
    auto v = atom();
    while (v) {
      skip();
      if (i >= expr.size() || (expr[i] != '*' && expr[i] != '/' && expr[i] != '%')) break;
      const char op = expr[i++];
      const auto r = atom();
      if (!r || ((op == '/' || op == '%') && *r == 0)) return std::nullopt;
      if (op == '*' && *v != 0 && std::llabs(*r) > (1LL << 52) / std::max(1LL, std::llabs(*v)))
        return std::nullopt;
      v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
    }
    return v;
  };
  auto sum = [&]() -> std::optional<long long> {
    auto v = product();
    while (v) {
      skip();
      if (i >= expr.size() || (expr[i] != '+' && expr[i] != '-')) break;
      const char op = expr[i++];
      const auto r = product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
      if (std::llabs(*v) > (1LL << 53)) return std::nullopt;
    }
    return v;
  };
  compare = [&]() -> std::optional<long long> {
    auto v = sum();
    while (v) {
      skip();
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (expr.compare(i, std::string_view(o).size(), o) == 0) {
          op = o;
          break;
        }
      }
      if (op.empty()) break;
      i += op.size();
      const auto r = sum();
      if (!r) return std::nullopt;
      v = op == "=="   ? *v == *r
          : op == "!=" ? *v != *r
          : op == "<=" ? *v <= *r
          : op == ">=" ? *v >= *r
          : op == "<"  ? *v < *r
                       : *v > *r;
    }
    return v;
  };
  auto v = compare();
  skip();
  if (!v || i != expr.size()) return std::nullopt;
  return v;
}

// Glob matching of `s` against `pattern`: * ? [...]; quoted pattern characters are literal.
bool Evaluator::glob_match(const Text& pattern, const std::string& s) const {
  const std::string& p = pattern.s;
  auto active = [&](std::size_t k) { return (pattern.info[k].flags & kQuotedChar) == 0; };
  // Matches one character at pattern position k; sets `len` to the pattern length used.
  auto one = [&](std::size_t k, char c, std::size_t& len) {
    len = 1;
    if (active(k) && p[k] == '?') return true;
    if (active(k) && p[k] == '\\' && k + 1 < p.size()) {
      len = 2;
      return p[k + 1] == c;
    }
    if (active(k) && p[k] == '[') {
      std::size_t j = k + 1;
      const bool negate = j < p.size() && (p[j] == '!' || p[j] == '^');
      if (negate) ++j;
      bool found = false;
      const std::size_t first = j;
      for (; j < p.size() && (p[j] != ']' || j == first); ++j) {
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
          found |= c >= p[j] && c <= p[j + 2];
          j += 2;
        } else {
          found |= p[j] == c;
        }
      }
      if (j < p.size()) {
        len = j - k + 1;
        return found != negate;
      }
    }
    return p[k] == c;
  };
  std::size_t pi = 0, si = 0, star = std::string::npos, resume = 0;
  while (si < s.size()) {
    std::size_t len = 0;
    if (pi < p.size() && active(pi) && p[pi] == '*') {
      star = ++pi;
      resume = si;
    } else if (pi < p.size() && one(pi, s[si], len)) {
      pi += len;
      ++si;
    } else if (star != std::string::npos) {
      pi = star;
      si = ++resume;
    } else {
      return false;
    }
  }
  while (pi < p.size() && active(pi) && p[pi] == '*') ++pi;
  return pi == p.size();
}

// [ ... ] / test (args without the closing ]) and [[ ... ]].
Result<Tri> Evaluator::test(const std::vector<Text>& args, bool dbl) {
  std::size_t i = 0;
  int depth = 0;
  auto at = [&](std::size_t k) -> const std::string& {
    static const std::string none;
    return k < args.size() ? args[k].s : none;
  };
  auto integer = [&](const Text& t) -> std::optional<long long> {
    if (t.unresolved()) return std::nullopt;
    if (dbl) return arithmetic(t.s);
    long long v = 0;
    const std::string s(trim(t.s));
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
  };
  auto binary = [&](const Text& a, const std::string& op, const Text& b) -> Tri {
    if (a.unresolved() || b.unresolved()) return Tri::kUnknown;
    if (op == "=" || op == "==" || op == "!=") {
      const bool eq = dbl ? glob_match(b, a.s) : a.s == b.s;
      return tri(op == "!=" ? !eq : eq);
    }
    if (op == "<" || op == ">") return tri(op == "<" ? a.s < b.s : a.s > b.s);
    const auto x = integer(a), y = integer(b);
    if (!x || !y) return Tri::kUnknown;
    if (op == "-eq") return tri(*x == *y);
    if (op == "-ne") return tri(*x != *y);
    if (op == "-lt") return tri(*x < *y);
    if (op == "-le") return tri(*x <= *y);
    if (op == "-gt") return tri(*x > *y);
    return tri(*x >= *y);
  };
  auto is_binary = [&](const std::string& op) {
    for (const char* o : {"=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "=~",
                          "-nt", "-ot", "-ef"}) {
      if (op == o) return (op != "<" && op != ">") || dbl;
    }
    return false;
  };
  std::function<Tri()> or_expr;
  auto primary = [&]() -> Tri {
    if (i >= args.size()) return Tri::kUnknown;
    const std::string& a = at(i);
    if (a == "(" && ++depth < 64) {
      ++i;
      const Tri v = or_expr();
      --depth;
      if (at(i) != ")") return Tri::kUnknown;
      ++i;
      return v;
    }
    if (i + 2 < args.size() && is_binary(at(i + 1))) {
      const std::string op = at(i + 1);
      const Tri v = op == "=~" || op == "-nt" || op == "-ot" || op == "-ef"
                        ? Tri::kUnknown
                        : binary(args[i], op, args[i + 2]);
      i += 3;
      return v;
    }
    if (a.size() == 2 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1])) &&
        i + 1 < args.size()) {
      const Text& operand = args[i + 1];
      i += 2;
      if (a == "-z" || a == "-n") {
        if (operand.unresolved()) return Tri::kUnknown;
        return tri((a == "-z") == operand.s.empty());
      }
      if (a == "-v" && !operand.unresolved() && is_name(operand.s))
        return tri(st_.vars.count(operand.s) > 0);
      return Tri::kUnknown;  // files, terminals, options: only known on the machine
    }
    ++i;
    if (args[i - 1].unresolved()) return Tri::kUnknown;
    return tri(!a.empty());
  };
  std::function<Tri()> not_expr = [&]() -> Tri {
    if (at(i) == "!" && i + 1 < args.size() && ++depth < 64) {
      ++i;
      const Tri v = tri_not(not_expr());
      --depth;
      return v;
    }
    return primary();
  };
  auto and_expr = [&]() -> Tri {
    Tri v = not_expr();
    while (i < args.size() && at(i) == (dbl ? "&&" : "-a")) {
      ++i;
      v = tri_and(v, not_expr());
    }
    return v;
  };
  or_expr = [&]() -> Tri {
    Tri v = and_expr();
    while (i < args.size() && at(i) == (dbl ? "||" : "-o")) {
      ++i;
      v = tri_or(v, and_expr());
    }
    return v;
  };
  if (args.empty()) return Tri::kFalse;
  const Tri v = or_expr();
  return i == args.size() ? v : Tri::kUnknown;
}

}  // namespace grpo::core::shell
