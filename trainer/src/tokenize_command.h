// `grpo-trainer tokenize` (tokenize_command.cpp); cli.cpp parses its options.
#pragma once

#include <string>

namespace grpo::trainer {

struct TokenizeCommand {
  std::string tokenizer_dir;  // holds tokenizer.json (and tokenizer_config.json)
  bool decode = false;
  bool chat = false;
  bool no_thinking = false;           // --chat: Qwen3's enable_thinking=false
  bool no_generation_prompt = false;  // --chat: no "<|im_start|>assistant\n" at the end
  bool skip_special_tokens = false;   // --decode
};

// Exit codes: 0, 2 (unreadable tokenizer files or a bad input line: one line on stderr naming
// the file:line:col or <stdin>:LINE), 3 (reading the tokenizer or writing stdout failed).
int run_tokenize_command(const TokenizeCommand& command);

}  // namespace grpo::trainer
