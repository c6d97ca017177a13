// Fuzzes the cluster-profile loader: TOML parsing, schema validation, `extends` (the input may
// extend itself or the shipped-like parent) and --set overrides. Any input must give a profile
// or an Error with a one-line message; never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grpo/core/catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  using namespace grpo::core;
  MemorySourceProvider provider;
  provider.add(CatalogKind::kCluster, "input", text);
  provider.add(CatalogKind::kCluster, "parent",
               "name = \"parent\"\nnodes = 1\ngpus_per_node = 8\n[device]\nkind = \"x\"\n"
               "vendor = \"nvidia\"\nmemory_gib = 80\npeak_bf16_tflops = 1\npeak_fp16_tflops = 1\n"
               "memory_bandwidth_gbps = 1\nbf16 = true\n[network]\nintra_node = \"nvlink\"\n"
               "intra_node_gbps = 1\ninter_node = \"none\"\n");
  auto direct = parse_cluster_profile(text, "input.toml");
  if (!direct.ok() && direct.error().str().find('\n') != std::string::npos) __builtin_trap();
  auto loaded = load_cluster(provider, "input");
  if (!loaded.ok() && loaded.error().str().find('\n') != std::string::npos) __builtin_trap();
  // The first line, if it looks like key=value, is also tried as a --set override.
  const auto nl = text.find('\n');
  auto o = parse_override(text.substr(0, nl == std::string::npos ? text.size() : nl));
  if (o.ok()) {
    auto with = load_cluster(provider, "parent", {o.value()});
    if (!with.ok() && with.error().str().find('\n') != std::string::npos) __builtin_trap();
  }
  return 0;
}
