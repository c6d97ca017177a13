// Internal to the shell reader: the syntax tree of a bash script and the parser that builds it
// (shell_parse.cpp). Nothing here is expanded or evaluated; shell_eval.h does that.
#pragma once

#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core::shell {

// Compound commands nested deeper than this (if in if in ...) are a parse error.
constexpr int kMaxNesting = 100;

// A place in one of the files being read (an index into the evaluator's file table).
struct Loc {
  std::uint32_t file = 0;
  std::uint32_t line = 0;
  std::uint32_t col = 0;
};

struct WordPart {
  enum class Kind {
    kLiteral,  // text as written (quotes removed)
    kParam,    // $NAME, $1, $@, ${...}
    kCommand,  // $(...), `...`, <(...)
    kArith,    // $((...))
    kTilde,    // ~ at the start of a word: $HOME
  };
  Kind kind = Kind::kLiteral;
  bool quoted = false;     // literal: quoted or escaped; others: inside "..."
  std::string text;        // literal text; parameter name or ${...} body; command / arithmetic body
  std::vector<Loc> locs;   // literal: where each character is
  Loc loc;                 // where the part starts
  Loc body_loc;            // ${...}, $(...), $((...)): where the body starts
  bool braced = false;     // ${...}
  bool backquote = false;  // `...`
};

struct Word {
  std::vector<WordPart> parts;
  Loc loc;
  std::string plain;  // the text when the word is one unquoted literal (reserved words), else ""
  // NAME=value, NAME+=value, NAME[sub]=value: the evaluator takes these as assignments only in
  // assignment position. assign_prefix is the length of "NAME=" in the first (literal) part.
  std::string assign_name;
  std::string assign_index;  // the subscript of NAME[sub]=value
  bool assign_append = false;
  std::size_t assign_prefix = 0;
  bool is_array = false;    // NAME=( ... )
  std::vector<Word> array;  // its elements
};

struct Command;

struct Pipeline {
  bool negated = false;
  std::vector<Command> commands;
};

// Pipelines joined by && and ||; `text` is the source, shortened, for messages.
struct AndOr {
  std::vector<Pipeline> pipelines;
  std::vector<bool> and_op;  // and_op[i]: && (else ||) between pipelines i and i + 1
  bool background = false;   // ended by &
  Loc loc;
  std::string text;
};

using List = std::vector<AndOr>;

struct Clause {
  List condition;
  List body;
};

struct CaseArm {
  std::vector<Word> patterns;
  List body;
  bool fallthrough = false;    // ;&
  bool keep_matching = false;  // ;;&
};

struct Command {
  enum class Kind {
    kSimple,
    kIf,
    kCase,
    kFor,
    kWhile,
    kUntil,
    kGroup,
    kSubshell,
    kFunction,
    kCond,   // [[ ... ]]
    kArith,  // (( ... ))
  };
  Kind kind = Kind::kSimple;
  Loc loc;
  std::vector<Word> words;      // simple: all words; [[ ]]: the operands; for: the list
  std::string name;             // for: the variable; function: its name
  bool has_list = false;        // for NAME in WORDS
  std::vector<Clause> clauses;  // if / elif; while / until: one
  List body;                    // if: else; group, subshell, for
  std::shared_ptr<const Command> function_body;
  Word subject;               // case
  std::vector<CaseArm> arms;  // case
  std::string text;           // (( ... )): the expression
};

// Parses a script. `start` is where `text` begins (a sourced file: line 1; the body of a
// command substitution: where it is in its file). Errors: kParse, "file:line:col: message".
Result<List> parse_script(std::string_view text, Loc start, const std::string& file_name);

// Lexes `text` as the single word inside ${NAME:-word} (white space included). in_dq: the
// expansion is inside "...", where single quotes are literal.
Result<Word> parse_word_text(std::string_view text, Loc start, const std::string& file_name,
                             bool in_dq);

// The text of a word with quotes removed and expansions left as written (here-document
// delimiters, function names).
std::string raw_text(const Word& w);

// Shell names: [A-Za-z_][A-Za-z0-9_]*.
inline bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
inline bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name(std::string_view s);

}  // namespace grpo::core::shell
