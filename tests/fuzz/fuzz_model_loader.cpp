// Fuzzes the model-spec loader and the parameter counting that follows a successful load.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grpo/core/catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  using namespace grpo::core;
  MemorySourceProvider provider;
  provider.add(CatalogKind::kModel, "input", text);
  auto m = load_model(provider, "input");
  if (!m.ok()) {
    if (m.error().str().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  const ParamCounts c = count_params(m.value());
  if (c.total() < 0) __builtin_trap();
  return 0;
}
