// Encoding speed of grpo_tokenizer (bench/tokenizer/run.sh compares it with transformers.js).
// Usage: tokenizer_bench TOKENIZER_DIR CORPUS.jsonl [PASSES]
//   CORPUS: one JSON string per line. One untimed pass, then PASSES timed passes over all lines.
// Prints one JSON object: load seconds, tokens per pass, tokens/s, MB/s.
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/stream.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tokenizer_bench TOKENIZER_DIR CORPUS.jsonl [PASSES]\n";
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const int passes = argc > 3 ? std::stoi(argv[3]) : 5;
  const auto t0 = Clock::now();
  auto tok = grpo::tokenizer::Tokenizer::load(argv[1]);
  if (!tok.ok()) {
    std::cerr << tok.error().str() << "\n";
    return 2;
  }
  const double load_s = secs(Clock::now() - t0);
  std::vector<std::string> lines;
  std::size_t bytes = 0;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    auto j = grpo::tokenizer::parse_json_line(line);
    if (!j.ok() || !j->is_string()) {
      std::cerr << argv[2] << ":" << lines.size() + 1 << ": expected a JSON string\n";
      return 2;
    }
    lines.push_back(j->get<std::string>());
    bytes += lines.back().size();
  }
  std::vector<grpo::tokenizer::TokenId> ids;
  std::size_t tokens = 0;
  for (const auto& l : lines) tokens += tok->encode(l).size();  // warm-up
  const auto t1 = Clock::now();
  std::size_t check = 0;
  for (int p = 0; p < passes; ++p) {
    for (const auto& l : lines) {
      ids.clear();
      tok->encode_append(l, ids);
      check += ids.size();
    }
  }
  const double s = secs(Clock::now() - t1);
  if (check != tokens * static_cast<std::size_t>(passes)) return 1;
  nlohmann::json out{{"impl", "c++ grpo_tokenizer"},
                     {"load_s", load_s},
                     {"lines", lines.size()},
                     {"bytes", bytes},
                     {"tokens", tokens},
                     {"passes", passes},
                     {"seconds", s},
                     {"tokens_per_s", static_cast<double>(check) / s},
                     {"mb_per_s", static_cast<double>(bytes) * passes / s / 1e6}};
  std::cout << out.dump() << "\n";
  return 0;
}
