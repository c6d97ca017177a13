// The chat templates against hand-written expected strings (Qwen2.5 has no other oracle here;
// Qwen3 is also compared with its real template in oracle_test.cpp), and the line protocol of
// `grpo-trainer tokenize` on the tiny tokenizer.
#include <gtest/gtest.h>

#include <sstream>

#include "grpo/tokenizer/chat.h"
#include "grpo/tokenizer/stream.h"
#include "tiny_tokenizer.h"

namespace grpo::tokenizer {
namespace {

using Msgs = std::vector<ChatMessage>;

std::string render(ChatFormat f, const Msgs& m, bool agp = true, bool think = true) {
  auto r = render_chat(f, m, ChatOptions{agp, think});
  return r.ok() ? *r : "ERROR: " + r.error().message;
}

constexpr std::string_view kQwenSystem =
    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\n";

TEST(ChatQwen25, DefaultSystemPrompt) {
  EXPECT_EQ(render(ChatFormat::kQwen25, {{"user", "Hi", {}}}),
            std::string(kQwenSystem) + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(ChatFormat::kQwen25, {{"user", "Hi", {}}}, /*agp=*/false),
            std::string(kQwenSystem) + "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatQwen25, GivenSystemAndTurns) {
  const Msgs m{{"system", "Be brief.", {}},
               {"user", "2+2?", {}},
               {"assistant", "<think>x</think>4", {}},  // kept as it is: no <think> handling
               {"user", "3+3?", {}}};
  EXPECT_EQ(render(ChatFormat::kQwen25, m, true, /*think=*/false),  // enable_thinking: unused
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n<think>x</think>4<|im_end|>\n"
            "<|im_start|>user\n3+3?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatQwen25, ToolMessagesShareAUserTurn) {
  const Msgs m{{"user", "q", {}}, {"tool", "r1", {}}, {"tool", "r2", {}}, {"user", "z", {}}};
  EXPECT_EQ(render(ChatFormat::kQwen25, m, false),
            std::string(kQwenSystem) +
                "<|im_start|>user\nq<|im_end|>\n"
                "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n"
                "</tool_response><|im_end|>\n"
                "<|im_start|>user\nz<|im_end|>\n");
}

TEST(ChatQwen3, NoDefaultSystemAndThinkingSwitch) {
  EXPECT_EQ(render(ChatFormat::kQwen3, {{"user", "Hi", {}}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(ChatFormat::kQwen3, {{"user", "Hi", {}}}, true, /*think=*/false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatQwen3, EarlierThinkingIsDroppedTheLastTurnKeepsIt) {
  const Msgs m{{"system", "S", {}},
               {"user", "a", {}},
               {"assistant", "<think>\nr1\n</think>\n\nA1", {}},
               {"user", "b", {}},
               {"assistant", "\n\nA2", std::string("\nr2\n")}};
  // A1 comes before the last user message: only the answer. A2 comes after it and is the last
  // message: its reasoning_content in a <think> block (stripped of newlines), the answer
  // left-stripped of newlines.
  EXPECT_EQ(render(ChatFormat::kQwen3, m, false),
            "<|im_start|>system\nS<|im_end|>\n"
            "<|im_start|>user\na<|im_end|>\n"
            "<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>user\nb<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nr2\n</think>\n\nA2<|im_end|>\n");
}

TEST(ChatQwen3, StripsOnlyNewlinesAsPythonsJinja2Does) {
  // The template's strip('\n') / lstrip('\n') / rstrip('\n') are Python's: spaces and tabs stay.
  // (@huggingface/jinja 0.5.11 trims all white space there, so the oracle avoids such borders.)
  const Msgs m{{"user", "q", {}}, {"assistant", "<think>\n \tr \n</think>\n\n\t A ", {}}};
  EXPECT_EQ(render(ChatFormat::kQwen3, m, false),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n \tr \n</think>\n\n\t A <|im_end|>\n");
  const Msgs r{{"user", "q", {}}, {"assistant", "A", std::string(" ")}};
  EXPECT_EQ(render(ChatFormat::kQwen3, r, false),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n "
            "\n</think>\n\nA<|im_end|>\n");
}

TEST(Chat, DetectAndErrors) {
  EXPECT_EQ(*detect_chat_format("<|im_start|> enable_thinking last_query_index"),
            ChatFormat::kQwen3);
  EXPECT_EQ(*detect_chat_format("<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. "
                                "You are a helpful assistant."),
            ChatFormat::kQwen25);
  EXPECT_FALSE(detect_chat_format("{{ bos_token }}{% for m in messages %}").ok());
  EXPECT_FALSE(render_chat(ChatFormat::kQwen3, {}, {}).ok());
  auto m = chat_messages_from_json(R"([{"role": "user", "content": 3}])");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "messages[0].content: expected a string");
  m = chat_messages_from_json(R"([{"role": "assistant", "content": "", "tool_calls": []}])");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "messages[0].tool_calls: not supported");
  m = chat_messages_from_json(R"([{"role": "user", "content": "a\ud800"}])");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)[0].content, "a\xEF\xBF\xBD");
}

using testing::tiny;

std::string run(StreamMode mode, const std::string& input, std::string* error = nullptr) {
  std::istringstream in(input);
  std::ostringstream out;
  StreamOptions o;
  o.mode = mode;
  const auto st = tokenize_stream(tiny(), o, in, out);
  if (error != nullptr) *error = st.ok() ? "" : st.error().str();
  return out.str();
}

TEST(TokenizeStream, EncodeDecodeChat) {
  EXPECT_EQ(run(StreamMode::kEncode, "\"abc\"\n\"bc a<|end|>\"\n"), "[5]\n[7,6,8]\n");
  EXPECT_EQ(run(StreamMode::kEncode, "\"a\\ud800b\"\n"), "[0,1]\n");  // U+FFFD has no token
  EXPECT_EQ(run(StreamMode::kDecode, "[5,8]\n[]\n[12]\n"),
            "\"abc<|end|>\"\n\"\"\n\"\xEF\xBF\xBD\"\n");
  // tiny's chat_template is a stand-in taken for Qwen3's, so the text is
  // "<|im_start|>user\nabc<|im_end|>\n<|im_start|>assistant\n". tiny has no "<|im_start|>", so
  // the regex pieces are "<|" "im" "_start" "|>" "user" "\n" "abc" "<|" "im" "_end" "|>\n" "<|"
  // "im" "_start" "|>" "assistant" "\n"; bytes without a token are dropped, leaving
  // _start: a=0; \n: 9; abc: 5; |>\n: 9; _start: 0; assistant: a a = 0 0; \n: 9.
  EXPECT_EQ(run(StreamMode::kChat, R"([{"role": "user", "content": "abc"}])"
                                   "\n"),
            "[0,9,5,9,0,0,0,9]\n");
}

TEST(TokenizeStream, BadLineStopsWithItsNumber) {
  std::string err;
  EXPECT_EQ(run(StreamMode::kEncode, "\"a\"\n[1]\n\"b\"\n", &err), "[0]\n");
  EXPECT_EQ(err, "<stdin>:2: expected a JSON string");
  EXPECT_EQ(run(StreamMode::kEncode, "\"a\"\n\"b\n", &err), "[0]\n");
  EXPECT_EQ(err.rfind("<stdin>:2:3: invalid JSON: ", 0), 0u) << err;
  run(StreamMode::kDecode, "[0, 99]\n", &err);
  EXPECT_EQ(err, "<stdin>:1: token id 99 is not in the vocabulary");
  run(StreamMode::kDecode, "[0, -1]\n", &err);
  EXPECT_EQ(err, "<stdin>:1: element 1: expected a token id (integer >= 0)");
  run(StreamMode::kChat, "[]\n", &err);
  EXPECT_EQ(err, "<stdin>:1: no messages");
}

}  // namespace
}  // namespace grpo::tokenizer
