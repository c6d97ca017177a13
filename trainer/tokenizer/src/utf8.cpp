#include "grpo/tokenizer/utf8.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <cstdint>

#include "grpo/core/text.h"

namespace grpo::tokenizer {

bool is_valid_utf8(std::string_view bytes) {
  return core::first_invalid_utf8(bytes) == std::string_view::npos;
}

void append_valid_utf8(std::string& out, std::string_view bytes) {
  std::size_t i = 0, run = 0;  // [run, i): valid bytes not yet copied
  while (i < bytes.size()) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = core::utf8_sequence_at(bytes, i);
    if (n > 0) {
      i += static_cast<std::size_t>(n);
      continue;
    }
    out.append(bytes.substr(run, i - run));
    out.append(kReplacementChar);
    i += static_cast<std::size_t>(-n);
    run = i;
  }
  out.append(bytes.substr(run));
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_valid_utf8(out, bytes);
  return out;
}

namespace {

const icu::Normalizer2* nfc_instance() {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  return U_SUCCESS(status) ? n : nullptr;  // null: no ICU data, text is left as it is
}

bool below_u0300(std::string_view text) {  // no lead byte 0xCC or above
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0xCC) return false;
  }
  return true;
}

}  // namespace

bool is_nfc(std::string_view text) {
  if (below_u0300(text)) return true;
  const icu::Normalizer2* n = nfc_instance();
  if (n == nullptr) return true;
  UErrorCode status = U_ZERO_ERROR;
  const bool yes = n->isNormalizedUTF8(
      icu::StringPiece(text.data(), static_cast<std::int32_t>(text.size())), status);
  return U_FAILURE(status) || yes;
}

std::string nfc(std::string_view text) {
  if (is_nfc(text)) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  nfc_instance()->normalizeUTF8(
      0, icu::StringPiece(text.data(), static_cast<std::int32_t>(text.size())), sink, nullptr,
      status);
  if (U_FAILURE(status)) return std::string(text);
  return out;
}

namespace {

int hex4(std::string_view s, std::size_t i) {  // the value of 4 hex digits at i, or -1
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t k = i; k < i + 4; ++k) {
    const char c = s[k];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

std::string replace_lone_surrogate_escapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool in_string = false;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (!in_string) {
      if (c == '"') in_string = true;
      out.push_back(c);
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = false;
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '\\' || i + 1 >= s.size()) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (s[i + 1] != 'u') {  // \n, \", \\ ...: two characters as they are
      out.append(s.substr(i, 2));
      i += 2;
      continue;
    }
    const int v = hex4(s, i + 2);
    if (v < 0xD800 || v > 0xDFFF) {  // not a surrogate, or malformed (the parser will say so)
      out.append(s.substr(i, 2));
      i += 2;
      continue;
    }
    if (v <= 0xDBFF && i + 12 <= s.size() && s[i + 6] == '\\' && s[i + 7] == 'u') {
      const int low = hex4(s, i + 8);
      if (low >= 0xDC00 && low <= 0xDFFF) {  // a pair: one code point
        out.append(s.substr(i, 12));
        i += 12;
        continue;
      }
    }
    out.append("\\uFFFD");
    i += 6;
  }
  return out;
}

}  // namespace grpo::tokenizer
