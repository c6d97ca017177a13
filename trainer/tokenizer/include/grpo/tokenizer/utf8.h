// UTF-8 helpers of the tokenizer: validation, the WHATWG replacement of invalid sequences (what a
// browser's or Node's TextDecoder does with fatal=false), NFC normalization (ICU) and the mapping
// of lone-surrogate escapes in JSON text. LibTorch-free, no state.
#pragma once

#include <string>
#include <string_view>

namespace grpo::tokenizer {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// True when `bytes` is well-formed UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// `bytes` with every maximal ill-formed subpart replaced by one U+FFFD: the WHATWG "UTF-8 decode"
// algorithm (Unicode's "substitution of maximal subparts"), as TextDecoder does. Valid input is
// returned unchanged.
std::string to_valid_utf8(std::string_view bytes);

// Appends to_valid_utf8(bytes) to `out`.
void append_valid_utf8(std::string& out, std::string_view bytes);

// Whether valid UTF-8 `text` is in NFC, and its NFC form (ICU's Normalizer2). Text with no code
// point at or above U+0300 is in NFC without asking ICU.
bool is_nfc(std::string_view text);
std::string nfc(std::string_view text);

// JSON text with every unpaired \uD800-\uDFFF escape inside a string replaced by \uFFFD: what
// JavaScript's TextEncoder does with a lone surrogate, and what nlohmann::json would otherwise
// refuse. Everything else (paired surrogates, other escapes, text outside strings) is unchanged.
std::string replace_lone_surrogate_escapes(std::string_view json_text);

}  // namespace grpo::tokenizer
