#include "grpo/core/standby_go.h"

namespace grpo::core {

std::string encode_standby_go(const std::map<std::string, std::string>& env) {
  std::string go;
  for (const auto& [k, v] : env) {
    go += k + "=" + v;
    go += '\0';
  }
  go += '\0';
  return go;
}

std::optional<std::vector<std::pair<std::string, std::string>>> decode_standby_go(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (true) {
    const auto end = text.find('\0', pos);
    if (end == std::string_view::npos) return std::nullopt;  // the message is not complete
    const std::string_view entry = text.substr(pos, end - pos);
    if (entry.empty()) return out;
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos && eq > 0) {
      out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
    pos = end + 1;
  }
}

}  // namespace grpo::core
