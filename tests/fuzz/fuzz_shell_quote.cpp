// Fuzzes core::split_command_line and core::shell_quote: any input gives argv or a one-line
// error, never a crash; argv survives shell_join + split unchanged; a quoted value splits back to
// exactly itself (docs/sbatch-template.md, "Quoting rules").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grpo/shell/shell_quote.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  auto words = grpo::core::split_command_line(input);
  if (words.ok()) {
    for (const auto& w : words.value()) {
      if (grpo::core::has_nul(w)) std::abort();
    }
    auto again = grpo::core::split_command_line(grpo::core::shell_join(words.value()));
    if (!again.ok() || again.value() != words.value()) std::abort();
  } else if (words.error().message.find('\n') != std::string::npos) {
    std::abort();
  }
  if (!grpo::core::has_nul(input)) {
    auto one = grpo::core::split_command_line(grpo::core::shell_quote(input));
    if (one.ok() && (one.value().size() != 1 || one.value()[0] != input)) std::abort();
    // Refused only as an assignment (a quoted word never has an unquoted metacharacter).
    if (!one.ok() && one.error().message.find("assignment") == std::string::npos) std::abort();
  }
  return 0;
}
