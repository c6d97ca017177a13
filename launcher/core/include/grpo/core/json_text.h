// JSON documents as text: the one way the project turns a nlohmann::json into bytes. Strings
// that hold bytes which are not UTF-8 (a rank's output, a health check's stderr, a --set value)
// are written with U+FFFD in their place instead of throwing: nothing a rank or a user types can
// stop the supervisor from writing its event log, run files or status (docs/security.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace grpo::core {

// `j` as JSON text: compact when `indent` < 0, else pretty-printed with `indent` spaces. Invalid
// UTF-8 in any string is replaced (U+FFFD per ill-formed subsequence); never throws.
// (nlohmann::json and nlohmann::ordered_json alike.)
template <typename Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace grpo::core
