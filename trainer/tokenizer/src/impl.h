// Tokenizer::Impl: the tables a loaded tokenizer shares between its copies (private to src/).
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "grpo/tokenizer/bpe.h"

namespace grpo::tokenizer {

// (left id, right id) -> (rank, merged id): open addressing, linear probing, read-only after
// building. Faster than std::unordered_map on the encode path.
class MergeTable {
 public:
  struct Merge {
    std::int32_t rank = -1;
    TokenId id = -1;
  };
  void build(const std::vector<std::pair<std::uint64_t, Merge>>& entries);
  static std::uint64_t key(TokenId a, TokenId b) {
    return (std::uint64_t{static_cast<std::uint32_t>(a)} << 32) | static_cast<std::uint32_t>(b);
  }
  // rank -1 when (a, b) is no merge.
  Merge find(TokenId a, TokenId b) const {
    if (slots_.empty()) return {};
    const std::uint64_t k = key(a, b);
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.merge.rank < 0) return {};
      if (s.key == k) return s.merge;
    }
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    Merge merge;
  };
  static std::size_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

struct PcreCodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};

struct Tokenizer::Impl {
  enum class Kind : std::uint8_t { kNone, kVocab, kAdded };

  // id -> what decode emits: the token's bytes (vocabulary) or its content (added tokens).
  std::vector<std::string> id_text;
  std::vector<Kind> id_kind;
  std::vector<bool> id_special;
  // Byte-level spelling (vocabulary) or content (added tokens) -> id, for token_to_id and for
  // building the merges.
  std::unordered_map<std::string, TokenId> by_spelling;
  // Raw bytes -> id, for ignore_merges.
  std::unordered_map<std::string, TokenId> by_bytes;
  std::array<TokenId, 256> byte_id{};  // -1: that byte has no token
  MergeTable merges;
  std::optional<TokenId> unk_id;
  bool ignore_merges = false;

  std::vector<AddedToken> added;                             // in file order
  std::array<std::vector<std::size_t>, 256> added_by_first;  // indices, longest content first

  bool nfc = false;
  std::unique_ptr<pcre2_code, PcreCodeDeleter> split;  // null: no regex split

  TokenizerConfig config;
  std::optional<ChatFormat> chat_format;
  std::string chat_format_error;  // why there is none

  // encode.cpp
  void encode(std::string_view valid_text, std::vector<TokenId>& out) const;
  void encode_section(std::string_view section, std::vector<TokenId>& out) const;
  void encode_piece(std::string_view bytes, std::vector<TokenId>& out) const;
};

// The GPT-2 byte-to-unicode table: the code point standing for each byte in vocab spellings.
const std::array<char32_t, 256>& byte_to_codepoint();

}  // namespace grpo::tokenizer
