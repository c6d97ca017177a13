// What render, submit and run print alike (launch_commands.cpp); what they share otherwise is
// the launch use case (grpo/app/launch.h: build_launch_plan, prepare, run_dir_files, ...).
#pragma once

#include <string>

#include "commands.h"
#include "grpo/app/launch.h"

namespace grpo::cli {

// "Run directory: ...", then how to follow job `id` (its output, squeue, status).
void print_follow(const std::string& run_dir, const std::string& id);

}  // namespace grpo::cli
