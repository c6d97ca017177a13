// A static reader for the bash scripts that launch verl: it follows line continuations,
// comments, quoting, variable assignments (plain, exported, and as command prefixes) and the
// parameter expansions such scripts use (${VAR}, ${VAR:-default}, $VAR, $@), and splits the
// script into commands of words. It never runs anything: whatever it cannot resolve statically
// (command substitution, arithmetic, unset variables) is marked unresolved with its line.
// Pure; see docs/check.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

// One word of a command after expansion and quote removal.
struct ShellWord {
  std::string text;            // the expanded text (unresolved parts are kept verbatim)
  std::uint32_t line = 0;      // physical line where the word starts
  std::uint32_t column = 0;    // 1-based column where the word starts
  bool unresolved = false;     // some part could not be expanded statically
  std::string unresolved_why;  // e.g. "command substitution $(...)", "unset variable $FOO"
  bool from_args = false;      // the word is "$@" / "$*" (arguments passed to the script)
};

struct ShellAssignment {
  std::string name;
  ShellWord value;
  bool exported = false;  // `export NAME=value`, or a prefix of a command
};

struct ShellCommand {
  std::vector<ShellAssignment> prefix;  // NAME=value words before the command name
  std::vector<ShellWord> words;         // the command and its arguments
  std::uint32_t line = 0;               // first line of the command
};

struct ParsedScript {
  std::string file;
  std::vector<ShellCommand> commands;  // in order, assignments-only commands included
  // Every variable assignment in order (plain, exported, command prefixes), and the final
  // value of each exported variable.
  std::vector<ShellAssignment> assignments;
  std::map<std::string, ShellAssignment> exports;
};

struct ShellReadOptions {
  // Variables known before the script starts (e.g. HOME). Anything else unset is unresolved.
  std::map<std::string, std::string> environment = {
      {"HOME", "/root"}, {"USER", "root"}, {"PWD", "."}};
};

// Reads a script. Errors (kParse, with file:line:col): an unterminated quote, ${...}, $(...) or
// here-document; a NUL byte. Inputs over 4 MiB are refused.
Result<ParsedScript> read_shell_script(std::string_view text, std::string_view file_name,
                                       const ShellReadOptions& options = {});

}  // namespace grpo::core
