// render / submit --engine verl (verl_commands.cpp, docs/verl.md).
#pragma once

#include "commands.h"

namespace grpo::cli {

// `check` of args.script first (its report and exit code when it finds errors), then the run
// directory: with `submit` written and sbatch'ed (the same exits as submit), else (render, or
// submit --dry-run) the batch script printed.
int cmd_verl(const GlobalArgs& global, const LaunchArgs& args, bool submit);

}  // namespace grpo::cli
