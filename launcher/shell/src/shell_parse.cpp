// The parsing phase of the shell reader: the tokens of shell_lexer.h to the syntax tree of
// shell_syntax.h (lists, pipelines, if / case / loops / groups / functions, [[ ]]).
#include <algorithm>

#include "shell_lexer.h"

namespace grpo::core::shell {
namespace {

std::string shorten(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\\' || c == '\n' || c == '\t' || c == ' ' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
    if (out.size() > 60) return out + "...";
  }
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, Loc start, const std::string& file)
      : text_(text), lex_(text, start, file), file_(file) {}

  Result<List> program() {
    GRPO_TRY(List l, list({}));
    GRPO_TRY(Token * t, peek());
    if (t->kind != Token::Kind::kEnd) return unexpected(*t);
    return l;
  }

 private:
  Result<Token*> peek() {
    if (!have_) {
      GRPO_TRY(tok_, lex_.next(cond_));
      have_ = true;
    }
    return &tok_;
  }
  Token take() {
    have_ = false;
    return std::move(tok_);
  }
  static bool is_word(const Token& t, std::string_view w) {
    return t.kind == Token::Kind::kWord && t.word.plain == w;
  }
  static bool is_op(const Token& t, std::string_view op) {
    return t.kind == Token::Kind::kOp && t.op == op;
  }
  Error error(std::string message, Loc at) const {
    return make_error(ErrorKind::kParse, std::move(message), {file_, at.line, at.col});
  }
  Error unexpected(const Token& t) const {
    switch (t.kind) {
      case Token::Kind::kEnd:
        return error("unexpected end of file", t.loc);
      case Token::Kind::kNewline:
        return error("unexpected end of line", t.loc);
      case Token::Kind::kWord:
        return error("unexpected `" + raw_text(t.word) + "`", t.loc);
      default:
        return error("unexpected `" + (t.kind == Token::Kind::kArith ? "((" : t.op) + "`", t.loc);
    }
  }
  Status skip_newlines() {
    while (true) {
      GRPO_TRY(Token * t, peek());
      if (t->kind != Token::Kind::kNewline) return ok_status();
      take();
    }
  }
  // Takes the reserved word `w` that closes the construct `what` opened at `open`.
  Status expect(std::string_view w, std::string_view what, Loc open) {
    GRPO_TRY(Token * t, peek());
    if (is_word(*t, w)) {
      take();
      return ok_status();
    }
    if (t->kind == Token::Kind::kEnd) {
      return error("`" + std::string(what) + "` is never closed with `" + std::string(w) + "`",
                   open);
    }
    return error("expected `" + std::string(w) + "`, found " +
                     (t->kind == Token::Kind::kWord      ? "`" + raw_text(t->word) + "`"
                      : t->kind == Token::Kind::kNewline ? std::string("end of line")
                                                         : "`" + t->op + "`"),
                 t->loc);
  }

  Result<List> list(std::vector<std::string_view> stops) {
    List out;
    while (true) {
      GRPO_TRY_STATUS(skip_newlines());
      GRPO_TRY(Token * t, peek());
      if (t->kind == Token::Kind::kEnd || is_op(*t, ")") || is_op(*t, ";;") || is_op(*t, ";&") ||
          is_op(*t, ";;&")) {
        break;
      }
      if (t->kind == Token::Kind::kWord &&
          std::find(stops.begin(), stops.end(), t->word.plain) != stops.end()) {
        break;
      }
      GRPO_TRY(AndOr a, and_or());
      GRPO_TRY(Token * sep, peek());
      if (is_op(*sep, "&") || is_op(*sep, ";")) {
        a.background = sep->op == "&";
        take();
      } else if (sep->kind != Token::Kind::kNewline) {
        out.push_back(std::move(a));
        break;
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  Result<AndOr> and_or() {
    AndOr a;
    GRPO_TRY(Token * first, peek());
    a.loc = first->loc;
    const std::size_t begin = first->begin;
    std::size_t end = begin;
    while (true) {
      GRPO_TRY(Pipeline p, pipeline(end));
      a.pipelines.push_back(std::move(p));
      GRPO_TRY(Token * t, peek());
      if (!is_op(*t, "&&") && !is_op(*t, "||")) break;
      a.and_op.push_back(t->op == "&&");
      take();
      GRPO_TRY_STATUS(skip_newlines());
    }
    a.text = end > begin ? shorten(text_.substr(begin, end - begin)) : std::string{};
    return a;
  }

  Result<Pipeline> pipeline(std::size_t& end) {
    Pipeline p;
    while (true) {
      GRPO_TRY(Token * t, peek());
      if (!is_word(*t, "!") && !is_word(*t, "time")) break;
      if (t->word.plain == "!") p.negated = !p.negated;
      take();
    }
    while (true) {
      GRPO_TRY(Command c, command(end));
      p.commands.push_back(std::move(c));
      GRPO_TRY(Token * t, peek());
      if (!is_op(*t, "|") && !is_op(*t, "|&")) break;
      take();
      GRPO_TRY_STATUS(skip_newlines());
    }
    return p;
  }

  Result<Command> command(std::size_t& end) {
    if (++depth_ > kMaxNesting) {
      GRPO_TRY(Token * t, peek());
      return error("commands nested deeper than " + std::to_string(kMaxNesting), t->loc);
    }
    auto r = command_inner();
    --depth_;
    end = last_end_;
    return r;
  }

  Result<Command> command_inner() {
    GRPO_TRY(Token * t, peek());
    Command c;
    c.loc = t->loc;
    if (t->kind == Token::Kind::kArith) {
      c.kind = Command::Kind::kArith;
      c.text = take().op;
      last_end_ = tok_.end;
      return c;
    }
    if (is_op(*t, "(")) {
      take();
      c.kind = Command::Kind::kSubshell;
      GRPO_TRY(c.body, list({}));
      GRPO_TRY(Token * close, peek());
      if (!is_op(*close, ")")) {
        if (close->kind == Token::Kind::kEnd) return error("`(` is never closed with `)`", c.loc);
        return unexpected(*close);
      }
      last_end_ = take().end;
      return c;
    }
    if (t->kind != Token::Kind::kWord) return unexpected(*t);
    const std::string w = t->word.plain;
    if (w == "if") return if_command(c);
    if (w == "case") return case_command(c);
    if (w == "for" || w == "select") return for_command(c);
    if (w == "while" || w == "until") return while_command(c, w == "while");
    if (w == "{") {
      take();
      c.kind = Command::Kind::kGroup;
      GRPO_TRY(c.body, list({"}"}));
      GRPO_TRY_STATUS(expect("}", "{", c.loc));
      last_end_ = tok_.end;
      return c;
    }
    if (w == "[[") return cond_command(c);
    if (w == "function") return function_command(c);
    for (const char* r : {"then", "elif", "else", "fi", "do", "done", "esac", "}", "]]"}) {
      if (w == r) return unexpected(*t);
    }
    c.kind = Command::Kind::kSimple;
    while (true) {
      GRPO_TRY(Token * n, peek());
      if (n->kind != Token::Kind::kWord) break;
      last_end_ = n->end;
      c.words.push_back(take().word);
    }
    GRPO_TRY(Token * n, peek());
    if (c.words.size() == 1 && is_op(*n, "(") && !c.words[0].plain.empty()) {  // name () body
      take();
      GRPO_TRY(Token * close, peek());
      if (!is_op(*close, ")")) return unexpected(*close);
      take();
      c.name = c.words[0].plain;
      c.words.clear();
      return function_rest(c);
    }
    return c;
  }

  Result<Command> function_command(Command& c) {
    take();  // function
    GRPO_TRY(Token * name, peek());
    if (name->kind != Token::Kind::kWord || name->word.plain.empty()) return unexpected(*name);
    c.name = take().word.plain;
    GRPO_TRY(Token * t, peek());
    if (is_op(*t, "(")) {
      take();
      GRPO_TRY(Token * close, peek());
      if (!is_op(*close, ")")) return unexpected(*close);
      take();
    }
    return function_rest(c);
  }

  Result<Command> function_rest(Command& c) {
    GRPO_TRY_STATUS(skip_newlines());
    c.kind = Command::Kind::kFunction;
    std::size_t end = 0;
    GRPO_TRY(Command body, command(end));
    c.function_body = std::make_shared<const Command>(std::move(body));
    return c;
  }

  Result<Command> if_command(Command& c) {
    take();
    c.kind = Command::Kind::kIf;
    while (true) {
      Clause cl;
      GRPO_TRY(cl.condition, list({"then"}));
      GRPO_TRY_STATUS(expect("then", "if", c.loc));
      GRPO_TRY(cl.body, list({"elif", "else", "fi"}));
      c.clauses.push_back(std::move(cl));
      GRPO_TRY(Token * t, peek());
      if (!is_word(*t, "elif")) break;
      take();
    }
    GRPO_TRY(Token * t, peek());
    if (is_word(*t, "else")) {
      take();
      GRPO_TRY(c.body, list({"fi"}));
    }
    GRPO_TRY_STATUS(expect("fi", "if", c.loc));
    last_end_ = tok_.end;
    return c;
  }

  Result<Command> case_command(Command& c) {
    take();
    c.kind = Command::Kind::kCase;
    GRPO_TRY(Token * subject, peek());
    if (subject->kind != Token::Kind::kWord) return unexpected(*subject);
    c.subject = take().word;
    GRPO_TRY_STATUS(skip_newlines());
    GRPO_TRY_STATUS(expect("in", "case", c.loc));
    while (true) {
      GRPO_TRY_STATUS(skip_newlines());
      GRPO_TRY(Token * t, peek());
      if (is_word(*t, "esac")) break;
      if (t->kind == Token::Kind::kEnd) return error("`case` is never closed with `esac`", c.loc);
      CaseArm arm;
      if (is_op(*t, "(")) take();
      while (true) {
        GRPO_TRY(Token * p, peek());
        if (p->kind != Token::Kind::kWord) return unexpected(*p);
        arm.patterns.push_back(take().word);
        GRPO_TRY(Token * sep, peek());
        if (is_op(*sep, ")")) {
          take();
          break;
        }
        if (!is_op(*sep, "|")) return unexpected(*sep);
        take();
      }
      GRPO_TRY(arm.body, list({"esac"}));
      GRPO_TRY(Token * end, peek());
      if (is_op(*end, ";;") || is_op(*end, ";&") || is_op(*end, ";;&")) {
        arm.fallthrough = end->op == ";&";
        arm.keep_matching = end->op == ";;&";
        take();
      } else if (!is_word(*end, "esac")) {
        return end->kind == Token::Kind::kEnd ? error("`case` is never closed with `esac`", c.loc)
                                              : unexpected(*end);
      }
      c.arms.push_back(std::move(arm));
    }
    take();
    last_end_ = tok_.end;
    return c;
  }

  Result<Command> for_command(Command& c) {
    take();
    c.kind = Command::Kind::kFor;
    GRPO_TRY(Token * t, peek());
    if (t->kind == Token::Kind::kArith) {
      take();  // for (( ...; ...; ... )): the variable stays unknown
    } else {
      if (t->kind != Token::Kind::kWord || !is_name(t->word.plain)) return unexpected(*t);
      c.name = take().word.plain;
      GRPO_TRY_STATUS(skip_newlines());
      GRPO_TRY(Token * in, peek());
      if (is_word(*in, "in")) {
        take();
        c.has_list = true;
        while (true) {
          GRPO_TRY(Token * w, peek());
          if (w->kind != Token::Kind::kWord) break;
          c.words.push_back(take().word);
        }
      }
    }
    GRPO_TRY(Token * sep, peek());
    if (is_op(*sep, ";")) take();
    GRPO_TRY_STATUS(skip_newlines());
    GRPO_TRY_STATUS(expect("do", "for", c.loc));
    GRPO_TRY(c.body, list({"done"}));
    GRPO_TRY_STATUS(expect("done", "for", c.loc));
    last_end_ = tok_.end;
    return c;
  }

  Result<Command> while_command(Command& c, bool is_while) {
    take();
    c.kind = is_while ? Command::Kind::kWhile : Command::Kind::kUntil;
    const char* what = is_while ? "while" : "until";
    Clause cl;
    GRPO_TRY(cl.condition, list({"do"}));
    GRPO_TRY_STATUS(expect("do", what, c.loc));
    GRPO_TRY(cl.body, list({"done"}));
    GRPO_TRY_STATUS(expect("done", what, c.loc));
    c.clauses.push_back(std::move(cl));
    last_end_ = tok_.end;
    return c;
  }

  Result<Command> cond_command(Command& c) {
    take();
    c.kind = Command::Kind::kCond;
    cond_ = true;
    while (true) {
      auto t = peek();
      if (!t.ok()) {
        cond_ = false;
        return t.error();
      }
      Token* tok = t.value();
      if (tok->kind == Token::Kind::kNewline) {
        take();
        continue;
      }
      if (tok->kind == Token::Kind::kEnd) {
        cond_ = false;
        return error("`[[` is never closed with `]]`", c.loc);
      }
      if (is_word(*tok, "]]")) break;
      if (tok->kind != Token::Kind::kWord) {
        cond_ = false;
        return unexpected(*tok);
      }
      c.words.push_back(take().word);
    }
    cond_ = false;
    last_end_ = take().end;
    return c;
  }

  std::string_view text_;
  Lexer lex_;
  const std::string& file_;
  Token tok_;
  bool have_ = false;
  bool cond_ = false;
  int depth_ = 0;
  std::size_t last_end_ = 0;
};

}  // namespace

Result<List> parse_script(std::string_view text, Loc start, const std::string& file_name) {
  Parser p(text, start, file_name);
  return p.program();
}

}  // namespace grpo::core::shell
