// The lexing phase of the shell reader: bash text to words (quotes, escapes, continuations
// resolved; expansions kept as parts for the evaluator) and operators. Redirections and the
// bodies of here-documents are consumed here.
#include "shell_lexer.h"

#include <cctype>

namespace grpo::core::shell {
Result<Token> Lexer::next(bool cond_mode) {
  while (true) {
    Token t;
    t.loc = here();
    t.begin = pos_;
    if (pos_ >= s_.size()) {
      if (!heredocs_.empty()) {
        return error("here-document '" + heredocs_.front().delim + "' is never closed",
                     heredocs_.front().loc);
      }
      return t;
    }
    const char c = s_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      advance();
      continue;
    }
    if (c == '\\' && peek(1) == '\n') {
      advance(2);
      continue;
    }
    if (c == '#') {
      while (pos_ < s_.size() && s_[pos_] != '\n') advance();
      continue;
    }
    if (c == '\n') {
      advance();
      GRPO_TRY_STATUS(consume_heredocs());
      t.kind = Token::Kind::kNewline;
      t.end = pos_;
      return t;
    }
    if (cond_mode) {
      // Inside [[ ]], && || ( ) < > are operands of the test, returned as words.
      std::string w;
      if ((c == '&' || c == '|') && peek(1) == c) {
        w = std::string(2, c);
      } else if (c == '(' || c == ')' || c == '<' || c == '>') {
        w = std::string(1, c);
      }
      if (!w.empty()) {
        advance(w.size());
        t.kind = Token::Kind::kWord;
        t.word.loc = t.loc;
        t.word.plain = w;
        WordPart p;
        p.text = w;
        p.locs.assign(w.size(), t.loc);
        p.loc = t.loc;
        t.word.parts.push_back(std::move(p));
        t.end = pos_;
        return t;
      }
    }
    if (c == ';' || c == '|' || c == ')' || (c == '&' && peek(1) != '>') ||
        (c == '(' && peek(1) != '(')) {
      t.kind = Token::Kind::kOp;
      t.op = c;
      if (c == ';' && peek(1) == ';') t.op = peek(2) == '&' ? ";;&" : ";;";
      if (c == ';' && peek(1) == '&') t.op = ";&";
      if ((c == '&' || c == '|') && peek(1) == c) t.op = std::string(2, c);
      if (c == '|' && peek(1) == '&') t.op = "|&";
      advance(t.op.size());
      t.end = pos_;
      return t;
    }
    if (c == '(') {  // (( expression ))
      const Loc l = here();
      advance(2);
      GRPO_TRY(std::string body, balanced('(', ')', l, "(( arithmetic"));
      if (peek(0) == ')') advance();
      t.kind = Token::Kind::kArith;
      t.op = std::move(body);
      t.end = pos_;
      return t;
    }
    if ((c == '<' || c == '>' || c == '&') && peek(1) != '(') {
      GRPO_TRY_STATUS(redirection());
      continue;
    }
    GRPO_TRY(Word w, read_word(cond_mode));
    if (!w.plain.empty() && w.plain.find_first_not_of("0123456789") == std::string::npos &&
        (peek(0) == '<' || peek(0) == '>')) {
      continue;  // the file descriptor of a redirection (2>&1)
    }
    t.kind = Token::Kind::kWord;
    t.word = std::move(w);
    t.end = pos_;
    return t;
  }
}

Result<Word> Lexer::whole_word(bool in_dq) {
  Word w;
  w.loc = here();
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    if (c == '"') {
      GRPO_TRY_STATUS(double_quoted(w));
    } else if (c == '\'' && !in_dq) {
      GRPO_TRY_STATUS(single_quoted(w));
    } else if (c == '\\' && peek(1) != '\0') {
      if (peek(1) == '\n') {
        advance(2);
        continue;
      }
      const bool special = !in_dq || std::string_view("$`\"\\}").find(peek(1)) != npos;
      if (special) advance();
      add_literal(w, s_[pos_], true);
      advance();
    } else if (c == '$') {
      GRPO_TRY_STATUS(dollar(w, in_dq));
    } else if (c == '`') {
      GRPO_TRY_STATUS(backquote(w, in_dq));
    } else {
      add_literal(w, c, in_dq);
      advance();
    }
  }
  return w;
}

void Lexer::advance(std::size_t n) {
  for (; n > 0 && pos_ < s_.size(); --n) {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
}

Error Lexer::error(std::string message, Loc at) const {
  return make_error(ErrorKind::kParse, std::move(message), {file_, at.line, at.col});
}

bool Lexer::is_meta(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' ||
         c == '(' || c == ')' || c == '<' || c == '>';
}

void Lexer::add_literal(Word& w, char c, bool quoted) {
  if (w.parts.empty() || w.parts.back().kind != WordPart::Kind::kLiteral ||
      w.parts.back().quoted != quoted) {
    WordPart p;
    p.quoted = quoted;
    p.loc = here();
    w.parts.push_back(std::move(p));
  }
  w.parts.back().text += c;
  w.parts.back().locs.push_back(here());
}

void Lexer::mark_quoted(Word& w, Loc at) {
  WordPart p;
  p.quoted = true;
  p.loc = at;
  w.parts.push_back(std::move(p));
}

Result<Word> Lexer::read_word(bool cond_mode) {
  Word w;
  w.loc = here();
  const std::size_t start = pos_;
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    if ((c == '<' || c == '>') && peek(1) == '(') {  // process substitution
      WordPart p;
      p.kind = WordPart::Kind::kCommand;
      p.loc = here();
      advance(2);
      p.body_loc = here();
      GRPO_TRY(p.text, balanced('(', ')', p.loc, "process substitution"));
      w.parts.push_back(std::move(p));
      continue;
    }
    if (is_meta(c) && !(cond_mode && c == '|')) break;
    if (c == '\\') {
      if (peek(1) == '\n') {
        advance(2);
        continue;
      }
      advance();
      if (pos_ >= s_.size()) {
        add_literal(w, '\\', false);
        break;
      }
      add_literal(w, s_[pos_], true);
      advance();
    } else if (c == '\'') {
      GRPO_TRY_STATUS(single_quoted(w));
    } else if (c == '"') {
      GRPO_TRY_STATUS(double_quoted(w));
    } else if (c == '$') {
      if (peek(1) == '\'') {
        GRPO_TRY_STATUS(ansi_c_quoted(w));
      } else if (peek(1) == '"') {
        advance();  // $"...": a translated string, read as "..."
      } else {
        GRPO_TRY_STATUS(dollar(w, false));
      }
    } else if (c == '`') {
      GRPO_TRY_STATUS(backquote(w, false));
    } else if (c == '~' && pos_ == start &&
               (peek(1) == '/' || is_meta(peek(1)) || peek(1) == '\0')) {
      WordPart p;
      p.kind = WordPart::Kind::kTilde;
      p.loc = here();
      p.text = "HOME";
      w.parts.push_back(std::move(p));
      advance();
    } else if (c == '=' && peek(1) == '(' && !in_array_ && w.parts.size() == 1 &&
               !w.parts[0].quoted && w.parts[0].kind == WordPart::Kind::kLiteral &&
               (is_name(w.parts[0].text) ||
                (w.parts[0].text.size() > 1 && w.parts[0].text.back() == '+' &&
                 is_name(
                     std::string_view(w.parts[0].text).substr(0, w.parts[0].text.size() - 1))))) {
      add_literal(w, '=', false);
      advance();
      GRPO_TRY_STATUS(array_literal(w));
      break;
    } else {
      add_literal(w, c, false);
      advance();
    }
  }
  if (w.parts.size() == 1 && w.parts[0].kind == WordPart::Kind::kLiteral && !w.parts[0].quoted)
    w.plain = w.parts[0].text;
  classify_assignment(w);
  return w;
}

void Lexer::classify_assignment(Word& w) {
  if (w.parts.empty() || w.parts[0].kind != WordPart::Kind::kLiteral || w.parts[0].quoted) return;
  const std::string& t = w.parts[0].text;
  std::size_t i = 0;
  if (t.empty() || !is_name_start(t[0])) return;
  while (i < t.size() && is_name_char(t[i])) ++i;
  std::string index;
  if (i < t.size() && t[i] == '[') {
    const auto close = t.find(']', i);
    if (close == std::string::npos) return;
    index = t.substr(i + 1, close - i - 1);
    if (index.empty()) return;
    w.assign_name = t.substr(0, i);
    i = close + 1;
  } else {
    w.assign_name = t.substr(0, i);
  }
  if (i < t.size() && t[i] == '+') {
    w.assign_append = true;
    ++i;
  }
  if (i >= t.size() || t[i] != '=') {
    w.assign_name.clear();
    w.assign_append = false;
    return;
  }
  w.assign_index = std::move(index);
  w.assign_prefix = i + 1;
}

Status Lexer::array_literal(Word& w) {
  const Loc open = here();
  advance();  // (
  w.is_array = true;
  while (true) {
    if (pos_ >= s_.size()) return error("unterminated array: ( is never closed", open);
    const char c = s_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance();
    } else if (c == '\\' && peek(1) == '\n') {
      advance(2);
    } else if (c == '#') {
      while (pos_ < s_.size() && s_[pos_] != '\n') advance();
    } else if (c == ')') {
      advance();
      return ok_status();
    } else if (is_meta(c) && !(c == '<' && peek(1) == '(')) {
      return error(std::string("unexpected '") + c + "' in an array", here());
    } else {
      in_array_ = true;  // no arrays inside arrays
      auto e = read_word(false);
      in_array_ = false;
      if (!e.ok()) return e.error();
      w.array.push_back(std::move(e).value());
    }
  }
}

Status Lexer::single_quoted(Word& w) {
  const Loc open = here();
  advance();
  mark_quoted(w, open);
  while (pos_ < s_.size() && s_[pos_] != '\'') {
    add_literal(w, s_[pos_], true);
    advance();
  }
  if (pos_ >= s_.size()) return error("unterminated single quote", open);
  advance();
  return ok_status();
}

// $'...'
Status Lexer::ansi_c_quoted(Word& w) {
  const Loc open = here();
  advance(2);
  mark_quoted(w, open);
  while (pos_ < s_.size() && s_[pos_] != '\'') {
    char c = s_[pos_];
    if (c == '\\' && peek(1) != '\0') {
      advance();
      const char e = s_[pos_];
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
    }
    add_literal(w, c, true);
    advance();
  }
  if (pos_ >= s_.size()) return error("unterminated $' quote", open);
  advance();
  return ok_status();
}

Status Lexer::double_quoted(Word& w) {
  const Loc open = here();
  advance();
  mark_quoted(w, open);
  while (pos_ < s_.size() && s_[pos_] != '"') {
    const char c = s_[pos_];
    if (c == '\\') {
      const char n = peek(1);
      if (n == '$' || n == '`' || n == '"' || n == '\\') {
        advance();
        add_literal(w, n, true);
        advance();
      } else if (n == '\n') {
        advance(2);  // a continuation inside "..." disappears
      } else {
        add_literal(w, c, true);
        advance();
      }
    } else if (c == '$') {
      GRPO_TRY_STATUS(dollar(w, true));
    } else if (c == '`') {
      GRPO_TRY_STATUS(backquote(w, true));
    } else {
      add_literal(w, c, true);
      advance();
    }
  }
  if (pos_ >= s_.size()) return error("unterminated double quote", open);
  advance();
  return ok_status();
}

Status Lexer::backquote(Word& w, bool quoted) {
  WordPart p;
  p.kind = WordPart::Kind::kCommand;
  p.quoted = quoted;
  p.backquote = true;
  p.loc = here();
  advance();
  p.body_loc = here();
  while (pos_ < s_.size() && s_[pos_] != '`') {
    if (s_[pos_] == '\\' && peek(1) != '\0') {
      p.text += s_[pos_];
      advance();
    }
    p.text += s_[pos_];
    advance();
  }
  if (pos_ >= s_.size()) return error("unterminated backquote", p.loc);
  advance();
  w.parts.push_back(std::move(p));
  return ok_status();
}

Result<std::string> Lexer::balanced(char open, char close, Loc at, const char* what) {
  int depth = 1;
  std::string body;
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    if (c == '\'' || c == '"') {
      body += c;
      advance();
      while (pos_ < s_.size() && s_[pos_] != c) {
        if (c == '"' && s_[pos_] == '\\' && peek(1) != '\0') {
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
  return error(std::string("unterminated ") + what, at);
}

Status Lexer::dollar(Word& w, bool quoted) {
  WordPart p;
  p.quoted = quoted;
  p.loc = here();
  advance();  // $
  const char c = peek(0);
  if (c == '(' && peek(1) == '(') {
    advance(2);
    p.kind = WordPart::Kind::kArith;
    p.body_loc = here();
    GRPO_TRY(p.text, balanced('(', ')', p.loc, "$(( arithmetic"));
    if (peek(0) == ')') advance();
  } else if (c == '(') {
    advance();
    p.kind = WordPart::Kind::kCommand;
    p.body_loc = here();
    GRPO_TRY(p.text, balanced('(', ')', p.loc, "$( command substitution"));
  } else if (c == '{') {
    advance();
    p.kind = WordPart::Kind::kParam;
    p.braced = true;
    p.body_loc = here();
    GRPO_TRY(p.text, balanced('{', '}', p.loc, "${ parameter expansion"));
  } else if (c != '\0' && std::string_view("@*#?$!-0123456789").find(c) != npos) {
    p.kind = WordPart::Kind::kParam;
    p.text = std::string(1, c);
    advance();
  } else if (is_name_start(c)) {
    p.kind = WordPart::Kind::kParam;
    while (is_name_char(peek(0))) {
      p.text += peek(0);
      advance();
    }
  } else {
    WordPart lit;
    lit.quoted = quoted;
    lit.loc = p.loc;
    lit.text = "$";
    lit.locs = {p.loc};
    w.parts.push_back(std::move(lit));
    return ok_status();
  }
  w.parts.push_back(std::move(p));
  return ok_status();
}

Status Lexer::redirection() {
  const Loc at = here();
  const char c = s_[pos_];
  bool heredoc = false, strip_tabs = false;
  advance();
  if (c == '&') {
    advance();  // &> and &>>
    if (peek(0) == '>') advance();
  } else if (c == '<' && peek(0) == '<') {
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
  } else if (peek(0) == c || peek(0) == '&' || peek(0) == '|' || (c == '<' && peek(0) == '>')) {
    advance();
  }
  while (peek(0) == ' ' || peek(0) == '\t' || (peek(0) == '\\' && peek(1) == '\n'))
    advance(peek(0) == '\\' ? 2 : 1);
  if (pos_ >= s_.size() || is_meta(peek(0))) return error("redirection without a target", at);
  GRPO_TRY(Word target, read_word(false));
  if (heredoc) heredocs_.push_back(Heredoc{raw_text(target), strip_tabs, at});
  return ok_status();
}

Status Lexer::consume_heredocs() {
  for (const Heredoc& h : heredocs_) {
    bool closed = false;
    while (pos_ < s_.size()) {
      const std::size_t eol = s_.find('\n', pos_);
      std::string_view l = s_.substr(pos_, eol == npos ? s_.size() - pos_ : eol - pos_);
      if (h.strip_tabs) {
        while (!l.empty() && l.front() == '\t') l.remove_prefix(1);
      }
      advance(l.data() + l.size() - (s_.data() + pos_) + 1);
      if (l == h.delim) {
        closed = true;
        break;
      }
    }
    if (!closed) return error("here-document '" + h.delim + "' is never closed", h.loc);
  }
  heredocs_.clear();
  return ok_status();
}

bool is_name(std::string_view s) {
  if (s.empty() || !is_name_start(s[0])) return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return true;
}

std::string raw_text(const Word& w) {
  std::string out;
  for (const auto& p : w.parts) {
    switch (p.kind) {
      case WordPart::Kind::kLiteral:
        out += p.text;
        break;
      case WordPart::Kind::kParam:
        out += p.braced ? "${" + p.text + "}" : "$" + p.text;
        break;
      case WordPart::Kind::kCommand:
        out += p.backquote ? "`" + p.text + "`" : "$(" + p.text + ")";
        break;
      case WordPart::Kind::kArith:
        out += "$((" + p.text + "))";
        break;
      case WordPart::Kind::kTilde:
        out += "~";
        break;
    }
  }
  if (w.is_array) {
    out += "(";
    for (std::size_t i = 0; i < w.array.size(); ++i) out += (i ? " " : "") + raw_text(w.array[i]);
    out += ")";
  }
  return out;
}

Result<Word> parse_word_text(std::string_view text, Loc start, const std::string& file_name,
                             bool in_dq) {
  Lexer lex(text, start, file_name);
  return lex.whole_word(in_dq);
}

}  // namespace grpo::core::shell
