// Fuzzes config.json -> ModelSpec (core/hf_config.h) and the parameter counting that follows a
// successful read: one-line errors, never a crash; a model that is read has every count
// between 0 and kMaxModelParams (no count wraps: check_model_size, docs/security.md).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grpo/core/hf_config.h"
#include "grpo/core/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace grpo::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = model_from_hf_config(text, "config.json", "input");
  if (!m.ok()) {
    if (m.error().str().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  const ParamCounts c = count_params(m.value());
  for (std::int64_t part : {c.embedding, c.lm_head, c.attention, c.dense_mlp, c.router,
                            c.routed_experts, c.shared_experts, c.norms, c.vision, c.mtp}) {
    if (part < 0) __builtin_trap();
  }
  if (c.total() < 0 || c.stored() > kMaxModelParams) __builtin_trap();
  if (c.active(m.value()) < 0 || c.active(m.value()) > c.total()) __builtin_trap();
  return 0;
}
