// The grpo-launch commands. Each takes parsed arguments, does its I/O through the adapters, and
// returns an exit code (exit_codes.h). main.cpp only wires CLI11 to these.
#pragma once

#include <string>
#include <vector>

namespace grpo::cli {

struct GlobalArgs {
  std::vector<std::string> profile_dirs;
  std::string log_level = "warn";
};

struct PlanArgs {
  std::string profile;
  std::string model;
  std::vector<std::string> sets;  // "key=value"
  std::string format = "text";
  int alternatives = 3;
  bool dry_run = false;
};

struct CheckArgs {
  std::vector<std::string> files;
  std::string profile;
  std::string model;
  std::vector<std::string> sets;
  bool parallel = false;
  bool memory = false;
  bool data_types = false;
  std::string format = "text";
};

int cmd_plan(const GlobalArgs& global, const PlanArgs& args);
int cmd_check(const GlobalArgs& global, const CheckArgs& args);
int cmd_profiles(const GlobalArgs& global, const std::string& format);

// One line on stderr: "grpo-launch: error: <message>".
void print_error(const std::string& message);

}  // namespace grpo::cli
