// grpo-trainer's command line (CLI11). Exit codes: exit_codes.h.
#include <CLI/CLI.hpp>

#include <iostream>

#include "grpo/trainer/config.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/trainer.h"
#include "grpo/trainer/version.h"
#include "tokenize_command.h"

namespace grpo::trainer {

int run_trainer_cli(int argc, char** argv) {
  CLI::App app{
      "grpo-trainer: the embedded GRPO trainer (LibTorch). Rank and rendezvous come from PMIx or "
      "the torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).\n"
      "Events: one JSON object per line on stdout (docs/telemetry.md); logs on stderr.\n"
      "Exit codes: 0 done, 1 internal error, 2 usage/config error, 3 I/O error, 4 communication "
      "failure, 5 out of memory, 6 injected crash, 7 stopped on request.\n"
      "Subcommands: tokenize (Qwen's tokenizer on stdin/stdout; see `grpo-trainer tokenize "
      "--help`), forward (one forward pass printing logits; `grpo-trainer forward --help`)."};
  app.set_version_flag("--version", std::string("grpo-trainer ") + std::string(version()) +
                                        " (c10d: " + std::string(comm_backends()) + ")");
  TrainerOptions o;
  std::string run_dir = o.run_dir.string();
  bool list_keys = false;
  app.add_option("--config", o.config_file, "TOML config file (verl-style keys)");
  app.add_option("--set", o.overrides, "override one setting: key=value (repeatable)");
  app.add_option("--model", o.model,
                 "model name (PROFILE_DIR/models/NAME.toml), spec file, or Hugging Face model "
                 "directory (config.json + safetensors weights; docs/hf-checkpoints.md)");
  app.add_option("--profile-dir", o.profile_dir,
                 "profiles directory holding models/ (default: $GRPO_PROFILE_DIR, else the "
                 "shipped <prefix>/share/grpo-launch/profiles)");
  app.add_option("--run-dir", run_dir, "run directory: checkpoints/, control/, faults/")
      ->capture_default_str();
  app.add_option("--resume", o.resume,
                 "auto (newest valid checkpoint), none, or a checkpoint "
                 "directory")
      ->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--fault", o.faults, "inject a fault, e.g. crash@step=12,rank=1 (repeatable)");
  app.add_flag("--list-keys", list_keys, "print every config key with its default and exit");

  TokenizeCommand tc;
  CLI::App* tokenize = app.add_subcommand(
      "tokenize",
      "Tokenize with a Hugging Face byte-level BPE tokenizer (Qwen2/2.5/3; docs/tokenizer.md). "
      "Reads one JSON value per line on stdin, writes one JSON value per line on stdout:\n"
      "  (default)  \"text\" -> [ids]; no special tokens are added, but special-token text in "
      "the input (\"<|im_end|>\") becomes that token, as Hugging Face does\n"
      "  --decode   [ids] -> \"text\" (bytes that are not UTF-8 become U+FFFD)\n"
      "  --chat     [{\"role\": ..., \"content\": ...}, ...] -> [ids] of the chat template "
      "(Qwen2.5 or Qwen3, rendered in C++) with the generation prompt\n"
      "Invalid UTF-8 and lone \\uD800-\\uDFFF escapes in the input become U+FFFD.\n"
      "Exit codes: 0 done; 2 bad tokenizer files or a bad input line (stops there, one line on "
      "stderr: <stdin>:LINE[:COL]: message); 3 I/O error.");
  tokenize
      ->add_option("--tokenizer", tc.tokenizer_dir,
                   "directory with tokenizer.json and tokenizer_config.json")
      ->required();
  CLI::Option* decode_flag =
      tokenize->add_flag("--decode", tc.decode, "ids -> text instead of text -> ids");
  tokenize->add_flag("--chat", tc.chat, "messages -> ids of the rendered chat template")
      ->excludes(decode_flag);
  tokenize->add_flag("--no-thinking", tc.no_thinking,
                     "--chat: Qwen3's enable_thinking=false (an empty <think> block)");
  tokenize->add_flag("--no-generation-prompt", tc.no_generation_prompt,
                     "--chat: leave out the assistant turn's opening");
  tokenize->add_flag("--skip-special-tokens", tc.skip_special_tokens,
                     "--decode: leave out special tokens");
  ForwardOptions fo;
  CLI::App* forward = app.add_subcommand(
      "forward",
      "Run the model once over token ids and print its logits as one JSON line "
      "{\"model\", \"ids\", \"logits\": [[...] per position]} (for checking a loaded "
      "checkpoint against another implementation). A Hugging Face directory's weights are loaded "
      "(docs/hf-checkpoints.md); any other model is randomly initialized from --seed.\n"
      "Exit codes: 0 done; 2 bad model, checkpoint or ids (one line on stderr); 3 I/O error.");
  forward
      ->add_option("--model", fo.model,
                   "model name, spec file, or Hugging Face directory (config.json + safetensors)")
      ->required();
  forward->add_option("--profile-dir", fo.profile_dir, "profiles directory holding models/");
  forward->add_option("--ids", fo.ids, "token ids, comma-separated: 1,2,3")
      ->required()
      ->delimiter(',');
  forward->add_option("--kernels", fo.kernels, "reference or fused")->capture_default_str();
  forward->add_option("--seed", fo.seed, "initial weights of a model that is not a directory")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (tokenize->parsed()) return run_tokenize_command(tc);
  if (forward->parsed()) return run_forward(fo);
  if (list_keys) {
    for (const ConfigKey& k : config_keys()) {
      std::cout << k.name << " = " << k.default_text << "  # " << k.type << ": " << k.doc << "\n";
    }
    return kExitOk;
  }
  o.run_dir = run_dir;
  return run_trainer(o);
}

}  // namespace grpo::trainer
