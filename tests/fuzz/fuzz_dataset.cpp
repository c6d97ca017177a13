// Fuzzes reading verl-format dataset files (trainer/common/src/dataset.cpp, docs/datasets.md):
// JSONL and JSON arrays of records, then verl's truncation of each record's message count as a
// stand-in for token ids. One-line errors naming the file, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "grpo/trainer/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace grpo::trainer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto records = parse_dataset(text, "train.jsonl", "prompt");
  if (!records.ok()) {
    const std::string msg = records.error().str();
    if (msg.find('\n') != std::string::npos || msg.rfind("train.jsonl", 0) != 0) __builtin_trap();
    return 0;
  }
  for (const DatasetRecord& r : *records) {
    if (r.prompt.empty()) __builtin_trap();
    std::vector<std::int64_t> ids(r.prompt.size() + r.ground_truth.size(), 1);
    for (auto t :
         {Truncation::kError, Truncation::kLeft, Truncation::kRight, Truncation::kMiddle}) {
      auto cut = truncate_prompt(ids, 3, t, r.where);
      if (cut.ok() && cut->size() > 3) __builtin_trap();
      if (!cut.ok() && t != Truncation::kError) __builtin_trap();
    }
  }
  return 0;
}
