#include "grpo/tokenizer/stream.h"
#include "grpo/core/json_text.h"

#include <istream>
#include <ostream>
#include <string>

#include "grpo/tokenizer/utf8.h"

namespace grpo::tokenizer {

using core::ErrorKind;
using core::make_error;
using nlohmann::json;

core::Result<json> parse_json_line(std::string_view line) {
  const std::string text = replace_lone_surrogate_escapes(to_valid_utf8(line));
  try {
    return json::parse(text);
  } catch (const json::out_of_range& e) {  // a number too large for any type
    return make_error(ErrorKind::kParse, std::string("invalid JSON: ") + e.what());
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (const auto p = msg.find(": "); p != std::string::npos && msg.rfind("[json", 0) == 0) {
      msg = msg.substr(p + 2);
    }
    return make_error(ErrorKind::kParse, "invalid JSON: " + msg,
                      core::SourceLocation{"", 0, static_cast<std::uint32_t>(e.byte)});
  }
}

namespace {

core::Result<std::string> one_line(const Tokenizer& t, const StreamOptions& o,
                                   std::string_view line) {
  if (o.mode == StreamMode::kChat) {
    GRPO_TRY(const auto messages, chat_messages_from_json(line));
    GRPO_TRY(const auto ids, t.encode_chat(messages, o.chat));
    return core::json_text(json(ids));
  }
  GRPO_TRY(const json j, parse_json_line(line));
  if (o.mode == StreamMode::kEncode) {
    if (!j.is_string()) return make_error(ErrorKind::kWrongType, "expected a JSON string");
    return core::json_text(json(t.encode(j.get_ref<const std::string&>())));
  }
  if (!j.is_array()) return make_error(ErrorKind::kWrongType, "expected a JSON list of ids");
  std::vector<TokenId> ids;
  ids.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer() || j[i].get<std::int64_t>() < 0 ||
        j[i].get<std::int64_t>() > INT32_MAX) {
      return make_error(ErrorKind::kWrongType,
                        "element " + std::to_string(i) + ": expected a token id (integer >= 0)");
    }
    ids.push_back(j[i].get<TokenId>());
  }
  GRPO_TRY(const std::string text, t.decode(ids, o.skip_special));
  return core::json_text(json(text));
}

}  // namespace

core::Status tokenize_stream(const Tokenizer& t, const StreamOptions& o, std::istream& in,
                             std::ostream& out, std::string_view input_name) {
  std::string line;
  std::uint32_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto r = one_line(t, o, line);
    if (!r.ok()) {
      core::Error e = r.error();
      e.where = core::SourceLocation{std::string(input_name), n, e.where.column};
      return e;
    }
    out << *r << '\n' << std::flush;
  }
  if (in.bad()) return make_error(ErrorKind::kIo, std::string(input_name) + ": read failed");
  return core::ok_status();
}

}  // namespace grpo::tokenizer
