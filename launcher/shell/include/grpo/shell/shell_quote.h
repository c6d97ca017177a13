// Quoting for bash (and any POSIX shell): the one way a value reaches a generated script.
// Pure; see docs/sbatch-template.md ("Quoting rules").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

// `value` as ONE shell word that expands to exactly `value`, with nothing executed or expanded:
//   - non-empty, only [A-Za-z0-9_@%+=:,./-], and not NAME=... (which would be an assignment as
//     a command's first word): returned as is (the readable common case, e.g. --nodes=2);
//   - otherwise wrapped in single quotes, each ' written as '\'' ("it's" -> 'it'\''s').
// Empty -> ''. Newlines, tabs, $, `, \, ;, quotes stay literal inside the single quotes. A NUL
// byte cannot be passed through a shell at all: callers refuse such values first
// (has_nul / validate in sbatch_script.h); shell_quote keeps it verbatim.
std::string shell_quote(std::string_view value);

// The words quoted one by one and joined with single spaces.
std::string shell_join(const std::vector<std::string>& words);

// True for a valid environment variable name for `export`: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view name);

// True when `value` contains a NUL byte.
bool has_nul(std::string_view value);

// `name` with every character outside [A-Za-z0-9._-] replaced by '_' (empty -> "_"); for names
// the launcher derives itself (job name, default run directory) from profile and model names.
std::string sanitize_name(std::string_view name);

// Splits a command line written in shell syntax (`--trainer-cmd '...'`) into argv WITHOUT a
// shell: words separated by blanks; '...' literal; "..." literal except \" \\ \$ \` escapes;
// a backslash outside quotes escapes the next character. Anything a shell would expand or
// interpret is refused, not guessed (kInvalidValue, naming the character and its 1-based
// column): unquoted ; & | < > ( ) { } * ? [ ] ~ # $ ` and newlines, $ or ` inside double
// quotes, an unterminated quote, a NUL byte, an empty command. A leading NAME=value word is
// refused too (it would be an assignment in a shell).
Result<std::vector<std::string>> split_command_line(std::string_view text);

}  // namespace grpo::core
