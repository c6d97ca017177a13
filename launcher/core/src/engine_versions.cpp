#include "grpo/core/engine_versions.h"
#include "grpo/core/text.h"

#include <charconv>
#include <vector>

namespace grpo::core {
namespace {

Error bad(std::string_view part, const std::string& why) {
  return make_error(ErrorKind::kInvalidValue,
                    "--engines: '" + std::string(part) + "': " + why +
                        " (expected e.g. verl=0.7,megatron=0.15,vllm=0.12)");
}

// "0.15" or "0.10.2": two or three non-negative integers separated by dots.
bool parse_version(std::string_view text, EngineVersion& out) {
  std::vector<int> parts;
  for (const std::string_view piece : split(text, '.')) {
    int v = 0;
    const auto [p, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v);
    if (piece.empty() || ec != std::errc{} || p != piece.data() + piece.size() || v < 0) {
      return false;
    }
    parts.push_back(v);
  }
  if (parts.size() < 2 || parts.size() > 3) return false;
  out = EngineVersion{parts[0], parts[1], parts.size() == 3 ? parts[2] : 0};
  return true;
}

}  // namespace

std::string EngineVersion::str() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (patch != 0) s += "." + std::to_string(patch);
  return s;
}

std::string EngineVersions::str() const {
  return "verl=" + verl.str() + ",megatron=" + megatron.str() + ",vllm=" + vllm.str();
}

Result<EngineVersions> parse_engine_versions(std::string_view spec) {
  EngineVersions out;
  bool seen[3] = {false, false, false};
  for (const std::string_view part : split(spec, ',')) {
    if (part.empty()) {
      return make_error(ErrorKind::kInvalidValue,
                        "--engines: empty part in '" + std::string(spec) +
                            "' (expected e.g. verl=0.7,megatron=0.15,vllm=0.12)");
    }
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) return bad(part, "expected ENGINE=VERSION");
    const std::string_view name = part.substr(0, eq);
    int index = -1;
    EngineVersion* target = nullptr;
    if (name == "verl") {
      index = 0;
      target = &out.verl;
    } else if (name == "megatron") {
      index = 1;
      target = &out.megatron;
    } else if (name == "vllm") {
      index = 2;
      target = &out.vllm;
    } else {
      return bad(part, "unknown engine '" + std::string(name) + "' (verl, megatron or vllm)");
    }
    if (seen[index]) return bad(part, std::string(name) + " is given twice");
    seen[index] = true;
    if (!parse_version(part.substr(eq + 1), *target)) {
      return bad(part, "'" + std::string(part.substr(eq + 1)) +
                           "' is not a version of the form MAJOR.MINOR[.PATCH]");
    }
  }
  return out;
}

}  // namespace grpo::core
