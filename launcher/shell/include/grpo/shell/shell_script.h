// A static reader for the bash scripts that launch verl. It parses the script (quoting,
// continuations, comments, redirections, here-documents, if / case / loops / functions), then
// follows it in order without running anything: assignments (plain, exported, arrays, command
// prefixes), parameter expansions (${VAR:-default} and friends), word splitting of unquoted
// expansions, "$@" and "${ARR[@]}", decidable if / case tests, function calls and `source` of
// files next to the script. Whatever it cannot resolve statically (command substitution, unset
// variables, an undecidable branch) is marked unresolved with its place. Pure; see docs/check.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

// Why a word could not be resolved (the kind shared by all its unresolved parts, else kMixed).
enum class UnresolvedKind {
  kNone,
  kCommandSubstitution,  // $(...) or `...` other than the dirname / pwd idioms
  kArithmetic,           // $((...)) over unknown values
  kUnsetVariable,        // $VAR never set in the script, without a default
  kRequiredVariable,     // ${VAR:?message} with VAR unset
  kPositional,           // $1, $#, ... of the script
  kConditional,          // set differently in branches that cannot be decided, a loop variable
  kRunTime,              // $RANDOM, $$, $SECONDS, $?: only known when the script runs
  kOther,                // $RANDOM, ${!indirect}, an unsupported expansion
  kMixed,                // parts of several kinds
};

// One word of a command after expansion, word splitting and quote removal.
struct ShellWord {
  std::string text;            // the expanded text (unresolved parts are kept verbatim)
  std::string file;            // the file the location is in (the script, or a file it sources)
  std::uint32_t line = 0;      // physical line where the word starts (see docs/check.md)
  std::uint32_t column = 0;    // 1-based column where the word starts
  bool unresolved = false;     // some part could not be expanded statically
  std::string unresolved_why;  // e.g. "command substitution $(...)", "unset variable $FOO"
  UnresolvedKind unresolved_kind = UnresolvedKind::kNone;
  bool from_args = false;       // the word is "$@" / "$*" of the script (arguments not known)
  bool from_expansion = false;  // a field of an unquoted or "${ARR[@]}" expansion: the location
                                // is where its text starts in the variable's value
};

struct ShellAssignment {
  std::string name;
  ShellWord value;        // located at the assignment word; arrays: elements joined by spaces
  bool exported = false;  // `export NAME=value`, or a prefix of a command
};

struct ShellCommand {
  std::vector<ShellAssignment> prefix;  // NAME=value words before the command name
  std::vector<ShellWord> words;         // the command and its arguments
  std::string file;                     // the file the command is written in
  std::uint32_t line = 0;               // first line of the command
  // The exported variables as the command starts (its own prefix not included).
  std::shared_ptr<const std::map<std::string, ShellAssignment>> exported;
  // Why the command may or may not run: the undecidable tests and loops around it, each with
  // its file:line:col ("`if [ -f $X ]` at run.sh:12:1 cannot be decided statically").
  std::vector<std::string> conditions;
};

struct ParsedScript {
  std::string file;
  std::vector<ShellCommand> commands;  // in the order they run, assignments-only ones included
  // Every variable assignment in order (plain, exported, command prefixes), and the final value
  // of each exported variable.
  std::vector<ShellAssignment> assignments;
  std::map<std::string, ShellAssignment> exports;
  std::vector<std::string> sourced;  // files read with `source` / `.`
  // What the reader did not follow, with file:line:col: sources not found or outside the
  // script's directory, calls nested too deeply.
  std::vector<std::string> notes;
};

struct ShellReadOptions {
  // Variables known before the script starts (e.g. HOME). Anything else unset is unresolved.
  std::map<std::string, std::string> environment = {
      {"HOME", "/root"}, {"USER", "root"}, {"PWD", "."}};
  // Reads a file named by `source FILE`. The path is FILE resolved against the directory of
  // the script's file name; files outside that directory are never asked for. Without a
  // reader, `source` is not followed (a note).
  std::function<Result<std::string>(const std::string& path)> read_file;
  int max_source_depth = 8;  // `source` inside sourced files, at most this deep
};

// Reads a script. Errors (kParse, with file:line:col): an unterminated quote, ${...}, $(...),
// array or here-document; an unclosed if / case / loop / group; a NUL byte; a script whose
// expansions grow past the reader's bounds. Inputs over 4 MiB are refused.
Result<ParsedScript> read_shell_script(std::string_view text, std::string_view file_name,
                                       const ShellReadOptions& options = {});

}  // namespace grpo::core
