// Reading verl-format records (dataset.h): JSONL or a JSON array, one-line errors with the
// record's file:line. Only grpo_core, grpo_tokenizer's chat messages and nlohmann-json: the fuzz
// tree (tests/fuzz/fuzz_dataset.cpp) compiles this file as it is.
#include "grpo/trainer/dataset.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "grpo/core/json_text.h"
#include "grpo/core/text.h"

namespace grpo::trainer {
namespace {

using core::ErrorKind;
using core::make_error;
using core::SourceLocation;
using nlohmann::json;

// "[json.exception.parse_error.101] parse error at line 1, column 2: x" -> "x".
std::string json_reason(const json::exception& e) {
  std::string msg = e.what();
  if (const auto colon = msg.rfind(": "); colon != std::string::npos) msg = msg.substr(colon + 2);
  return msg;
}

// Line and column (1-based) of byte `offset` of `text`, plus `first_line` - 1 lines.
SourceLocation location_in(std::string_view text, std::string_view file, std::size_t offset,
                           std::uint32_t first_line) {
  offset = std::min(offset, text.size());
  std::uint32_t line = first_line, col = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return SourceLocation{std::string(file), line, col};
}

core::Result<json> parse_json_at(std::string_view text, std::string_view file,
                                 std::uint32_t first_line) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte: 1-based offset of the byte where parsing failed.
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    return make_error(ErrorKind::kParse, "not valid JSON: " + json_reason(e),
                      location_in(text, file, at, first_line));
  } catch (const json::exception& e) {  // out_of_range: a number too large for any type
    return make_error(ErrorKind::kParse, "not valid JSON: " + json_reason(e),
                      SourceLocation{std::string(file), first_line, 0});
  }
}

core::Result<DatasetRecord> to_record(const json& j, std::string_view prompt_key,
                                      const SourceLocation& where) {
  auto fail = [&](ErrorKind kind, const std::string& msg) { return make_error(kind, msg, where); };
  if (!j.is_object()) return fail(ErrorKind::kWrongType, "a record must be a JSON object");
  DatasetRecord r;
  r.where = where;
  const std::string key(prompt_key);
  const auto prompt = j.find(key);
  if (prompt == j.end()) {
    return fail(ErrorKind::kMissingKey, "missing '" + key + "' (data.prompt_key)");
  }
  if (!prompt->is_array()) {
    return fail(ErrorKind::kWrongType, key + ": expected a list of chat messages");
  }
  // The chat reader names the message ("messages[1].content: ..."); the record names the field.
  auto messages = tokenizer::chat_messages_from_json(core::json_text(*prompt));
  if (!messages.ok()) return fail(messages.error().kind, key + ": " + messages.error().message);
  if (messages->empty()) return fail(ErrorKind::kInvalidValue, key + ": no messages");
  r.prompt = std::move(messages).value();

  const auto source = j.find("data_source");
  if (source == j.end()) return fail(ErrorKind::kMissingKey, "missing 'data_source'");
  if (!source->is_string()) return fail(ErrorKind::kWrongType, "data_source: expected a string");
  r.data_source = source->get<std::string>();

  const auto rm = j.find("reward_model");
  if (rm == j.end()) return fail(ErrorKind::kMissingKey, "missing 'reward_model'");
  if (!rm->is_object()) return fail(ErrorKind::kWrongType, "reward_model: expected an object");
  const auto gt = rm->find("ground_truth");
  if (gt == rm->end()) return fail(ErrorKind::kMissingKey, "missing 'reward_model.ground_truth'");
  if (gt->is_string()) {
    r.ground_truth = gt->get<std::string>();
  } else if (gt->is_number()) {
    r.ground_truth = core::json_text(*gt);
  } else {
    return fail(ErrorKind::kWrongType, "reward_model.ground_truth: expected a string or a number");
  }

  if (const auto extra = j.find("extra_info"); extra != j.end() && !extra->is_null()) {
    if (!extra->is_object()) return fail(ErrorKind::kWrongType, "extra_info: expected an object");
    if (const auto answer = extra->find("answer"); answer != extra->end() && answer->is_string()) {
      r.answer = answer->get<std::string>();
    }
  }
  return r;
}

}  // namespace

core::Result<std::vector<DatasetRecord>> parse_dataset(std::string_view text,
                                                       std::string_view file_name,
                                                       std::string_view prompt_key) {
  std::vector<DatasetRecord> out;
  const std::string file(file_name);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    // One JSON array: records are numbered by the line their object starts on.
    GRPO_TRY(const json doc, parse_json_at(text, file_name, 1));
    if (!doc.is_array()) {
      return make_error(ErrorKind::kWrongType, "expected a JSON array of records",
                        SourceLocation{file, 1, 0});
    }
    std::size_t i = 0;
    for (const json& j : doc) {
      GRPO_TRY(
          DatasetRecord r,
          to_record(j, prompt_key, SourceLocation{file + "[" + std::to_string(i) + "]", 0, 0}));
      out.push_back(std::move(r));
      ++i;
    }
    return out;
  }
  std::uint32_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (core::trim(line).empty()) continue;
    GRPO_TRY(const json j, parse_json_at(line, file_name, line_no));
    GRPO_TRY(DatasetRecord r, to_record(j, prompt_key, SourceLocation{file, line_no, 0}));
    out.push_back(std::move(r));
  }
  return out;
}

core::Result<Truncation> parse_truncation(std::string_view name) {
  if (name == "error") return Truncation::kError;
  if (name == "left") return Truncation::kLeft;
  if (name == "right") return Truncation::kRight;
  if (name == "middle") return Truncation::kMiddle;
  return make_error(ErrorKind::kInvalidValue, "data.truncation: '" + std::string(name) +
                                                  "' is not one of: error, left, right, middle");
}

core::Result<std::vector<std::int64_t>> truncate_prompt(std::vector<std::int64_t> ids,
                                                        std::int64_t max_length,
                                                        Truncation truncation,
                                                        const SourceLocation& where) {
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n <= max_length) return ids;
  switch (truncation) {
    case Truncation::kError:
      return make_error(ErrorKind::kInvalidValue,
                        "prompt of " + std::to_string(n) + " tokens is longer than " +
                            "data.max_prompt_length (" + std::to_string(max_length) +
                            "): raise it, or set data.truncation or "
                            "data.filter_overlong_prompts=true",
                        where);
    case Truncation::kLeft:
      return std::vector<std::int64_t>(ids.end() - max_length, ids.end());
    case Truncation::kRight:
      return std::vector<std::int64_t>(ids.begin(), ids.begin() + max_length);
    case Truncation::kMiddle: {
      const std::int64_t left = max_length / 2;
      std::vector<std::int64_t> out(ids.begin(), ids.begin() + left);
      out.insert(out.end(), ids.end() - (max_length - left), ids.end());
      return out;
    }
  }
  return ids;
}

}  // namespace grpo::trainer
