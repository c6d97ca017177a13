#include "grpo/core/toml_reader.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <sstream>

#include "grpo/core/text.h"

namespace grpo::core {
namespace {

constexpr std::size_t kMaxDocumentBytes = 1 << 20;
constexpr int kMaxNesting = 64;

// toml11 formats errors over several lines with an underlined excerpt. Fold that into one line:
// the message, the caret's label, and the caret's line:column.
Error syntax_error_to_error(const toml::exception& e, std::string_view file_name) {
  const std::string what = e.what();
  std::vector<std::string> lines;
  {
    std::istringstream in(what);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::string message = lines.empty() ? std::string("syntax error") : lines.front();
  if (message.rfind("[error] ", 0) == 0) message.erase(0, 8);
  if (message.rfind("toml::", 0) == 0) {
    const auto colon = message.find(": ");
    if (colon != std::string::npos) message.erase(0, colon + 2);
  }
  SourceLocation where{std::string(file_name), e.location().line(), 0};
  std::string label;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    // " 12 | text" followed by "    |   ^--- label"
    const std::string_view row = lines[i];
    const auto bar = row.find(" | ");
    if (bar == std::string::npos) continue;
    const std::string_view num = trim(row.substr(0, bar));
    if (num.empty() ||
        !std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const std::string_view under = lines[i + 1];
    const auto ubar = under.find("| ");
    if (ubar == std::string::npos) continue;
    const auto caret = under.find_first_of("^~", ubar + 2);
    if (caret == std::string::npos) continue;
    where.line = static_cast<std::uint32_t>(std::stoul(std::string(num)));
    where.column = static_cast<std::uint32_t>(caret - (ubar + 2) + 1);
    const auto dash = under.find("--- ", caret);
    label = dash == std::string::npos ? std::string{} : std::string(under.substr(dash + 4));
  }
  if (!label.empty() && label != message) message += " (" + label + ")";
  return make_error(ErrorKind::kParse, message, where);
}

std::string type_name(const TomlValue& v) {
  switch (v.type()) {
    case toml::value_t::boolean:
      return "a boolean";
    case toml::value_t::integer:
      return "an integer";
    case toml::value_t::floating:
      return "a float";
    case toml::value_t::string:
      return "a string";
    case toml::value_t::array:
      return "an array";
    case toml::value_t::table:
      return "a table";
    case toml::value_t::empty:
      return "nothing";
    default:
      return "a date/time";
  }
}

}  // namespace

namespace {

// toml11 3.7.1 reads an integer literal beyond int64 as INT64_MAX or INT64_MIN without a word
// (99999999999999999999 became 9223372036854775807). TOML 1.0 makes that an error: every value
// read as one of the two limits is read again from its literal, and refused if it overflows.
bool integer_literal_overflows(std::string literal) {
  literal.erase(std::remove(literal.begin(), literal.end(), '_'), literal.end());
  bool negative = false;
  if (!literal.empty() && (literal[0] == '+' || literal[0] == '-')) {
    negative = literal[0] == '-';
    literal.erase(0, 1);
  }
  int base = 10;
  if (literal.size() > 2 && literal[0] == '0' &&
      (literal[1] == 'x' || literal[1] == 'o' || literal[1] == 'b')) {
    base = literal[1] == 'x' ? 16 : literal[1] == 'o' ? 8 : 2;
    literal.erase(0, 2);
  }
  if (negative) literal.insert(0, "-");
  std::int64_t v = 0;
  const auto r = std::from_chars(literal.data(), literal.data() + literal.size(), v, base);
  return r.ec == std::errc::result_out_of_range;
}

Status check_integer_range(const TomlValue& v, std::string_view file_name) {
  if (v.is_table()) {
    for (const auto& [k, item] : v.as_table())
      GRPO_TRY_STATUS(check_integer_range(item, file_name));
  } else if (v.is_array()) {
    for (const auto& item : v.as_array()) GRPO_TRY_STATUS(check_integer_range(item, file_name));
  } else if (v.is_integer() && (v.as_integer() == std::numeric_limits<std::int64_t>::max() ||
                                v.as_integer() == std::numeric_limits<std::int64_t>::min())) {
    const auto loc = v.location();
    const std::string& line = loc.line_str();
    const std::size_t at = loc.column() > 0 ? loc.column() - 1 : 0;
    if (at < line.size() &&
        integer_literal_overflows(line.substr(at, std::max<std::size_t>(loc.region(), 1)))) {
      SourceLocation where = location_of(v);
      if (!where.known()) where = {std::string(file_name), 0, 0};
      return make_error(
          ErrorKind::kParse,
          "integer " + line.substr(at, loc.region()) + " is out of range (-2^63 to 2^63 - 1)",
          where);
    }
  }
  return ok_status();
}

}  // namespace

Result<TomlValue> parse_toml(std::string_view text, std::string_view file_name) {
  if (text.size() > kMaxDocumentBytes) {
    return make_error(ErrorKind::kParse, "document larger than 1 MiB",
                      {std::string(file_name), 0, 0});
  }
  // Bracket nesting bound (toml11's parser recurses per level). Strings and comments may hold
  // brackets; counting them too only makes the bound stricter, never unsafe.
  int depth = 0;
  std::uint32_t line = 1;
  for (char c : text) {
    if (c == '\n') ++line;
    if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        return make_error(ErrorKind::kParse, "nesting deeper than 64 levels",
                          {std::string(file_name), line, 0});
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == '\n') {
      // Table headers and values close on their line in practice; a newline does not reset.
    }
  }
  // TOML documents are UTF-8 (TOML 1.0, "Spec"). Checked here because toml11 3.7.1 reads past the
  // end of its buffer on some invalid bytes inside a literal string (found by
  // tests/fuzz/fuzz_model_loader; the crash input is in tests/fuzz/seeds/toml).
  if (const auto bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    const std::string_view before = text.substr(0, bad);
    const auto nl = before.rfind('\n');
    const auto row = static_cast<std::uint32_t>(std::count(before.begin(), before.end(), '\n') + 1);
    const auto col = static_cast<std::uint32_t>(nl == std::string_view::npos ? bad + 1 : bad - nl);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    return make_error(ErrorKind::kParse, std::string("invalid UTF-8 (byte ") + hex + ")",
                      {std::string(file_name), row, col});
  }
  std::istringstream in{std::string(text)};
  try {
    TomlValue doc =
        toml::parse<toml::discard_comments, std::map, std::vector>(in, std::string(file_name));
    GRPO_TRY_STATUS(check_integer_range(doc, file_name));
    return doc;
  } catch (const toml::exception& e) {
    return syntax_error_to_error(e, file_name);
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kParse, e.what(), {std::string(file_name), 0, 0});
  }
}

SourceLocation location_of(const TomlValue& value) {
  const auto loc = value.location();
  if (loc.file_name() == "unknown file") return {};
  // Values from `--set key=value` (catalog.cpp parses them as "--set ..." documents): the
  // option itself is the location; line and column inside it mean nothing to a user.
  if (loc.file_name().rfind("--set ", 0) == 0) return SourceLocation{loc.file_name(), 0, 0};
  return SourceLocation{loc.file_name(), loc.line(), loc.column()};
}

TableReader::TableReader(const TomlValue& table, std::string path)
    : table_(table), path_(std::move(path)) {}

bool TableReader::has(std::string_view key) const {
  return table_.is_table() && table_.as_table().count(std::string(key)) > 0;
}

const TomlValue* TableReader::raw(std::string_view key) {
  known_.insert(std::string(key));
  if (!table_.is_table()) return nullptr;
  const auto& t = table_.as_table();
  const auto it = t.find(std::string(key));
  return it == t.end() ? nullptr : &it->second;
}

void TableReader::ignore(std::string_view key) {
  known_.insert(std::string(key));
}

SourceLocation TableReader::where(std::string_view key) const {
  if (table_.is_table()) {
    const auto& t = table_.as_table();
    const auto it = t.find(std::string(key));
    if (it != t.end()) return location_of(it->second);
  }
  return where();
}

SourceLocation TableReader::where() const {
  return location_of(table_);
}

Error TableReader::wrong_type(std::string_view key, std::string_view expected) const {
  const auto& t = table_.as_table();
  const auto& v = t.at(std::string(key));
  return make_error(
      ErrorKind::kWrongType,
      path_ + std::string(key) + ": expected " + std::string(expected) + ", got " + type_name(v),
      where(key));
}

#define GRPO_READ_PROLOGUE(key, required)                                                 \
  const TomlValue* v = raw(key);                                                          \
  if (v == nullptr) {                                                                     \
    if (required)                                                                         \
      return make_error(ErrorKind::kMissingKey,                                           \
                        path_ + std::string(key) + ": required key is missing", where()); \
    return ok_status();                                                                   \
  }

Status TableReader::read(std::string_view key, std::string& out, bool required) {
  GRPO_READ_PROLOGUE(key, required)
  // A bare `00:30:00` (`time = 00:30:00`, `--set slurm.time=00:30:00`) is a TOML local time:
  // read it as the text the user wrote (HH:MM:SS; a time limit is never fractional).
  if (v->is_local_time()) {
    const toml::local_time& t = v->as_local_time();
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", static_cast<int>(t.hour),
                  static_cast<int>(t.minute), static_cast<int>(t.second));
    out = buf;
    return ok_status();
  }
  if (!v->is_string()) return wrong_type(key, "a string");
  out = v->as_string().str;
  return ok_status();
}

Status TableReader::read(std::string_view key, bool& out, bool required) {
  GRPO_READ_PROLOGUE(key, required)
  if (!v->is_boolean()) return wrong_type(key, "a boolean");
  out = v->as_boolean();
  return ok_status();
}

Status TableReader::read(std::string_view key, double& out, bool required) {
  GRPO_READ_PROLOGUE(key, required)
  if (v->is_floating()) {
    out = v->as_floating();
  } else if (v->is_integer()) {
    out = static_cast<double>(v->as_integer());
  } else {
    return wrong_type(key, "a number");
  }
  if (!(out == out) || out == std::numeric_limits<double>::infinity() ||
      out == -std::numeric_limits<double>::infinity()) {
    return make_error(ErrorKind::kInvalidValue, path_ + std::string(key) + ": must be finite",
                      where(key));
  }
  return ok_status();
}

Status TableReader::read(std::string_view key, std::vector<std::string>& out, bool required) {
  GRPO_READ_PROLOGUE(key, required)
  if (!v->is_array()) return wrong_type(key, "an array of strings");
  std::vector<std::string> items;
  for (const auto& item : v->as_array()) {
    if (!item.is_string()) {
      return make_error(
          ErrorKind::kWrongType,
          path_ + std::string(key) + ": expected an array of strings, found " + type_name(item),
          location_of(item));
    }
    items.push_back(item.as_string().str);
  }
  out = std::move(items);
  return ok_status();
}

Status TableReader::read(std::string_view key, std::map<std::string, std::string>& out) {
  const TomlValue* v = raw(key);
  if (v == nullptr) return ok_status();
  if (!v->is_table()) return wrong_type(key, "a table");
  for (const auto& [k, item] : v->as_table()) {
    if (item.is_string()) {
      out[k] = item.as_string().str;
    } else if (item.is_integer()) {
      out[k] = std::to_string(item.as_integer());
    } else if (item.is_boolean()) {
      out[k] = item.as_boolean() ? "1" : "0";
    } else {
      return make_error(
          ErrorKind::kWrongType,
          path_ + std::string(key) + "." + k + ": expected a string, got " + type_name(item),
          location_of(item));
    }
  }
  return ok_status();
}

Status TableReader::read_int(std::string_view key, std::int64_t& out, std::int64_t min,
                             std::int64_t max, bool required) {
  GRPO_READ_PROLOGUE(key, required)
  if (!v->is_integer()) return wrong_type(key, "an integer");
  const std::int64_t value = v->as_integer();
  if (value < min || value > max) {
    std::string range =
        value < min && min == 1 && max == std::numeric_limits<std::int64_t>::max()
            ? "must be positive"
            : "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    return make_error(ErrorKind::kInvalidValue,
                      path_ + std::string(key) + " = " + std::to_string(value) + ": " + range,
                      where(key));
  }
  out = value;
  return ok_status();
}

Status TableReader::read_int(std::string_view key, int& out, int min, int max, bool required) {
  std::int64_t wide = out;
  GRPO_TRY_STATUS(read_int(key, wide, min, max, required));
  out = static_cast<int>(wide);
  return ok_status();
}

Status TableReader::read_positive(std::string_view key, double& out, bool allow_zero,
                                  bool required) {
  double value = out;
  GRPO_TRY_STATUS(read(key, value, required));
  if (has(key) && (value < 0 || (!allow_zero && value == 0))) {
    return make_error(ErrorKind::kInvalidValue,
                      path_ + std::string(key) + " = " + format_fixed(value, 3) + ": must be " +
                          (allow_zero ? "zero or positive" : "positive"),
                      where(key));
  }
  out = value;
  return ok_status();
}

Status TableReader::read_enum(std::string_view key, std::string& out,
                              const std::vector<std::string>& choices, bool required) {
  std::string value = out;
  GRPO_TRY_STATUS(read(key, value, required));
  if (!has(key)) return ok_status();
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    return make_error(ErrorKind::kInvalidValue,
                      path_ + std::string(key) + " = \"" + value + "\": must be one of " + list +
                          did_you_mean(value, choices),
                      where(key));
  }
  out = value;
  return ok_status();
}

Result<const TomlValue*> TableReader::table(std::string_view key) {
  const TomlValue* v = raw(key);
  if (v != nullptr && !v->is_table()) return wrong_type(key, "a table");
  return v;
}

Status TableReader::finish() const {
  if (!table_.is_table()) return ok_status();
  std::vector<std::string> known(known_.begin(), known_.end());
  for (const auto& [k, v] : table_.as_table()) {
    if (known_.count(k) == 0) {
      return make_error(ErrorKind::kUnknownKey,
                        "unknown key '" + path_ + k + "'" + did_you_mean(k, known), location_of(v));
    }
  }
  return ok_status();
}

}  // namespace grpo::core
