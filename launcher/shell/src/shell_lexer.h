// Internal to the shell reader: the lexer of shell_parse.cpp (words with their parts, operators,
// newlines; comments, continuations, redirections and here-document bodies are consumed here).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shell_syntax.h"

namespace grpo::core::shell {

struct Token {
  enum class Kind { kWord, kOp, kNewline, kArith, kEnd };
  Kind kind = Kind::kEnd;
  std::string op;  // operators; (( ... )): the expression
  Word word;
  Loc loc;
  std::size_t begin = 0, end = 0;  // offsets in the text
};

class Lexer {
 public:
  Lexer(std::string_view s, Loc start, const std::string& file)
      : s_(s), file_(file), line_(start.line), col_(start.col), file_index_(start.file) {}

  Result<Token> next(bool cond_mode);

  // Reads the whole text as one word (the word of ${NAME:-word}).
  Result<Word> whole_word(bool in_dq);

 private:
  static constexpr std::size_t npos = std::string_view::npos;
  struct Heredoc {
    std::string delim;
    bool strip_tabs = false;
    Loc loc;
  };
  Loc here() const { return Loc{file_index_, line_, col_}; }
  char peek(std::size_t ahead) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void advance(std::size_t n = 1);
  Error error(std::string message, Loc at) const;
  static bool is_meta(char c);

  // Words: literal characters with their places, quotes, $-expansions, arrays.
  Result<Word> read_word(bool cond_mode);
  void add_literal(Word& w, char c, bool quoted);
  void mark_quoted(Word& w, Loc at);  // "" and '' keep an empty word
  static void classify_assignment(Word& w);
  Status array_literal(Word& w);
  Status single_quoted(Word& w);
  Status ansi_c_quoted(Word& w);  // $'...'
  Status double_quoted(Word& w);
  Status backquote(Word& w, bool quoted);
  Status dollar(Word& w, bool quoted);
  // A balanced (...) or {...} body after its opening bracket; quotes are skipped over.
  Result<std::string> balanced(char open, char close, Loc at, const char* what);

  Status redirection();
  Status consume_heredocs();  // after a newline: skips pending here-document bodies

  std::string_view s_;
  const std::string& file_;
  std::size_t pos_ = 0;
  std::uint32_t line_, col_, file_index_;
  std::vector<Heredoc> heredocs_;
  bool in_array_ = false;
};

}  // namespace grpo::core::shell
