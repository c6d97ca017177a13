// The hand-made tokenizer of tests/data/tokenizer/tiny, loaded once per test binary.
#pragma once

#include <filesystem>
#include <stdexcept>

#include "grpo/tokenizer/bpe.h"

namespace grpo::tokenizer::testing {

inline const std::filesystem::path kTiny =
    std::filesystem::path(GRPO_SOURCE_DIR) / "tests/data/tokenizer/tiny";

inline const Tokenizer& tiny() {
  static const Tokenizer t = [] {
    auto r = Tokenizer::load(kTiny);
    if (!r.ok()) throw std::runtime_error(r.error().str());
    return *r;
  }();
  return t;
}

}  // namespace grpo::tokenizer::testing
