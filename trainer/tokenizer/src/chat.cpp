// The Qwen chat templates, rendered by hand. Each branch below cites the template lines it
// implements; tests/tokenizer compares the Qwen3 output with the real template run by
// @huggingface/jinja and the Qwen2.5 output with hand-written strings.
#include "grpo/tokenizer/chat.h"

#include <nlohmann/json.hpp>

#include "grpo/tokenizer/stream.h"

namespace grpo::tokenizer {

using core::ErrorKind;
using core::make_error;

namespace {

constexpr std::string_view kQwen25DefaultSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// Python's str.lstrip/rstrip/strip with a character set.
std::string_view lstrip(std::string_view s, std::string_view chars) {
  const auto p = s.find_first_not_of(chars);
  return p == std::string_view::npos ? std::string_view() : s.substr(p);
}
std::string_view rstrip(std::string_view s, std::string_view chars) {
  const auto p = s.find_last_not_of(chars);
  return p == std::string_view::npos ? std::string_view() : s.substr(0, p + 1);
}
std::string_view strip(std::string_view s, std::string_view chars) {
  return rstrip(lstrip(s, chars), chars);
}

bool is_tool_response(std::string_view s) {
  return s.starts_with("<tool_response>") && s.ends_with("</tool_response>");
}

// {%- elif message.role == "tool" %}: consecutive tool messages share one user turn.
void render_tool(std::span<const ChatMessage> m, std::size_t i, std::string& out) {
  if (i == 0 || m[i - 1].role != "tool") out += "<|im_start|>user";
  out += "\n<tool_response>\n";
  out += m[i].content;
  out += "\n</tool_response>";
  if (i + 1 == m.size() || m[i + 1].role != "tool") out += "<|im_end|>\n";
}

std::string render_qwen25(std::span<const ChatMessage> m, const ChatOptions& o) {
  std::string out;
  // {%- if messages[0]['role'] == 'system' %} ... {%- else %} the default system prompt
  out += "<|im_start|>system\n";
  out += m[0].role == "system" ? std::string_view(m[0].content) : kQwen25DefaultSystem;
  out += "<|im_end|>\n";
  for (std::size_t i = 0; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    // (user) or (system and not loop.first) or (assistant and not tool_calls)
    if (msg.role == "user" || (msg.role == "system" && i > 0) || msg.role == "assistant") {
      out += "<|im_start|>" + msg.role + "\n" + msg.content + "<|im_end|>\n";
    } else if (msg.role == "tool") {
      render_tool(m, i, out);
    }
  }
  if (o.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_qwen3(std::span<const ChatMessage> m, const ChatOptions& o) {
  std::string out;
  if (m[0].role == "system") out += "<|im_start|>system\n" + m[0].content + "<|im_end|>\n";
  // ns.last_query_index: the last user message that is not a tool response (len - 1 if none).
  std::size_t last_query = m.size() - 1;
  for (std::size_t k = m.size(); k-- > 0;) {
    if (m[k].role == "user" && !is_tool_response(m[k].content)) {
      last_query = k;
      break;
    }
  }
  for (std::size_t i = 0; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (msg.role == "user" || (msg.role == "system" && i > 0)) {
      out += "<|im_start|>" + msg.role + "\n" + msg.content + "<|im_end|>\n";
    } else if (msg.role == "assistant") {
      std::string_view content = msg.content;
      std::string_view reasoning;
      if (msg.reasoning_content) {
        reasoning = *msg.reasoning_content;
      } else if (const auto close = content.rfind("</think>"); close != std::string_view::npos) {
        // content.split('</think>')[-1].lstrip('\n');
        // content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
        const std::string_view whole = content;
        content = lstrip(whole.substr(close + 8), "\n");
        const std::string_view before = rstrip(whole.substr(0, whole.find("</think>")), "\n");
        const auto open = before.rfind("<think>");
        reasoning = lstrip(open == std::string_view::npos ? before : before.substr(open + 7), "\n");
      }
      const bool last = i + 1 == m.size();
      if (i > last_query && (last || !reasoning.empty())) {
        out += "<|im_start|>assistant\n<think>\n";
        out += strip(reasoning, "\n");
        out += "\n</think>\n\n";
        out += lstrip(content, "\n");
      } else {
        out += "<|im_start|>assistant\n";
        out += content;
      }
      out += "<|im_end|>\n";
    } else if (msg.role == "tool") {
      render_tool(m, i, out);
    }
  }
  if (o.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!o.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace

std::string_view to_string(ChatFormat format) {
  return format == ChatFormat::kQwen3 ? "qwen3" : "qwen2.5";
}

core::Result<ChatFormat> detect_chat_format(std::string_view t) {
  const bool chatml = t.find("<|im_start|>") != std::string_view::npos;
  if (chatml && t.find("enable_thinking") != std::string_view::npos &&
      t.find("last_query_index") != std::string_view::npos) {
    return ChatFormat::kQwen3;
  }
  if (chatml && t.find(kQwen25DefaultSystem) != std::string_view::npos) {
    return ChatFormat::kQwen25;
  }
  return make_error(ErrorKind::kInvalidValue,
                    "unsupported chat_template (only the Qwen2.5 and Qwen3 templates are "
                    "rendered, docs/tokenizer.md#chat-template)");
}

core::Result<std::string> render_chat(ChatFormat format, std::span<const ChatMessage> messages,
                                      const ChatOptions& options) {
  if (messages.empty()) return make_error(ErrorKind::kInvalidValue, "no messages");
  return format == ChatFormat::kQwen3 ? render_qwen3(messages, options)
                                      : render_qwen25(messages, options);
}

core::Result<std::vector<ChatMessage>> chat_messages_from_json(std::string_view json_text) {
  GRPO_TRY(const nlohmann::json j, parse_json_line(json_text));
  if (!j.is_array()) {
    return make_error(ErrorKind::kWrongType, "expected a list of {role, content} messages");
  }
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return make_error(ErrorKind::kWrongType, at + ": expected an object");
    for (const char* key : {"role", "content"}) {
      if (!m.contains(key)) return make_error(ErrorKind::kMissingKey, at + ": no " + key);
      if (!m[key].is_string()) {
        return make_error(ErrorKind::kWrongType, at + "." + key + ": expected a string");
      }
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      return make_error(ErrorKind::kInvalidValue, at + ".tool_calls: not supported");
    }
    ChatMessage msg{m["role"].get<std::string>(), m["content"].get<std::string>(), std::nullopt};
    if (const auto r = m.find("reasoning_content"); r != m.end() && !r->is_null()) {
      if (!r->is_string()) {
        return make_error(ErrorKind::kWrongType, at + ".reasoning_content: expected a string");
      }
      msg.reasoning_content = r->get<std::string>();
    }
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace grpo::tokenizer
