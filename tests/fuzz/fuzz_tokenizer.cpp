// Fuzzes grpo_tokenizer: tokenizer.json parsing and the encoding of arbitrary bytes.
// First byte even: the rest is text for a fixed tokenizer with all 256 bytes, a few merges and two
// added tokens; encoding must give ids in range and, for valid UTF-8 already in NFC, decode must
// give the text back. First byte odd: the rest is tokenizer.json, a NUL, then text; a file that
// loads must encode and decode that text without a crash, and its id tables grow with the file,
// never from one number in it (at most 2 x the file's size + 1,024 ids: every entry takes bytes
// of the file; docs/security.md). Errors must be one line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/utf8.h"

namespace {

using grpo::tokenizer::Tokenizer;

std::string fixed_json() {
  // Byte-level spellings of all 256 bytes (GPT-2's table), then merges over them.
  std::string vocab;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const int cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      if (cp == '"' || cp == '\\') s += '\\';
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    vocab += "\"" + s + "\": " + std::to_string(b) + ", ";
  }
  vocab += R"("Ġt": 256, "he": 257, "Ġthe": 258, "in": 259, "ing": 260, "ĠĠ": 261, "Ã©": 262)";
  return R"({"added_tokens": [{"id": 300, "content": "<|end|>", "special": true},
                              {"id": 301, "content": "<|e", "special": false}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {)" +
         vocab + R"(}, "merges": ["Ġ t", "h e", "Ġt he", "i n", "in g", "Ġ Ġ", "Ã ©"]}})";
}

const Tokenizer& fixed() {
  static const Tokenizer t = [] {
    auto r = Tokenizer::from_json(fixed_json());
    if (!r.ok()) __builtin_trap();
    return *r;
  }();
  return t;
}

void check_encode(const Tokenizer& t, std::string_view text, bool round_trip) {
  const auto ids = t.encode(text);
  for (const auto id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= t.vocab_size()) __builtin_trap();
  }
  const auto back = t.decode(ids);
  if (!back.ok()) __builtin_trap();
  if (!grpo::tokenizer::is_valid_utf8(*back)) __builtin_trap();
  if (round_trip && grpo::tokenizer::is_valid_utf8(text) && grpo::tokenizer::is_nfc(text) &&
      *back != text) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    check_encode(fixed(), in, true);
    return 0;
  }
  const auto nul = in.find('\0');
  const std::string_view json = in.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  auto t = Tokenizer::from_json(json, "", "fuzz.json");
  if (!t.ok()) {
    if (t.error().str().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  if (t->vocab_size() > 2 * json.size() + 1024) __builtin_trap();
  check_encode(*t, text, false);
  return 0;
}
