// Fuzzes config.json -> ModelSpec (core/hf_config.h) and the parameter counting that follows a
// successful read: one-line errors, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grpo/core/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace grpo::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = model_from_hf_config(text, "config.json", "input");
  if (!m.ok()) {
    if (m.error().str().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  if (count_params(m.value()).total() < 0) __builtin_trap();
  return 0;
}
