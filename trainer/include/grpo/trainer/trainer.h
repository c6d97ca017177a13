// grpo-trainer's entry points. LibTorch-free: the executable's main() and the tests include this
// without paying for torch headers. Behaviour: docs/trainer.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace grpo::trainer {

struct TrainerOptions {
  std::string config_file;             // TOML; empty: defaults only
  std::vector<std::string> overrides;  // "key=value", applied after the file
  std::string model;                   // name or spec file; overrides actor_rollout_ref.model.path
  std::string profile_dir;             // where model names are looked up; empty: built-in default
  std::filesystem::path run_dir = "runs/grpo-trainer";
  std::string resume = "auto";      // auto | none | PATH (maps to trainer.resume_mode)
  std::string log_level = "info";   // trace | debug | info | warn | error | off
  std::vector<std::string> faults;  // --fault specs (the only way to inject faults)
};

// Runs training to the end. Never throws; returns an exit code from exit_codes.h.
int run_trainer(const TrainerOptions& options);

// `grpo-trainer forward`: one forward pass for checking a loaded model against another
// implementation (tests/trainer/hf_reference.py). Prints {"model", "ids", "logits": [[V floats]
// per position]} as one JSON line on stdout, at full float precision.
struct ForwardOptions {
  std::string model;        // a model name, spec file or Hugging Face directory (weights loaded)
  std::string profile_dir;  // as TrainerOptions::profile_dir
  std::vector<std::int64_t> ids;
  std::string kernels = "reference";  // reference | fused
  std::int64_t seed = 1;              // initial weights of a model that is not a directory
};
// Never throws; returns an exit code from exit_codes.h (2: bad model, checkpoint or ids).
int run_forward(const ForwardOptions& options);

// Parses argv (CLI11) and calls run_trainer. --help / --version exit 0; bad flags exit 2.
int run_trainer_cli(int argc, char** argv);

}  // namespace grpo::trainer
