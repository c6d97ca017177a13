// The UTF-8 helpers and the regex rewrite. The replacement expectations follow the WHATWG
// Encoding standard's UTF-8 decoder (one U+FFFD per maximal ill-formed subpart); the oracle test
// checks the same against Node's TextDecoder on random byte strings.
#include <gtest/gtest.h>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/utf8.h"

namespace grpo::tokenizer {
namespace {

std::string fffd(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kReplacementChar;
  return s;
}

TEST(Utf8, Validity) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("abc \xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE4\xB8"));          // truncated
}

TEST(Utf8, MaximalSubpartsBecomeOneReplacementEach) {
  EXPECT_EQ(to_valid_utf8("a\xFF"
                          "b"),
            "a" + fffd(1) + "b");
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98"), fffd(1));  // a truncated 4-byte sequence
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98"
                          "a"),
            fffd(1) + "a");
  EXPECT_EQ(to_valid_utf8("\xE0\x80\x80"), fffd(3));  // E0 needs A0-BF next
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), fffd(3));  // surrogates are refused
  EXPECT_EQ(to_valid_utf8("\xC0\xAF"), fffd(2));
  EXPECT_EQ(to_valid_utf8("\xC3\xC3\xA9"), fffd(1) + "\xC3\xA9");
  EXPECT_EQ(to_valid_utf8("\x80\xBF"), fffd(2));
  EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80"), fffd(4));
  EXPECT_EQ(to_valid_utf8(std::string_view("\0x", 2)), std::string("\0x", 2));
}

TEST(Utf8, Nfc) {
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");                     // e + U+0301 -> é
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                  // U+212B ANGSTROM SIGN -> U+00C5
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // jamo -> Hangul syllable
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_TRUE(is_nfc("caf\xC3\xA9"));
  EXPECT_FALSE(is_nfc("cafe\xCC\x81"));
}

TEST(Utf8, LoneSurrogateEscapes) {
  EXPECT_EQ(replace_lone_surrogate_escapes(R"("a\ud800b")"), R"("a\uFFFDb")");
  EXPECT_EQ(replace_lone_surrogate_escapes(R"("\udc00\ud800")"), R"("\uFFFD\uFFFD")");
  EXPECT_EQ(replace_lone_surrogate_escapes(R"("\ud83d\ude00")"), R"("\ud83d\ude00")");
  EXPECT_EQ(replace_lone_surrogate_escapes(R"("\ud83d")"), R"("\uFFFD")");
  EXPECT_EQ(replace_lone_surrogate_escapes(R"("\\ud800")"), R"("\\ud800")");  // not an escape
  EXPECT_EQ(replace_lone_surrogate_escapes(R"(["\"", "\ud800"])"), R"(["\"", "\uFFFD"])");
  EXPECT_EQ(replace_lone_surrogate_escapes(R"("\u00e9\uzzzz")"), R"("\u00e9\uzzzz")");
}

TEST(JsPattern, SpellsOutContractionsAndWhiteSpace) {
  const std::string ws =
      R"(\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF})";
  EXPECT_EQ(js_compatible_pattern(R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|\p{L}+)"),
            R"((?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))|\p{L}+)");
  EXPECT_EQ(js_compatible_pattern(R"(\s+(?!\S))"), "[" + ws + "]+(?![^" + ws + "])");
  EXPECT_EQ(js_compatible_pattern(R"([^\s\p{L}])"), "[^" + ws + R"(\p{L}])");
  EXPECT_EQ(js_compatible_pattern(R"([]\s]\\s)"), "[]" + ws + R"(]\\s)");
}

}  // namespace
}  // namespace grpo::tokenizer
