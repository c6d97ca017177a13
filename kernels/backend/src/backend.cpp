#include "grpo/kernels/backend.h"

#include <string>

namespace grpo::kernels {

std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::kReference:
      return "reference";
    case Backend::kFused:
      return "fused";
  }
  return "unknown";
}

std::vector<std::string_view> backend_names() {
  return {"fused", "reference"};
}

core::Result<Backend> parse_backend(std::string_view name) {
  if (name == "reference") return Backend::kReference;
  if (name == "fused") return Backend::kFused;
  std::string accepted;
  for (std::string_view n : backend_names()) {
    if (!accepted.empty()) accepted += ", ";
    accepted += n;
  }
  return core::make_error(
      core::ErrorKind::kInvalidValue,
      "unknown kernels backend '" + std::string(name) + "' (accepted: " + accepted + ")");
}

}  // namespace grpo::kernels
