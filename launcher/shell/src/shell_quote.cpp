#include "grpo/shell/shell_quote.h"

namespace grpo::core {

namespace {

bool is_safe_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '_':
    case '@':
    case '%':
    case '+':
    case '=':
    case ':':
    case ',':
    case '.':
    case '/':
    case '-':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string shell_quote(std::string_view value) {
  bool safe = !value.empty();
  for (char c : value) safe = safe && is_safe_char(c);
  // NAME=value as a command's first word would be an assignment: quote it.
  const auto eq = value.find('=');
  if (safe && eq != std::string_view::npos && is_env_name(value.substr(0, eq))) safe = false;
  if (safe) return std::string(value);
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back('\'');
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out.push_back(' ');
    out += shell_quote(w);
  }
  return out;
}

bool is_env_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

bool has_nul(std::string_view value) {
  return value.find('\0') != std::string_view::npos;
}

std::string sanitize_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty()) out = "_";
  return out;
}

}  // namespace grpo::core

namespace grpo::core {

namespace {

Error split_error(std::string_view what, std::size_t index) {
  return make_error(ErrorKind::kInvalidValue,
                    std::string(what) + " at column " + std::to_string(index + 1) +
                        " (the command is run without a shell: quote it, or give a plain "
                        "program and arguments)");
}

std::string describe_char(char c) {
  if (c == '\n') return "a newline";
  if (c == '\r') return "a carriage return";
  return std::string("'") + c + "'";
}

}  // namespace

Result<std::vector<std::string>> split_command_line(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  std::size_t i = 0;
  const auto finish = [&] {
    if (in_word) words.push_back(std::move(word));
    word.clear();
    in_word = false;
  };
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return split_error("NUL byte", nul);
  }
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t') {
      finish();
      ++i;
      continue;
    }
    if (c == '\'') {
      const std::size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) return split_error("unterminated single quote", i);
      word.append(text.substr(i + 1, end - i - 1));
      in_word = true;
      i = end + 1;
      continue;
    }
    if (c == '"') {
      const std::size_t start = i;
      ++i;
      bool closed = false;
      while (i < text.size()) {
        const char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' ||
             text[i + 1] == '`')) {
          word.push_back(text[i + 1]);
          i += 2;
          continue;
        }
        if (d == '$' || d == '`') {
          return split_error(describe_char(d) + " inside double quotes would be expanded", i);
        }
        word.push_back(d);
        ++i;
      }
      if (!closed) return split_error("unterminated double quote", start);
      in_word = true;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= text.size()) return split_error("trailing backslash", i);
      if (text[i + 1] == '\n') return split_error("line continuation", i);
      word.push_back(text[i + 1]);
      in_word = true;
      i += 2;
      continue;
    }
    switch (c) {
      case ';':
      case '&':
      case '|':
      case '<':
      case '>':
      case '(':
      case ')':
      case '{':
      case '}':
      case '*':
      case '?':
      case '[':
      case ']':
      case '$':
      case '`':
      case '\n':
      case '\r':
        return split_error("unquoted " + describe_char(c), i);
      case '~':
      case '#':
        if (!in_word) return split_error("unquoted " + describe_char(c) + " starting a word", i);
        break;
      default:
        break;
    }
    word.push_back(c);
    in_word = true;
    ++i;
  }
  finish();
  if (words.empty()) {
    return make_error(ErrorKind::kInvalidValue, "the command is empty");
  }
  const auto eq = words.front().find('=');
  if (eq != std::string::npos && is_env_name(std::string_view(words.front()).substr(0, eq))) {
    // Only the name: the value may hold anything, a quoted newline included (one-line errors).
    return make_error(ErrorKind::kInvalidValue,
                      "the command starts with an assignment '" + words.front().substr(0, eq) +
                          "=...' (the command is run without a shell; set variables in the "
                          "profile's [env])");
  }
  return words;
}

}  // namespace grpo::core
