// The line protocol of `grpo-trainer tokenize` (docs/tokenizer.md#cli), here so that it is tested
// in process: one JSON value per input line, one JSON value per output line.
//   encode  "text"                       -> [ids]
//   decode  [ids]                        -> "text"
//   chat    [{"role":..,"content":..}]   -> [ids] of the rendered chat template
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string_view>

#include "grpo/core/result.h"
#include "grpo/tokenizer/bpe.h"

namespace grpo::tokenizer {

enum class StreamMode { kEncode, kDecode, kChat };

struct StreamOptions {
  StreamMode mode = StreamMode::kEncode;
  ChatOptions chat;           // kChat
  bool skip_special = false;  // kDecode
};

// One line of JSON. Invalid UTF-8 bytes become U+FFFD and unpaired \uD800-\uDFFF escapes become
// \uFFFD first (what Node's stdin decoding and TextEncoder do). Errors (kParse): the message and
// the 1-based column in `where`'s column (the caller sets file and line).
core::Result<nlohmann::json> parse_json_line(std::string_view line);

// Reads `in` to its end, writing one line to `out` per input line (flushed per line). Stops at
// the first bad line: Error with where = {input_name, line, column}; the lines before it have
// been written.
core::Status tokenize_stream(const Tokenizer& tokenizer, const StreamOptions& options,
                             std::istream& in, std::ostream& out,
                             std::string_view input_name = "<stdin>");

}  // namespace grpo::tokenizer
