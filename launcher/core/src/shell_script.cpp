#include "grpo/core/shell_script.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>

namespace grpo::core {
namespace {

constexpr std::size_t kMaxScriptBytes = 4u << 20;
constexpr int kMaxExpansionDepth = 32;

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

struct Var {
  std::string value;
  bool unresolved = false;
  std::string why;
};

// A piece of expanded text.
struct Piece {
  std::string text;
  bool unresolved = false;
  std::string why;
  bool args = false;  // "$@" / "$*"
  void add(const Piece& p) {
    text += p.text;
    if (p.unresolved && !unresolved) {
      unresolved = true;
      why = p.why;
    }
    args = args || p.args;
  }
};

class Reader {
 public:
  Reader(std::string_view text, std::string file, const ShellReadOptions& options)
      : s_(text), file_(std::move(file)) {
    for (const auto& [k, v] : options.environment) vars_[k] = Var{v, false, {}};
  }

  Result<ParsedScript> run() {
    ParsedScript out;
    out.file = file_;
    ShellCommand cmd;
    auto finish = [&]() -> Status {
      if (!cmd.words.empty() || !cmd.prefix.empty()) GRPO_TRY_STATUS(finish_command(cmd, out));
      cmd = ShellCommand{};
      return ok_status();
    };
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
        continue;
      }
      if (c == '\\' && peek(1) == '\n') {
        advance();
        advance();
        continue;
      }
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') advance();
        continue;
      }
      if (c == '\n') {
        advance();
        GRPO_TRY_STATUS(finish());
        GRPO_TRY_STATUS(consume_heredocs());
        continue;
      }
      if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
        advance();
        if ((c == '&' || c == '|' || c == ';') && peek(0) == c) advance();
        GRPO_TRY_STATUS(finish());
        continue;
      }
      if (c == '<' || c == '>') {
        GRPO_TRY_STATUS(redirection());
        continue;
      }
      if (cmd.words.empty() && cmd.prefix.empty()) cmd.line = line_;
      GRPO_TRY(ShellWord w, read_word());
      if ((peek(0) == '<' || peek(0) == '>') && !w.text.empty() &&
          w.text.find_first_not_of("0123456789") == std::string::npos) {
        continue;  // a file descriptor number of a redirection (2>&1)
      }
      cmd.words.push_back(std::move(w));
    }
    GRPO_TRY_STATUS(finish());
    if (!heredocs_.empty()) {
      return make_error(ErrorKind::kParse,
                        "here-document '" + heredocs_.front().first + "' is never closed",
                        {file_, heredoc_line_, 0});
    }
    return out;
  }

 private:
  char peek(std::size_t ahead) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  Error error(std::string message, std::uint32_t line, std::uint32_t col) const {
    return make_error(ErrorKind::kParse, std::move(message), {file_, line, col});
  }

  Status redirection() {
    const std::uint32_t line = line_;
    const std::uint32_t col = col_;
    const char c = s_[pos_];
    advance();
    bool heredoc = false;
    bool strip_tabs = false;
    if (c == '<' && peek(0) == '<') {
      advance();
      if (peek(0) == '<') {
        advance();  // here-string: the next word is its text
      } else {
        heredoc = true;
        if (peek(0) == '-') {
          advance();
          strip_tabs = true;
        }
      }
    } else if (peek(0) == c || peek(0) == '&' || peek(0) == '|') {
      advance();
    }
    while (peek(0) == ' ' || peek(0) == '\t') advance();
    if (c == '>' && std::isdigit(static_cast<unsigned char>(peek(0))) && s_[pos_ - 1] == '&') {
      while (std::isdigit(static_cast<unsigned char>(peek(0)))) advance();
      return ok_status();
    }
    if (pos_ >= s_.size() || peek(0) == '\n')
      return error("redirection without a target", line, col);
    GRPO_TRY(ShellWord target, read_word());
    if (heredoc) {
      if (heredocs_.empty()) heredoc_line_ = line;
      heredocs_.emplace_back(target.text, strip_tabs);
    }
    return ok_status();
  }

  // After a newline: skip the bodies of pending here-documents.
  Status consume_heredocs() {
    while (!heredocs_.empty()) {
      const auto [delim, strip] = heredocs_.front();
      bool closed = false;
      while (pos_ < s_.size()) {
        const std::size_t eol = s_.find('\n', pos_);
        std::string_view l =
            s_.substr(pos_, eol == std::string_view::npos ? s_.size() - pos_ : eol - pos_);
        if (strip) {
          while (!l.empty() && l.front() == '\t') l.remove_prefix(1);
        }
        while (pos_ < s_.size() && s_[pos_] != '\n') advance();
        if (pos_ < s_.size()) advance();
        if (l == delim) {
          closed = true;
          break;
        }
      }
      if (!closed) return error("here-document '" + delim + "' is never closed", heredoc_line_, 0);
      heredocs_.erase(heredocs_.begin());
    }
    return ok_status();
  }

  Result<ShellWord> read_word() {
    ShellWord w;
    w.line = line_;
    w.column = col_;
    Piece acc;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' ||
          c == '(' || c == ')' || c == '<' || c == '>') {
        break;
      }
      if (c == '\\') {
        advance();
        if (pos_ >= s_.size()) break;
        if (s_[pos_] == '\n') {
          advance();
          continue;
        }
        acc.text += s_[pos_];
        advance();
        continue;
      }
      if (c == '\'') {
        const std::uint32_t l = line_, col = col_;
        advance();
        while (pos_ < s_.size() && s_[pos_] != '\'') {
          acc.text += s_[pos_];
          advance();
        }
        if (pos_ >= s_.size()) return error("unterminated single quote", l, col);
        advance();
        continue;
      }
      if (c == '"') {
        GRPO_TRY(Piece p, double_quoted());
        acc.add(p);
        continue;
      }
      if (c == '$') {
        GRPO_TRY(Piece p, dollar(0));
        acc.add(p);
        continue;
      }
      if (c == '`') {
        GRPO_TRY(Piece p, backtick());
        acc.add(p);
        continue;
      }
      acc.text += c;
      advance();
    }
    w.text = std::move(acc.text);
    w.unresolved = acc.unresolved;
    w.unresolved_why = std::move(acc.why);
    w.from_args = acc.args;
    return w;
  }

  Result<Piece> double_quoted() {
    const std::uint32_t l = line_, col = col_;
    advance();  // opening quote
    Piece acc;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      const char c = s_[pos_];
      if (c == '\\') {
        const char n = peek(1);
        if (n == '$' || n == '`' || n == '"' || n == '\\') {
          advance();
          acc.text += n;
          advance();
        } else if (n == '\n') {
          advance();
          advance();
        } else {
          acc.text += c;
          advance();
        }
        continue;
      }
      if (c == '$') {
        GRPO_TRY(Piece p, dollar(0));
        acc.add(p);
        continue;
      }
      if (c == '`') {
        GRPO_TRY(Piece p, backtick());
        acc.add(p);
        continue;
      }
      acc.text += c;
      advance();
    }
    if (pos_ >= s_.size()) return error("unterminated double quote", l, col);
    advance();
    return acc;
  }

  Result<Piece> backtick() {
    const std::uint32_t l = line_, col = col_;
    advance();
    std::string body;
    while (pos_ < s_.size() && s_[pos_] != '`') {
      if (s_[pos_] == '\\' && peek(1) != '\0') {
        body += s_[pos_];
        advance();
      }
      body += s_[pos_];
      advance();
    }
    if (pos_ >= s_.size()) return error("unterminated backquote", l, col);
    advance();
    return Piece{"`" + body + "`", true, "command substitution `" + body + "`", false};
  }

  // Reads a balanced (...) or {...} body starting after the opening bracket; quotes are skipped.
  Result<std::string> balanced(char open, char close, std::uint32_t l, std::uint32_t col,
                               const char* what) {
    int depth = 1;
    std::string body;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\'' || c == '"') {
        const char q = c;
        body += c;
        advance();
        while (pos_ < s_.size() && s_[pos_] != q) {
          if (q == '"' && s_[pos_] == '\\' && peek(1) != '\0') {
            body += s_[pos_];
            advance();
          }
          body += s_[pos_];
          advance();
        }
        if (pos_ >= s_.size()) break;
        body += s_[pos_];
        advance();
        continue;
      }
      if (c == '\\' && peek(1) != '\0') {
        body += c;
        advance();
        body += s_[pos_];
        advance();
        continue;
      }
      if (c == open) ++depth;
      if (c == close && --depth == 0) {
        advance();
        return body;
      }
      body += c;
      advance();
    }
    return error(std::string("unterminated ") + what, l, col);
  }

  Result<Piece> dollar(int depth) {
    const std::uint32_t l = line_, col = col_;
    advance();  // '$'
    const char c = peek(0);
    if (c == '(') {
      advance();
      if (peek(0) == '(') {
        advance();
        GRPO_TRY(std::string body, balanced('(', ')', l, col, "$(( arithmetic"));
        if (peek(0) == ')') advance();
        if (const auto v = arithmetic(body)) return Piece{std::to_string(*v), false, {}, false};
        return Piece{"$((" + body + "))", true, "arithmetic expansion $((" + body + "))", false};
      }
      GRPO_TRY(std::string body, balanced('(', ')', l, col, "$( command substitution"));
      return Piece{"$(" + body + ")", true, "command substitution $(" + body + ")", false};
    }
    if (c == '{') {
      advance();
      GRPO_TRY(std::string body, balanced('{', '}', l, col, "${ parameter expansion"));
      return brace_expansion(body, depth);
    }
    if (c == '@' || c == '*') {
      advance();
      return Piece{"", false, {}, true};
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '#' || c == '?' || c == '$' ||
        c == '!' || c == '-') {
      advance();
      return Piece{std::string("$") + c, true, std::string("shell parameter $") + c, false};
    }
    if (is_name_start(c)) {
      std::string name;
      while (is_name_char(peek(0))) {
        name += peek(0);
        advance();
      }
      return lookup(name);
    }
    return Piece{"$", false, {}, false};
  }

  // Integer arithmetic over literals and known variables: + - * / % ( ) and unary signs.
  // Anything else (or division by zero, overflow) leaves the expansion unresolved.
  std::optional<long long> arithmetic(const std::string& expr) const {
    std::size_t i = 0;
    std::function<std::optional<long long>()> sum;
    auto skip = [&] {
      while (i < expr.size() && (expr[i] == ' ' || expr[i] == '\t')) ++i;
    };
    std::function<std::optional<long long>()> atom = [&]() -> std::optional<long long> {
      skip();
      if (i >= expr.size()) return std::nullopt;
      const char c = expr[i];
      if (c == '(') {
        ++i;
        auto v = sum();
        skip();
        if (!v || i >= expr.size() || expr[i] != ')') return std::nullopt;
        ++i;
        return v;
      }
      if (c == '-' || c == '+') {
        ++i;
        auto v = atom();
        if (!v) return std::nullopt;
        return c == '-' ? -*v : *v;
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        long long v = 0;
        while (i < expr.size() && std::isdigit(static_cast<unsigned char>(expr[i]))) {
          if (v > (1LL << 52)) return std::nullopt;
          v = v * 10 + (expr[i++] - '0');
        }
        return v;
      }
      std::string name;
      if (c == '$') ++i;
      const bool braced = i < expr.size() && expr[i] == '{';
      if (braced) ++i;
      while (i < expr.size() && is_name_char(expr[i])) name += expr[i++];
      if (braced) {
        if (i >= expr.size() || expr[i] != '}') return std::nullopt;
        ++i;
      }
      if (name.empty() || !is_name_start(name[0])) return std::nullopt;
      const auto it = vars_.find(name);
      if (it == vars_.end() || it->second.unresolved) return std::nullopt;
      long long v = 0;
      const std::string& text = it->second.value;
      const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
      return v;
    };
    auto product = [&]() -> std::optional<long long> {
      auto v = atom();
      while (v) {
        skip();
        if (i >= expr.size() || (expr[i] != '*' && expr[i] != '/' && expr[i] != '%')) break;
        const char op = expr[i++];
        const auto r = atom();
        if (!r || ((op == '/' || op == '%') && *r == 0)) return std::nullopt;
        if (op == '*' && *v != 0 && (std::llabs(*r) > (1LL << 52) / std::max(1LL, std::llabs(*v))))
          return std::nullopt;
        v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
      }
      return v;
    };
    sum = [&]() -> std::optional<long long> {
      auto v = product();
      while (v) {
        skip();
        if (i >= expr.size() || (expr[i] != '+' && expr[i] != '-')) break;
        const char op = expr[i++];
        const auto r = product();
        if (!r) return std::nullopt;
        v = op == '+' ? *v + *r : *v - *r;
      }
      return v;
    };
    auto v = sum();
    skip();
    if (!v || i != expr.size()) return std::nullopt;
    return v;
  }

  Piece lookup(const std::string& name) const {
    const auto it = vars_.find(name);
    if (it == vars_.end()) return Piece{"$" + name, true, "unset variable $" + name, false};
    return Piece{it->second.value, it->second.unresolved, it->second.why, false};
  }

  // Expands the text of a default value (it may itself hold $VAR, quotes, ...).
  Result<Piece> expand_text(const std::string& text, int depth) {
    if (depth > kMaxExpansionDepth) return Piece{text, true, "expansion nested too deeply", false};
    Reader sub(text, file_, ShellReadOptions{{}});
    sub.vars_ = vars_;
    sub.line_ = line_;
    Piece acc;
    while (sub.pos_ < sub.s_.size()) {
      const char c = sub.s_[sub.pos_];
      if (c == '$') {
        GRPO_TRY(Piece p, sub.dollar(depth + 1));
        acc.add(p);
      } else if (c == '"') {
        GRPO_TRY(Piece p, sub.double_quoted());
        acc.add(p);
      } else if (c == '\'') {
        sub.advance();
        while (sub.pos_ < sub.s_.size() && sub.s_[sub.pos_] != '\'') {
          acc.text += sub.s_[sub.pos_];
          sub.advance();
        }
        if (sub.pos_ < sub.s_.size()) sub.advance();
      } else {
        acc.text += c;
        sub.advance();
      }
    }
    return acc;
  }

  Result<Piece> brace_expansion(const std::string& body, int depth) {
    std::size_t i = 0;
    if (body.empty() || !is_name_start(body[0])) {
      if (body == "@" || body == "*") return Piece{"", false, {}, true};
      return Piece{"${" + body + "}", true, "parameter expansion ${" + body + "}", false};
    }
    while (i < body.size() && is_name_char(body[i])) ++i;
    const std::string name = body.substr(0, i);
    const std::string op_and_word = body.substr(i);
    const auto it = vars_.find(name);
    const bool set = it != vars_.end();
    const bool set_nonempty = set && !it->second.value.empty();
    if (op_and_word.empty()) return lookup(name);
    auto op_is = [&](std::string_view op) { return op_and_word.rfind(op, 0) == 0; };
    if (op_is(":-") || op_is("-")) {
      const bool colon = op_is(":-");
      const std::string word = op_and_word.substr(colon ? 2 : 1);
      if (colon ? set_nonempty : set) return lookup(name);
      return expand_text(word, depth);
    }
    if (op_is(":=") || op_is("=")) {
      const bool colon = op_is(":=");
      const std::string word = op_and_word.substr(colon ? 2 : 1);
      if (colon ? set_nonempty : set) return lookup(name);
      GRPO_TRY(Piece p, expand_text(word, depth));
      vars_[name] = Var{p.text, p.unresolved, p.why};
      return p;
    }
    if (op_is(":?") || op_is("?")) {
      if (set_nonempty) return lookup(name);
      return Piece{"${" + body + "}", true, "required variable " + name + " is unset", false};
    }
    if (op_is(":+") || op_is("+")) {
      const bool colon = op_is(":+");
      if (colon ? set_nonempty : set) return expand_text(op_and_word.substr(colon ? 2 : 1), depth);
      return Piece{};
    }
    return Piece{"${" + body + "}", true, "parameter expansion ${" + body + "}", false};
  }

  static bool split_assignment(const ShellWord& w, std::string& name, ShellWord& value) {
    const auto eq = w.text.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    for (std::size_t i = 0; i < eq; ++i) {
      if (i == 0 ? !is_name_start(w.text[i]) : !is_name_char(w.text[i])) return false;
    }
    name = w.text.substr(0, eq);
    value = w;
    value.text = w.text.substr(eq + 1);
    return true;
  }

  Status finish_command(ShellCommand& cmd, ParsedScript& out) {
    // Leading NAME=value words are assignments (prefixes of the command, or plain assignments
    // when nothing follows). `export` / `declare -x` / `readonly` / `local` assign too.
    std::size_t i = 0;
    std::vector<ShellAssignment> prefix;
    for (; i < cmd.words.size(); ++i) {
      std::string name;
      ShellWord value;
      if (!split_assignment(cmd.words[i], name, value)) break;
      prefix.push_back(ShellAssignment{name, value, false});
    }
    std::vector<ShellWord> rest(cmd.words.begin() + static_cast<std::ptrdiff_t>(i),
                                cmd.words.end());
    if (rest.empty()) {
      for (auto& a : prefix) {
        vars_[a.name] = Var{a.value.text, a.value.unresolved, a.value.unresolved_why};
        const auto e = out.exports.find(a.name);
        if (e != out.exports.end()) {
          a.exported = true;
          e->second = a;
        }
        out.assignments.push_back(a);
      }
      cmd.prefix = std::move(prefix);
      out.commands.push_back(std::move(cmd));
      return ok_status();
    }
    const std::string& head = rest.front().text;
    if (head == "export" || head == "declare" || head == "typeset" || head == "readonly" ||
        head == "local") {
      const bool exporting =
          head == "export" || std::any_of(rest.begin() + 1, rest.end(), [](const ShellWord& w) {
            return w.text.size() > 1 && w.text[0] == '-' && w.text.find('x') != std::string::npos;
          });
      for (std::size_t k = 1; k < rest.size(); ++k) {
        std::string name;
        ShellWord value;
        if (!rest[k].text.empty() && rest[k].text[0] == '-') continue;
        if (split_assignment(rest[k], name, value)) {
          vars_[name] = Var{value.text, value.unresolved, value.unresolved_why};
          ShellAssignment a{name, value, exporting};
          out.assignments.push_back(a);
          if (exporting) out.exports[name] = a;
        } else if (exporting) {
          const auto v = vars_.find(rest[k].text);
          ShellWord value_word = rest[k];
          value_word.text = v == vars_.end() ? std::string{} : v->second.value;
          out.exports[rest[k].text] = ShellAssignment{rest[k].text, value_word, true};
        }
      }
    }
    for (auto& a : prefix) {
      a.exported = true;
      out.assignments.push_back(a);
    }
    cmd.prefix = std::move(prefix);
    cmd.words = std::move(rest);
    out.commands.push_back(std::move(cmd));
    return ok_status();
  }

  std::string_view s_;
  std::string file_;
  std::size_t pos_ = 0;
  std::uint32_t line_ = 1;
  std::uint32_t col_ = 1;
  std::map<std::string, Var> vars_;
  std::vector<std::pair<std::string, bool>> heredocs_;
  std::uint32_t heredoc_line_ = 0;
};

}  // namespace

Result<ParsedScript> read_shell_script(std::string_view text, std::string_view file_name,
                                       const ShellReadOptions& options) {
  if (text.size() > kMaxScriptBytes) {
    return make_error(ErrorKind::kParse, "script larger than 4 MiB",
                      {std::string(file_name), 0, 0});
  }
  if (text.find('\0') != std::string_view::npos) {
    return make_error(ErrorKind::kParse, "not a text file (NUL byte)",
                      {std::string(file_name), 0, 0});
  }
  Reader reader(text, std::string(file_name), options);
  return reader.run();
}

}  // namespace grpo::core
