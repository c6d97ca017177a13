#include <gtest/gtest.h>

#include "grpo/core/result.h"
#include "grpo/core/text.h"

namespace grpo::core {
namespace {

TEST(Text, SplitKeepsEveryField) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(split("a,b", ','), (V{"a", "b"}));
  EXPECT_EQ(split("a,,b,", ','), (V{"a", "", "b", ""}));
  EXPECT_EQ(split("", ','), (V{""}));
  EXPECT_EQ(split("/x:/y", ':'), (V{"/x", "/y"}));
}

TEST(Text, TrimAsciiWhiteSpace) {
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(trim(" \n "), "");
}

TEST(Text, AsciiLowerLeavesOtherBytes) {
  EXPECT_EQ(ascii_lower("Qwen3-30B-A3B"), "qwen3-30b-a3b");
  EXPECT_EQ(ascii_lower("\xc3\x84X"), "\xc3\x84x");  // UTF-8 "Ä" stays as it is
}

// OmegaConf's BooleanNode, read by hand from omegaconf/nodes.py: ints (as text too) are true
// unless 0; the words ignore case.
TEST(Text, BooleansAsOmegaConfReadsThem) {
  for (const char* t : {"true", "True", "TRUE", "yes", "Y", "on", "1", "2", "-1", "+1"}) {
    EXPECT_EQ(parse_bool_word(t), std::optional<bool>(true)) << t;
  }
  for (const char* f : {"false", "False", "no", "N", "off", "0", "00"}) {
    EXPECT_EQ(parse_bool_word(f), std::optional<bool>(false)) << f;
  }
  for (const char* x : {"", "null", "tru", "1.0", " true", "yes please"}) {
    EXPECT_EQ(parse_bool_word(x), std::nullopt) << x;
  }
}

TEST(Text, FirstInvalidUtf8) {
  // RFC 3629 section 4's table of well-formed byte sequences, by hand.
  constexpr auto kNone = std::string_view::npos;
  EXPECT_EQ(first_invalid_utf8(""), kNone);
  EXPECT_EQ(first_invalid_utf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"), kNone);
  EXPECT_EQ(first_invalid_utf8("ab\xC0\xAF"), 2u);        // overlong
  EXPECT_EQ(first_invalid_utf8("\xED\xA0\x80"), 0u);      // a surrogate
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("x\xE4\xB8"), 1u);         // truncated at the end
  EXPECT_EQ(first_invalid_utf8("x\x80"), 1u);             // a lone continuation byte
  EXPECT_EQ(utf8_sequence_at("\xE4\xB8", 0), -2);         // one subpart of two bytes
  EXPECT_EQ(utf8_sequence_at("\xF0\x9F\x98\x80", 0), 4);
}

TEST(Text, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("tp", "pp"), 1u);
}

TEST(Text, ClosestMatchOnlySuggestsLikelyTypos) {
  const std::vector<std::string> keys = {"gpus_per_node", "nodes", "device"};
  EXPECT_EQ(closest_match("gpus_per_nodes", keys), "gpus_per_node");
  EXPECT_EQ(closest_match("zzzzzzzzzzzz", keys), std::nullopt);
  EXPECT_EQ(did_you_mean("node", keys), " (did you mean 'nodes'?)");
}

TEST(Text, ErrorsAreOneLine) {
  const Error e = make_error(ErrorKind::kParse, "a\nb", {"f.toml", 3, 4});
  EXPECT_EQ(e.str(), "f.toml:3:4: a b");
  EXPECT_EQ(SourceLocation({"f", 2, 0}).str(), "f:2");
}

TEST(Text, Formatting) {
  EXPECT_EQ(format_gib(1.5 * kGiB), "1.5 GiB");
  EXPECT_EQ(format_count(30.5e9), "30.5B");
  EXPECT_EQ(format_count(235e9), "235B");
  EXPECT_EQ(format_count(768e6), "768M");
}

// Rank-supplied text on a terminal: what the terminal would act on is shown, not sent.
TEST(Text, EscapeControlsShowsWhatATerminalWouldActOn) {
  EXPECT_EQ(escape_controls("plain text, ü and 漢字"), "plain text, ü and 漢字");
  EXPECT_EQ(escape_controls("\x1b]0;pwned\x07\x1b[2J"), "\\x1b]0;pwned\\x07\\x1b[2J");
  EXPECT_EQ(escape_controls("a\nb\tc\rd\x7f"), "a\\x0ab\\x09c\\x0dd\\x7f");
  EXPECT_EQ(escape_controls("a\nb\tc\r", true), "a\nb\tc\\x0d");
  EXPECT_EQ(escape_controls("\xc2\x9b"
                            "31m"),
            "\\u009b31m");                             // C1 CSI
  EXPECT_EQ(escape_controls("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is printable
  EXPECT_EQ(escape_controls("bad \xff\xfe"), "bad \\xff\\xfe");
}

}  // namespace
}  // namespace grpo::core
