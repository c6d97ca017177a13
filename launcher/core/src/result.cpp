#include "grpo/core/result.h"

namespace grpo::core {

std::string SourceLocation::str() const {
  if (file.empty()) return {};
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  return out;
}

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kParse:
      return "parse error";
    case ErrorKind::kInvalidValue:
      return "invalid value";
    case ErrorKind::kWrongType:
      return "wrong type";
    case ErrorKind::kUnknownKey:
      return "unknown key";
    case ErrorKind::kMissingKey:
      return "missing key";
    case ErrorKind::kNotFound:
      return "not found";
    case ErrorKind::kCycle:
      return "cycle";
    case ErrorKind::kIo:
      return "i/o error";
    case ErrorKind::kNoSpace:
      return "no space left";
    case ErrorKind::kUnavailable:
      return "unavailable";
    case ErrorKind::kRejected:
      return "rejected";
    case ErrorKind::kInfeasible:
      return "infeasible";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Error::str() const {
  std::string msg = message;
  // Errors are one line by contract: fold any newline a library put into its message.
  for (char& c : msg) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (where.known()) return where.str() + ": " + msg;
  return msg;
}

}  // namespace grpo::core
