// The tokenizer against tests/data/tokenizer/tiny: a hand-written tokenizer.json whose expected
// ids are derived by hand below (an oracle independent of the JavaScript one), plus the UTF-8
// helpers, the regex rewrite and the loader's errors.
//
// tiny's vocabulary: a=0 b=1 c=2 Ġ(space)=3 ab=4 abc=5 Ġa=6 bc=7 Ċ(newline)=9 Ã(0xC3)=12
// ©(0xA9)=13 Ã©(é)=14 1=15; added tokens <|end|>=8 (special) and <|e=11; merges by rank:
// 0 "a b", 1 "Ġ a", 2 "ab c", 3 "b c", 4 "Ã ©". Qwen's split regex, NFC, ByteLevel.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/utf8.h"
#include "tiny_tokenizer.h"

namespace grpo::tokenizer {
namespace {

using testing::kTiny;
using testing::tiny;

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

using Ids = std::vector<TokenId>;

TEST(TinyTokenizer, MergesByRank) {
  // "abc" is one piece: a b c -> (a,b) rank 0 beats (b,c) rank 3 -> ab c -> (ab,c) rank 2 -> abc.
  EXPECT_EQ(tiny().encode("abc"), Ids({5}));
  // "bc a" splits into "bc" and " a" (the regex's [^\r\n\p{L}\p{N}]?\p{L}+ takes the space):
  // b c -> bc (rank 3); Ġ a -> Ġa (rank 1).
  EXPECT_EQ(tiny().encode("bc a"), Ids({7, 6}));
  // "cab": (c,a) is no merge, (a,b) rank 0 -> c ab; (c,ab) is no merge.
  EXPECT_EQ(tiny().encode("cab"), Ids({2, 4}));
  // "abab": two (a,b) at rank 0, leftmost first, then the second: ab ab (no "ab ab" merge).
  EXPECT_EQ(tiny().encode("abab"), Ids({4, 4}));
  // "a\n": "a" (letters), "\n" (\s*[\r\n]+) -> Ċ.
  EXPECT_EQ(tiny().encode("a\n"), Ids({0, 9}));
  // "1a": \p{N} takes "1" alone, then "a".
  EXPECT_EQ(tiny().encode("1a"), Ids({15, 0}));
}

TEST(TinyTokenizer, AddedTokensLeftmostLongest) {
  // "<|end|>" is matched before pre-tokenization; the text around it is encoded as usual.
  EXPECT_EQ(tiny().encode("abc<|end|>a"), Ids({5, 8, 0}));
  // At one position the longest added token wins: "<|end|>" over "<|e"; "<|ea" has only "<|e".
  EXPECT_EQ(tiny().encode("<|end|><|ea"), Ids({8, 11, 0}));
}

TEST(TinyTokenizer, NfcBeforeBpe) {
  // "e" + U+0301 is "é" (C3 A9) in NFC: Ã © -> Ã© (rank 4). Without NFC nothing would be left
  // ('e', 0xCC and 0x81 have no token and there is no unk_token: they are dropped).
  EXPECT_EQ(tiny().encode("e\xCC\x81"), Ids({14}));
  EXPECT_EQ(tiny().encode("\xC3\xA9"), Ids({14}));
  EXPECT_EQ(tiny().encode("d"), Ids({}));  // no token for 'd', no unk_token: dropped
}

TEST(TinyTokenizer, InvalidUtf8BecomesReplacementCharacter) {
  // 0xFF is replaced by U+FFFD (EF BF BD): no tokens for those bytes, so only "a" and "b" remain
  // -- but they are now separate pieces ("a", "\uFFFD", "b"), so no merge joins them.
  EXPECT_EQ(tiny().encode("a\xFF"
                          "b"),
            Ids({0, 1}));
}

TEST(TinyTokenizer, Decode) {
  EXPECT_EQ(*tiny().decode(Ids{5, 8, 0}), "abc<|end|>a");
  EXPECT_EQ(*tiny().decode(Ids{5, 8, 0}, /*skip_special=*/true), "abca");
  EXPECT_EQ(*tiny().decode(Ids{6, 9}), " a\n");
  // A lone 0xC3 is invalid UTF-8: U+FFFD. Each byte run between added tokens is decoded alone,
  // except around a skipped special token (transformers.js drops those ids first).
  EXPECT_EQ(*tiny().decode(Ids{12}), kReplacementChar);
  EXPECT_EQ(*tiny().decode(Ids{12, 8, 13}),
            std::string(kReplacementChar) + "<|end|>" + std::string(kReplacementChar));
  EXPECT_EQ(*tiny().decode(Ids{12, 8, 13}, true), "\xC3\xA9");
  EXPECT_EQ(*tiny().decode(Ids{12, 11, 13}, true),
            std::string(kReplacementChar) + "<|e" + std::string(kReplacementChar));
  const auto bad = tiny().decode(Ids{0, 10});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "token id 10 is not in the vocabulary");
  EXPECT_FALSE(tiny().decode(Ids{-1}).ok());
}

TEST(TinyTokenizer, ConfigAndLookups) {
  EXPECT_EQ(tiny().vocab_size(), 16u);
  EXPECT_EQ(tiny().config().eos_token, "<|end|>");
  EXPECT_EQ(tiny().config().eos_id, 8);
  EXPECT_EQ(tiny().config().pad_id, 8);  // {"content": ...} form
  EXPECT_EQ(tiny().token_to_id("Ġa"), 6);
  EXPECT_EQ(tiny().token_to_id("<|e"), 11);
  EXPECT_EQ(tiny().token_to_id("zz"), std::nullopt);
  ASSERT_EQ(tiny().added_tokens().size(), 2u);
  EXPECT_TRUE(tiny().added_tokens()[0].special);
}

TEST(TinyTokenizer, MergesAsPairsReadTheSame) {
  std::string json = read(kTiny / "tokenizer.json");
  const std::string from = R"("merges": ["a b", "Ġ a", "ab c", "b c", "Ã ©"])";
  const std::string to =
      R"("merges": [["a", "b"], ["Ġ", "a"], ["ab", "c"], ["b", "c"], ["Ã", "©"]])";
  ASSERT_NE(json.find(from), std::string::npos);
  json.replace(json.find(from), from.size(), to);
  auto t = Tokenizer::from_json(json);
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_EQ(t->encode("abc bc a"), Ids({5, 3, 7, 6}));  // " bc": Ġ b c -> Ġ bc
}

TEST(TinyTokenizer, ARepeatedMergeTakesItsLastRank) {
  // "a b" again after "b c": (a,b) now ranks 5, after (b,c) at 3, so "abc" is a bc (no "a bc"
  // merge) -> [0, 7]; transformers.js's Map (and tokenizers' HashMap) keep the last rank.
  std::string json = read(kTiny / "tokenizer.json");
  const std::string last = R"("Ã ©"])";
  json.replace(json.find(last), last.size(), R"("Ã ©", "a b"])");
  auto t = Tokenizer::from_json(json);
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_EQ(t->encode("abc"), Ids({0, 7}));
  EXPECT_EQ(t->encode("ab"), Ids({4}));
}

TEST(TokenizerLoad, ParseErrorHasLineAndColumn) {
  auto t = Tokenizer::from_json("{\n  \"model\": {\n    \"vocab\": {,}\n  }\n}", "", "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, core::ErrorKind::kParse);
  EXPECT_EQ(t.error().where.str(), "tok.json:3:15");
  EXPECT_EQ(t.error().str().find('\n'), std::string::npos);
}

TEST(TokenizerLoad, ContentErrorsNameTheJsonPath) {
  std::string json = read(kTiny / "tokenizer.json");
  json.replace(json.find("\"b c\""), 5, "\"b q\"");
  auto t = Tokenizer::from_json(json, "", "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().str(), "tok.json: model.merges[3]: 'q' is not in model.vocab");
  EXPECT_FALSE(Tokenizer::load(kTiny / "nope").ok());
  auto cfg = Tokenizer::from_json(read(kTiny / "tokenizer.json"), "{\"chat_template\": 3}",
                                  "t.json", "c.json");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error().str(), "c.json: chat_template: expected a string");
}

TEST(TokenizerLoad, WrongTypesAndHugeNumbersAreErrorsNotExceptions) {
  // Found by fuzz_tokenizer: nlohmann throws out_of_range for "4e511" and type_error from value().
  auto t = Tokenizer::from_json("14e511", "", "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().str(), "tok.json: invalid JSON: number overflow parsing '14e511'");
  std::string json = read(kTiny / "tokenizer.json");
  json.replace(json.find(R"("lstrip": false)"), 15, R"("lstrip": "no")");
  t = Tokenizer::from_json(json, "", "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().str(),
            "tok.json: a value of the wrong type: type must be boolean, but is string");
  t = Tokenizer::from_json(read(kTiny / "tokenizer.json"), R"({"chat_template": [{"name": 1}]})",
                           "t.json", "c.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().where.file, "c.json");
}

// A token id sizes dense tables: ids far beyond the file's own entries are refused before any
// table grows (a 171-byte file with an id of 2^27 - 1 once allocated 4.5 GB).
TEST(TokenizerLoad, TokenIdsAreBoundedByTheFilesEntries) {
  const std::string tiny =
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 134217727}, "merges": []}})";
  auto t = Tokenizer::from_json(tiny, "", "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().str(),
            "tok.json: model.vocab[\"b\"]: token id 134217727 is far outside the vocabulary (2 "
            "entries in model.vocab and added_tokens: ids must be below 1028)");
  const std::string added =
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "added_tokens": [{"id": 100000000, "content": "<x>"}]})";
  t = Tokenizer::from_json(added, "", "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().str().find("added_tokens[0].id: token id 100000000 is far outside"),
            std::string::npos)
      << t.error().str();
  // Gaps within the bound stay legal.
  t = Tokenizer::from_json(
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1027}, "merges": []}})", "", "tok.json");
  EXPECT_TRUE(t.ok() || t.error().str().find("token id") == std::string::npos) << t.error().str();
}

TEST(TokenizerLoad, UnsupportedPartsAreRefused) {
  const std::string base = read(kTiny / "tokenizer.json");
  const auto refuse = [&](const std::string& from, const std::string& to) {
    std::string json = base;
    const auto p = json.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    json.replace(p, from.size(), to);
    auto t = Tokenizer::from_json(json);
    EXPECT_FALSE(t.ok()) << to;
    return t.ok() ? std::string() : t.error().message;
  };
  EXPECT_EQ(refuse(R"({"type": "NFC"})", R"({"type": "NFKC"})"),
            "normalizer: unsupported normalizer 'NFKC' (only NFC)");
  EXPECT_EQ(refuse(R"("byte_fallback": false)", R"("byte_fallback": true)"),
            "model.byte_fallback: not supported");
  EXPECT_EQ(refuse(R"("type": "BPE")", R"("type": "WordPiece")"),
            "model.type: only BPE models are supported");
  EXPECT_EQ(refuse(R"("lstrip": false)", R"("lstrip": true)"),
            "added_tokens[0].lstrip: true is not supported");
  EXPECT_EQ(refuse(R"("behavior": "Isolated")", R"("behavior": "Removed")"),
            "pre_tokenizer.pretokenizers[0]: unsupported Split (only behavior Isolated, invert "
            "false)");
  EXPECT_EQ(refuse(R"("Regex": "(?i:)", R"("Regex": "((?i:)")
                .rfind("pre_tokenizer: regex does "
                       "not compile at offset",
                       0),
            0u);
}

}  // namespace
}  // namespace grpo::tokenizer
