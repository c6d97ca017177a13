// `grpo-trainer tokenize`: the tokenizer (trainer/tokenizer) on stdin/stdout, one JSON value per
// line (docs/tokenizer.md#cli). LibTorch-free, like cli.cpp.
#include "tokenize_command.h"

#include <iostream>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/stream.h"
#include "grpo/trainer/exit_codes.h"

namespace grpo::trainer {

int run_tokenize_command(const TokenizeCommand& c) {
  auto tok = tokenizer::Tokenizer::load(c.tokenizer_dir);
  if (!tok.ok()) {
    std::cerr << "grpo-trainer tokenize: " << tok.error().str() << "\n";
    return tok.error().kind == core::ErrorKind::kIo ? kExitIo : kExitUsage;
  }
  tokenizer::StreamOptions o;
  o.mode = c.decode ? tokenizer::StreamMode::kDecode
           : c.chat ? tokenizer::StreamMode::kChat
                    : tokenizer::StreamMode::kEncode;
  o.chat.add_generation_prompt = !c.no_generation_prompt;
  o.chat.enable_thinking = !c.no_thinking;
  o.skip_special = c.skip_special_tokens;
  std::ios::sync_with_stdio(false);
  const auto st = tokenizer::tokenize_stream(*tok, o, std::cin, std::cout);
  if (!st.ok()) {
    std::cerr << "grpo-trainer tokenize: " << st.error().str() << "\n";
    return st.error().kind == core::ErrorKind::kIo ? kExitIo : kExitUsage;
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitIo;
}

}  // namespace grpo::trainer
