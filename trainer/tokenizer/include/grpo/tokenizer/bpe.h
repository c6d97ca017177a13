// A byte-level BPE tokenizer read from Hugging Face's tokenizer.json, for the Qwen2/2.5/3 family
// (docs/tokenizer.md). Encoding: added tokens are matched first (leftmost, longest), then each
// section between them is NFC-normalized, split by the pre-tokenizer's regex (PCRE2, JIT),
// mapped to bytes and merged by BPE rank. Decoding: bytes back to UTF-8, invalid sequences
// replaced by U+FFFD. LibTorch-free; a loaded Tokenizer is immutable and safe to share between
// threads (copies share the tables).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/tokenizer/chat.h"

namespace grpo::tokenizer {

using TokenId = std::int32_t;

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;  // removed by decode(skip_special = true)
};

// What tokenizer_config.json adds (every field optional there).
struct TokenizerConfig {
  std::string eos_token;                  // "" when absent
  std::string pad_token;                  // "" when absent
  std::string chat_template;              // "" when absent
  std::optional<TokenId> eos_id, pad_id;  // the tokens' ids, when they are in the vocabulary
};

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json. Errors: kNotFound,
  // kIo, kParse (file:line:col), kWrongType/kMissingKey/kInvalidValue/kUnknownKey (file: the
  // JSON path, e.g. "tokenizer.json: model.merges[7]: ...").
  static core::Result<Tokenizer> load(const std::filesystem::path& dir);

  // The same from text; the names are used in error messages only. config_json may be empty.
  static core::Result<Tokenizer> from_json(std::string_view tokenizer_json,
                                           std::string_view config_json = {},
                                           std::string_view tokenizer_name = "tokenizer.json",
                                           std::string_view config_name = "tokenizer_config.json");

  // Token ids of `text`, no special tokens added; added-token text in the input (e.g.
  // "<|im_end|>") becomes that token, as Hugging Face does by default. Invalid UTF-8 is first
  // replaced by U+FFFD (to_valid_utf8).
  std::vector<TokenId> encode(std::string_view text) const;
  void encode_append(std::string_view text, std::vector<TokenId>& out) const;

  // The text of `ids`. Byte runs between added tokens are decoded separately, with invalid UTF-8
  // replaced by U+FFFD (so an id sequence that splits a character decodes to U+FFFD). Error
  // (kInvalidValue) for an id that is no token.
  core::Result<std::string> decode(std::span<const TokenId> ids, bool skip_special = false) const;

  // The chat template rendered (render_chat, the format detected from chat_template) and
  // encoded. Errors: no or unsupported chat_template, render_chat's errors.
  core::Result<std::string> render_chat(std::span<const ChatMessage> messages,
                                        const ChatOptions& options) const;
  core::Result<std::vector<TokenId>> encode_chat(std::span<const ChatMessage> messages,
                                                 const ChatOptions& options) const;

  // The id of a vocabulary token (its byte-level spelling, e.g. "Ġthe") or an added token.
  std::optional<TokenId> token_to_id(std::string_view token) const;
  // One more than the largest id (vocabulary and added tokens).
  std::size_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;
  const TokenizerConfig& config() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The pre-tokenizer regex made to match as JavaScript's (transformers.js) does: the
// case-insensitive contraction group spelled out in ASCII (so U+017F does not match 's') and
// \s / \S given ECMAScript's white-space set (PCRE2's lacks U+FEFF). Exposed for the tests.
std::string js_compatible_pattern(std::string_view pattern);

}  // namespace grpo::tokenizer
