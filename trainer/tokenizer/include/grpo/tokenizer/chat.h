// The chat template of the Qwen family, rendered in C++: Jinja cannot run here, so the two
// templates Qwen ships are implemented by hand (docs/tokenizer.md#chat-template).
//   kQwen25  Qwen2.5-Instruct: a default system prompt when none is given
//            ("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")
//   kQwen3   Qwen3: no default system prompt; <think> blocks of earlier turns dropped; the
//            enable_thinking switch of the generation prompt
// Tools (the `tools` argument and assistant `tool_calls`) are not rendered: a message with
// tool_calls is refused. Messages with role "tool" are rendered as the templates do.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::tokenizer {

enum class ChatFormat { kQwen25, kQwen3 };

std::string_view to_string(ChatFormat format);

struct ChatMessage {
  std::string role;  // system, user, assistant, tool (other roles are skipped, as the templates do)
  std::string content;
  std::optional<std::string> reasoning_content;  // Qwen3 only: the assistant's thinking
};

struct ChatOptions {
  bool add_generation_prompt = true;
  // Qwen3: false appends an empty <think></think> block to the generation prompt (thinking off).
  bool enable_thinking = true;
};

// Which of the supported formats a tokenizer_config.json chat_template is. Qwen3's template is
// recognised by its enable_thinking switch, Qwen2.5's by its default system prompt. Anything
// else is kInvalidValue ("unsupported chat template").
core::Result<ChatFormat> detect_chat_format(std::string_view chat_template);

// The prompt text, exactly as the format's Jinja template renders it. Errors (kInvalidValue): no
// messages, or an assistant message with tool_calls (not representable in ChatMessage; the JSON
// reader refuses it).
core::Result<std::string> render_chat(ChatFormat format, std::span<const ChatMessage> messages,
                                      const ChatOptions& options);

// Messages from JSON: a list of {"role": string, "content": string, "reasoning_content"?:
// string|null}. Other keys are ignored except "tool_calls", which is refused. Errors
// (kWrongType, kMissingKey, kInvalidValue) name the message: "messages[2].content: ...".
core::Result<std::vector<ChatMessage>> chat_messages_from_json(std::string_view json_text);

}  // namespace grpo::tokenizer
