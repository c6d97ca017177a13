// The bash completion script and the man page, generated from the CLI11 definition itself so
// they never drift from the options grpo-launch really has (`grpo-launch completion bash`,
// `grpo-launch man`; installed by CMake, tested in tests/cli/completion_man_test.sh).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace grpo::cli {

// A bash completion function `_grpo_launch` for `complete -F`: subcommands, each command's
// options, and the names of cluster profiles and models for --profile / --model.
std::string bash_completion(const CLI::App& app);

// A man page in roff (man(7) macros): NAME, SYNOPSIS, DESCRIPTION, global OPTIONS, one
// subsection per command with its options, EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO.
std::string man_page(const CLI::App& app, const std::string& version, const std::string& date);

}  // namespace grpo::cli
