// Encoding and decoding with a loaded Tokenizer.
#include <algorithm>
#include <climits>
#include <queue>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/utf8.h"
#include "impl.h"

namespace grpo::tokenizer {

namespace {

// ECMAScript's \s: WhiteSpace and LineTerminator (what transformers.js's RegExp matches).
constexpr std::string_view kJsSpace =
    R"(\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF})";

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* m) const { pcre2_match_context_free(m); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* s) const { pcre2_jit_stack_free(s); }
};

// Per thread: the match data, and a JIT stack larger than the default 32 KiB so that long runs
// of one character class never fail with PCRE2_ERROR_JIT_STACKLIMIT.
struct MatchState {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data{pcre2_match_data_create(32, nullptr)};
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> stack{
      pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr)};
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> context{
      pcre2_match_context_create(nullptr)};
  MatchState() { pcre2_jit_stack_assign(context.get(), nullptr, stack.get()); }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

// The merges of one piece, lowest rank first (leftmost among equal ranks): a linked list of
// symbols and a heap of candidate pairs, O(n log n). Pieces of a few bytes use a plain scan.
void bpe_heap(const MergeTable& merges, std::vector<TokenId>& sym) {
  const std::size_t n = sym.size();
  std::vector<std::int32_t> next(n), prev(n);
  for (std::size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
    prev[i] = static_cast<std::int32_t>(i) - 1;
  }
  struct Cand {
    std::int32_t rank, left;
    TokenId left_id, right_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<>> heap;
  const auto push = [&](std::int32_t l) {
    if (l < 0 || next[l] < 0) return;
    const auto m = merges.find(sym[l], sym[next[l]]);
    if (m.rank >= 0) heap.push(Cand{m.rank, l, sym[l], sym[next[l]]});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) push(static_cast<std::int32_t>(i));
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    const std::int32_t l = c.left, r = next[l];
    if (dead[l] || r < 0 || sym[l] != c.left_id || sym[r] != c.right_id) continue;  // stale
    sym[l] = merges.find(sym[l], sym[r]).id;
    dead[r] = true;
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    push(prev[l]);
    push(l);
  }
  std::size_t w = 0;
  for (std::int32_t i = 0; i >= 0; i = next[i]) sym[w++] = sym[i];
  sym.resize(w);
}

void bpe_scan(const MergeTable& merges, std::vector<TokenId>& sym) {
  // rank[i]: the rank of (sym[i], sym[i+1]), INT_MAX when no merge.
  std::int32_t rank[64];
  const auto rank_at = [&](std::size_t i) {
    const auto m = merges.find(sym[i], sym[i + 1]);
    return m.rank >= 0 ? m.rank : INT_MAX;
  };
  std::size_t n = sym.size();
  for (std::size_t i = 0; i + 1 < n; ++i) rank[i] = rank_at(i);
  while (n > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;
    }
    if (rank[best] == INT_MAX) break;
    sym[best] = merges.find(sym[best], sym[best + 1]).id;
    for (std::size_t i = best + 1; i + 1 < n; ++i) {
      sym[i] = sym[i + 1];
      if (i + 2 < n) rank[i] = rank[i + 1];
    }
    --n;
    sym.resize(n);
    if (best + 1 < n) rank[best] = rank_at(best);
    if (best > 0) rank[best - 1] = rank_at(best - 1);
  }
}

}  // namespace

std::string js_compatible_pattern(std::string_view p) {
  static constexpr std::string_view kContractions = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
  static constexpr std::string_view kAscii =
      "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!in_class && p.substr(i).starts_with(kContractions)) {
      out += kAscii;
      i += kContractions.size() - 1;
      continue;
    }
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's') {
        out += in_class ? std::string(kJsSpace) : "[" + std::string(kJsSpace) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kJsSpace) + "]";
      } else {
        out += p.substr(i, 2);
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ] first in the class
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

void Tokenizer::Impl::encode_piece(std::string_view bytes, std::vector<TokenId>& out) const {
  if (bytes.empty()) return;
  if (ignore_merges) {
    if (const auto it = by_bytes.find(std::string(bytes)); it != by_bytes.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<TokenId> sym;
  sym.clear();
  for (const char c : bytes) sym.push_back(byte_id[static_cast<unsigned char>(c)]);
  if (sym.size() > 1) {
    if (sym.size() <= 64) {
      bpe_scan(merges, sym);
    } else {
      bpe_heap(merges, sym);
    }
  }
  for (const TokenId id : sym) {
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_id) {  // a byte with no token: unk_token, or dropped as tokenizers does
      out.push_back(*unk_id);
    }
  }
}

void Tokenizer::Impl::encode_section(std::string_view section, std::vector<TokenId>& out) const {
  std::string normalized;
  if (nfc && !is_nfc(section)) {
    normalized = tokenizer::nfc(section);
    section = normalized;
  }
  if (section.empty()) return;
  if (!split) {
    encode_piece(section, out);
    return;
  }
  MatchState& ms = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(section.data());
  std::size_t pos = 0, last = 0;  // last: the end of what has been emitted
  while (pos < section.size()) {
    const int rc = pcre2_match(split.get(), subject, section.size(), pos, PCRE2_NO_UTF_CHECK,
                               ms.data.get(), ms.context.get());
    if (rc < 0) break;  // no match (or a match error): the rest is one piece
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ms.data.get());
    const std::size_t s = ov[0], e = ov[1];
    if (e == s) {  // an empty match: step over one character, as matchAll does
      pos = s + 1;
      while (pos < section.size() && (static_cast<unsigned char>(section[pos]) & 0xC0) == 0x80) {
        ++pos;
      }
      continue;
    }
    if (s > last) encode_piece(section.substr(last, s - last), out);  // the gap, as it is
    encode_piece(section.substr(s, e - s), out);
    pos = last = e;
  }
  if (last < section.size()) encode_piece(section.substr(last), out);
}

void Tokenizer::Impl::encode(std::string_view text, std::vector<TokenId>& out) const {
  // Added tokens: at each position the longest one that matches, leftmost first.
  std::size_t start = 0, pos = 0;
  while (pos < text.size()) {
    const auto& cands = added_by_first[static_cast<unsigned char>(text[pos])];
    const AddedToken* hit = nullptr;
    for (const std::size_t k : cands) {
      if (text.substr(pos).starts_with(added[k].content)) {
        hit = &added[k];
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    if (pos > start) encode_section(text.substr(start, pos - start), out);
    out.push_back(hit->id);
    pos += hit->content.size();
    start = pos;
  }
  if (start < text.size()) encode_section(text.substr(start), out);
}

void Tokenizer::encode_append(std::string_view text, std::vector<TokenId>& out) const {
  if (is_valid_utf8(text)) {
    impl_->encode(text, out);
  } else {
    impl_->encode(to_valid_utf8(text), out);
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  encode_append(text, out);
  return out;
}

core::Result<std::string> Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  std::string out, bytes;
  for (const TokenId id : ids) {
    const auto u = static_cast<std::size_t>(id);
    if (id < 0 || u >= impl_->id_text.size() || impl_->id_kind[u] == Impl::Kind::kNone) {
      return core::make_error(core::ErrorKind::kInvalidValue,
                              "token id " + std::to_string(id) + " is not in the vocabulary");
    }
    if (impl_->id_kind[u] == Impl::Kind::kVocab) {
      bytes += impl_->id_text[u];
      continue;
    }
    // A skipped special token does not end the byte run (as transformers.js filters first).
    if (skip_special && impl_->id_special[u]) continue;
    append_valid_utf8(out, bytes);
    bytes.clear();
    out += impl_->id_text[u];
  }
  append_valid_utf8(out, bytes);
  return out;
}

core::Result<std::string> Tokenizer::render_chat(std::span<const ChatMessage> messages,
                                                 const ChatOptions& options) const {
  if (!impl_->chat_format) {
    return core::make_error(core::ErrorKind::kInvalidValue, impl_->chat_format_error);
  }
  return tokenizer::render_chat(*impl_->chat_format, messages, options);
}

core::Result<std::vector<TokenId>> Tokenizer::encode_chat(std::span<const ChatMessage> messages,
                                                          const ChatOptions& options) const {
  GRPO_TRY(const std::string text, render_chat(messages, options));
  return encode(text);
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = impl_->by_spelling.find(std::string(token));
  if (it == impl_->by_spelling.end()) return std::nullopt;
  return it->second;
}

std::size_t Tokenizer::vocab_size() const {
  return impl_->id_text.size();
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added;
}

const TokenizerConfig& Tokenizer::config() const {
  return impl_->config;
}

}  // namespace grpo::tokenizer
