// Reading tokenizer.json and tokenizer_config.json into Tokenizer::Impl.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "grpo/tokenizer/bpe.h"
#include "grpo/tokenizer/utf8.h"
#include "impl.h"

namespace grpo::tokenizer {

using core::ErrorKind;
using core::make_error;
using nlohmann::json;

const std::array<char32_t, 256>& byte_to_codepoint() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      t[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table;
}

void MergeTable::build(const std::vector<std::pair<std::uint64_t, Merge>>& entries) {
  std::size_t cap = 16;
  while (cap < entries.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (const auto& [k, m] : entries) {
    std::size_t i = hash(k) & mask_;
    while (slots_[i].merge.rank >= 0 && slots_[i].key != k) i = (i + 1) & mask_;
    slots_[i] = Slot{k, m};  // a repeated merge gets its last rank, as in transformers.js's Map
  }
}

namespace {

// "file: path: message" errors about the content of a parsed file.
struct Where {
  std::string file;
  core::Error error(ErrorKind kind, const std::string& path, const std::string& message) const {
    return make_error(kind, path + ": " + message, core::SourceLocation{file, 0, 0});
  }
};

// "[json.exception.parse_error.101] parse error at line 1, column 2: x" -> "x".
std::string json_message(const json::exception& e) {
  std::string msg = e.what();
  if (msg.rfind("[json", 0) == 0) {
    const auto close = msg.find("] ");
    if (close != std::string::npos) msg = msg.substr(close + 2);
    if (msg.rfind("parse error", 0) == 0) {
      if (const auto p = msg.find(": "); p != std::string::npos) msg = msg.substr(p + 2);
    }
  }
  return msg;
}

core::Result<json> parse_json(std::string_view text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::out_of_range& e) {  // a number too large for any type
    return make_error(ErrorKind::kParse, "invalid JSON: " + json_message(e),
                      core::SourceLocation{file, 0, 0});
  } catch (const json::parse_error& e) {
    // e.byte: 1-based offset of the byte where parsing failed.
    const std::size_t end = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::uint32_t line = 1, col = 1;
    for (std::size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return make_error(ErrorKind::kParse, "invalid JSON: " + json_message(e),
                      core::SourceLocation{file, line, col});
  }
}

// Byte-level spelling -> bytes; nullopt when a character is outside the 256 that stand for bytes.
std::optional<std::string> spelling_to_bytes(const std::string& spelling) {
  static const std::array<int, 324> reverse = [] {
    std::array<int, 324> r{};
    r.fill(-1);
    const auto& t = byte_to_codepoint();
    for (int b = 0; b < 256; ++b) r[t[static_cast<std::size_t>(b)]] = b;
    return r;
  }();
  std::string out;
  out.reserve(spelling.size());
  std::size_t i = 0;
  while (i < spelling.size()) {
    const auto c = static_cast<unsigned char>(spelling[i]);
    char32_t cp = 0;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < spelling.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(spelling[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return std::nullopt;  // three- and four-byte characters are all above U+0143
    }
    if (cp >= reverse.size() || reverse[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(reverse[cp]));
  }
  return out;
}

bool is_null_or(const json& j, const char* key, const json& value) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() || *it == value;
}

core::Result<std::string> regex_of_split(const json& split, const Where& w,
                                         const std::string& path) {
  if (split.value("behavior", std::string()) != "Isolated" || split.value("invert", false)) {
    return w.error(ErrorKind::kInvalidValue, path,
                   "unsupported Split (only behavior Isolated, invert false)");
  }
  const auto pat = split.find("pattern");
  if (pat == split.end() || !pat->is_object() || !pat->contains("Regex") ||
      !(*pat)["Regex"].is_string()) {
    return w.error(ErrorKind::kInvalidValue, path + ".pattern",
                   "unsupported Split pattern (only {\"Regex\": \"...\"})");
  }
  return (*pat)["Regex"].get<std::string>();
}

// The regex the pre-tokenizer splits with ("" for none). Supported: ByteLevel alone, or a
// Sequence of Split (Regex, Isolated) and ByteLevel (use_regex false); add_prefix_space false.
core::Result<std::string> split_regex(const json& pre, const Where& w) {
  static const std::string kGpt2 =
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  const auto byte_level = [&](const json& b, const std::string& path) -> core::Result<bool> {
    if (b.value("add_prefix_space", false)) {
      return w.error(ErrorKind::kInvalidValue, path, "add_prefix_space true is not supported");
    }
    return b.value("use_regex", true);
  };
  if (pre.is_null()) {
    return w.error(ErrorKind::kInvalidValue, "pre_tokenizer",
                   "a byte-level BPE needs a ByteLevel pre-tokenizer");
  }
  const std::string type = pre.value("type", std::string());
  if (type == "ByteLevel") {
    GRPO_TRY(const bool use_regex, byte_level(pre, "pre_tokenizer"));
    return use_regex ? kGpt2 : std::string();
  }
  if (type != "Sequence" || !pre.contains("pretokenizers") || !pre["pretokenizers"].is_array()) {
    return w.error(ErrorKind::kInvalidValue, "pre_tokenizer",
                   "unsupported pre-tokenizer '" + type + "' (ByteLevel or Sequence)");
  }
  std::string regex;
  bool seen_byte_level = false;
  const json& list = pre["pretokenizers"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string t = list[i].value("type", std::string());
    if (t == "Split" && regex.empty() && !seen_byte_level) {
      GRPO_TRY(regex, regex_of_split(list[i], w, path));
    } else if (t == "ByteLevel" && !seen_byte_level) {
      GRPO_TRY(const bool use_regex, byte_level(list[i], path));
      if (use_regex && !regex.empty()) {
        return w.error(ErrorKind::kInvalidValue, path,
                       "ByteLevel use_regex after a Split is not supported");
      }
      if (use_regex) regex = kGpt2;
      seen_byte_level = true;
    } else {
      return w.error(ErrorKind::kInvalidValue, path,
                     "unsupported pre-tokenizer '" + t + "' here (one Split, then ByteLevel)");
    }
  }
  if (!seen_byte_level) {
    return w.error(ErrorKind::kInvalidValue, "pre_tokenizer", "no ByteLevel pre-tokenizer");
  }
  return regex;
}

core::Result<bool> wants_nfc(const json& norm, const Where& w) {
  if (norm.is_null()) return false;
  const std::string type = norm.value("type", std::string());
  if (type == "NFC") return true;
  if (type == "Sequence" && norm.contains("normalizers") && norm["normalizers"].is_array()) {
    bool any = false;
    for (const json& n : norm["normalizers"]) {
      if (n.value("type", std::string()) != "NFC") {
        return w.error(ErrorKind::kInvalidValue, "normalizer",
                       "unsupported normalizer in Sequence (only NFC)");
      }
      any = true;
    }
    return any;
  }
  return w.error(ErrorKind::kInvalidValue, "normalizer",
                 "unsupported normalizer '" + type + "' (only NFC)");
}

// Token ids index dense tables (id_text, id_kind, id_special), so every id read from the file is
// bounded by the number of entries model.vocab and added_tokens hold: below twice that plus 1,024
// (room for the gaps real files have), so a table grows with the file's own lists and never from
// one number (a 171-byte file once asked for 2^27 entries, 4.5 GB). The model's vocab_size bounds
// them again when grpo-trainer pairs the tokenizer with a model (trainer.cpp).
std::size_t id_limit(std::size_t entries) {
  return 2 * entries + 1024;
}

core::Status check_id(std::int64_t id, std::size_t entries, const Where& w,
                      const std::string& path) {
  if (id < 0 || static_cast<std::uint64_t>(id) >= id_limit(entries)) {
    return w.error(ErrorKind::kInvalidValue, path,
                   "token id " + std::to_string(id) + " is far outside the vocabulary (" +
                       std::to_string(entries) +
                       " entries in model.vocab and added_tokens: ids must be below " +
                       std::to_string(id_limit(entries)) + ")");
  }
  return core::ok_status();
}

core::Status read_model(const json& model, const Where& w, std::size_t max_ids,
                        Tokenizer::Impl& impl) {
  if (!model.is_object()) return w.error(ErrorKind::kMissingKey, "model", "no model object");
  if (model.value("type", std::string("BPE")) != "BPE") {
    return w.error(ErrorKind::kInvalidValue, "model.type", "only BPE models are supported");
  }
  if (model.value("byte_fallback", false)) {
    return w.error(ErrorKind::kInvalidValue, "model.byte_fallback", "not supported");
  }
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!is_null_or(model, k, "")) {
      return w.error(ErrorKind::kInvalidValue, std::string("model.") + k, "not supported");
    }
  }
  if (!is_null_or(model, "dropout", json(nullptr)) && !is_null_or(model, "dropout", 0)) {
    return w.error(ErrorKind::kInvalidValue, "model.dropout", "BPE dropout is not supported");
  }
  impl.ignore_merges = model.value("ignore_merges", false);
  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    return w.error(ErrorKind::kMissingKey, "model.vocab", "expected an object token -> id");
  }
  for (const auto& [spelling, idj] : vocab->items()) {
    if (!idj.is_number_integer() || idj.get<std::int64_t>() < 0 ||
        idj.get<std::int64_t>() > 0x7FFFFFF) {
      return w.error(ErrorKind::kWrongType, "model.vocab[\"" + spelling + "\"]",
                     "expected a token id (a non-negative integer)");
    }
    GRPO_TRY_STATUS(
        check_id(idj.get<std::int64_t>(), max_ids, w, "model.vocab[\"" + spelling + "\"]"));
    const auto id = idj.get<TokenId>();
    const auto u = static_cast<std::size_t>(id);
    if (u >= impl.id_text.size()) {
      impl.id_text.resize(u + 1);
      impl.id_kind.resize(u + 1, Tokenizer::Impl::Kind::kNone);
    }
    // A spelling outside the byte alphabet cannot come out of encode; decode emits it as it is.
    const auto bytes = spelling_to_bytes(spelling);
    impl.id_text[u] = bytes ? *bytes : spelling;
    impl.id_kind[u] = Tokenizer::Impl::Kind::kVocab;
    impl.by_spelling[spelling] = id;
    if (bytes) impl.by_bytes[*bytes] = id;
  }
  impl.byte_id.fill(-1);
  for (int b = 0; b < 256; ++b) {
    const auto it = impl.by_bytes.find(std::string(1, static_cast<char>(b)));
    if (it != impl.by_bytes.end()) impl.byte_id[static_cast<std::size_t>(b)] = it->second;
  }
  if (const auto unk = model.find("unk_token"); unk != model.end() && unk->is_string()) {
    const auto it = impl.by_spelling.find(unk->get<std::string>());
    if (it == impl.by_spelling.end()) {
      return w.error(ErrorKind::kInvalidValue, "model.unk_token", "not in the vocabulary");
    }
    impl.unk_id = it->second;
  }
  const auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    return w.error(ErrorKind::kMissingKey, "model.merges", "expected a list");
  }
  std::vector<std::pair<std::uint64_t, MergeTable::Merge>> entries;
  entries.reserve(merges->size());
  for (std::size_t r = 0; r < merges->size(); ++r) {
    const json& m = (*merges)[r];
    const std::string path = "model.merges[" + std::to_string(r) + "]";
    std::string a, b;
    if (m.is_string()) {  // "a b" (older files)
      const std::string s = m.get<std::string>();
      const auto sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return w.error(ErrorKind::kInvalidValue, path, "expected \"left right\": '" + s + "'");
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();  // ["a", "b"] (tokenizers >= 0.20)
      b = m[1].get<std::string>();
    } else {
      return w.error(ErrorKind::kWrongType, path, "expected \"left right\" or [left, right]");
    }
    const auto ia = impl.by_spelling.find(a), ib = impl.by_spelling.find(b),
               im = impl.by_spelling.find(a + b);
    if (ia == impl.by_spelling.end() || ib == impl.by_spelling.end() ||
        im == impl.by_spelling.end()) {
      const std::string missing = ia == impl.by_spelling.end()   ? a
                                  : ib == impl.by_spelling.end() ? b
                                                                 : a + b;
      return w.error(ErrorKind::kInvalidValue, path, "'" + missing + "' is not in model.vocab");
    }
    entries.push_back({MergeTable::key(ia->second, ib->second),
                       MergeTable::Merge{static_cast<std::int32_t>(r), im->second}});
  }
  impl.merges.build(entries);
  return core::ok_status();
}

core::Status read_added_tokens(const json& list, const Where& w, std::size_t max_ids,
                               Tokenizer::Impl& impl) {
  if (list.is_null()) return core::ok_status();
  if (!list.is_array()) return w.error(ErrorKind::kWrongType, "added_tokens", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
        !t.contains("content") || !t["content"].is_string() || t["id"].get<std::int64_t>() < 0 ||
        t["id"].get<std::int64_t>() > 0x7FFFFFF) {
      return w.error(ErrorKind::kWrongType, path, "expected {\"id\": int, \"content\": string}");
    }
    GRPO_TRY_STATUS(check_id(t["id"].get<std::int64_t>(), max_ids, w, path + ".id"));
    for (const char* k : {"lstrip", "rstrip", "single_word"}) {
      if (t.value(k, false)) {
        return w.error(ErrorKind::kInvalidValue, path + "." + k, "true is not supported");
      }
    }
    AddedToken a{t["content"].get<std::string>(), t["id"].get<TokenId>(),
                 t.value("special", false)};
    if (a.content.empty() || !is_valid_utf8(a.content)) {
      return w.error(ErrorKind::kInvalidValue, path + ".content", "empty or invalid UTF-8");
    }
    const auto u = static_cast<std::size_t>(a.id);
    if (u >= impl.id_text.size()) {
      impl.id_text.resize(u + 1);
      impl.id_kind.resize(u + 1, Tokenizer::Impl::Kind::kNone);
    }
    impl.id_text[u] = a.content;
    impl.id_kind[u] = Tokenizer::Impl::Kind::kAdded;
    impl.by_spelling[a.content] = a.id;
    impl.added.push_back(std::move(a));
  }
  for (std::size_t i = 0; i < impl.added.size(); ++i) {
    impl.added_by_first[static_cast<unsigned char>(impl.added[i].content[0])].push_back(i);
  }
  for (auto& v : impl.added_by_first) {
    std::stable_sort(v.begin(), v.end(), [&](std::size_t x, std::size_t y) {
      return impl.added[x].content.size() > impl.added[y].content.size();
    });
  }
  return core::ok_status();
}

core::Status compile_split(const std::string& regex, const Where& w, Tokenizer::Impl& impl) {
  if (regex.empty()) return core::ok_status();
  const std::string pattern = js_compatible_pattern(regex);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return w.error(ErrorKind::kInvalidValue, "pre_tokenizer",
                   "regex does not compile at offset " + std::to_string(offset) + ": " +
                       reinterpret_cast<const char*>(msg));
  }
  impl.split.reset(code);
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported CPU) it interprets
  return core::ok_status();
}

std::string token_text(const json& j) {  // "x" or {"content": "x", ...}
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) {
    return j["content"].get<std::string>();
  }
  return {};
}

core::Status read_config(std::string_view text, const std::string& file, Tokenizer::Impl& impl) {
  if (text.empty()) return core::ok_status();
  GRPO_TRY(const json cfg, parse_json(text, file));
  const Where w{file};
  if (!cfg.is_object()) return w.error(ErrorKind::kWrongType, "(top level)", "expected an object");
  if (cfg.contains("eos_token")) impl.config.eos_token = token_text(cfg["eos_token"]);
  if (cfg.contains("pad_token")) impl.config.pad_token = token_text(cfg["pad_token"]);
  if (const auto ct = cfg.find("chat_template"); ct != cfg.end()) {
    if (ct->is_string()) {
      impl.config.chat_template = ct->get<std::string>();
    } else if (ct->is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const json& e : *ct) {
        if (e.is_object() && e.value("name", std::string()) == "default" &&
            e.contains("template") && e["template"].is_string()) {
          impl.config.chat_template = e["template"].get<std::string>();
        }
      }
    } else if (!ct->is_null()) {
      return w.error(ErrorKind::kWrongType, "chat_template", "expected a string");
    }
  }
  return core::ok_status();
}

core::Result<std::shared_ptr<Tokenizer::Impl>> build_from(const json& j,
                                                          std::string_view config_json,
                                                          const Where& w,
                                                          const std::string& config_file,
                                                          std::string_view jinja);

// Everything from_json and load do; `jinja` is the text of chat_template.jinja ("" for none),
// used when tokenizer_config.json has no chat_template.
core::Result<std::shared_ptr<Tokenizer::Impl>> build(std::string_view tokenizer_json,
                                                     std::string_view config_json,
                                                     const std::string& file,
                                                     const std::string& config_file,
                                                     std::string_view jinja) {
  GRPO_TRY(const json j, parse_json(tokenizer_json, file));
  const Where w{file};
  if (!j.is_object()) return w.error(ErrorKind::kWrongType, "(top level)", "expected an object");
  try {
    return build_from(j, config_json, w, config_file, jinja);
  } catch (const json::exception& e) {  // a value() or get() of the wrong type somewhere
    return make_error(ErrorKind::kWrongType, "a value of the wrong type: " + json_message(e),
                      core::SourceLocation{file, 0, 0});
  }
}

core::Result<std::shared_ptr<Tokenizer::Impl>> build_from(const json& j,
                                                          std::string_view config_json,
                                                          const Where& w,
                                                          const std::string& config_file,
                                                          std::string_view jinja) {
  auto impl = std::make_shared<Tokenizer::Impl>();
  static const json kNull;
  const json& model = j.contains("model") ? j["model"] : kNull;
  const json added = j.value("added_tokens", json());
  std::size_t max_ids = added.is_array() ? added.size() : 0;
  if (model.is_object() && model.contains("vocab") && model["vocab"].is_object()) {
    max_ids += model["vocab"].size();
  }
  GRPO_TRY_STATUS(read_model(model, w, max_ids, *impl));
  GRPO_TRY_STATUS(read_added_tokens(added, w, max_ids, *impl));
  GRPO_TRY(impl->nfc, wants_nfc(j.value("normalizer", json()), w));
  GRPO_TRY(const std::string regex, split_regex(j.value("pre_tokenizer", json()), w));
  GRPO_TRY_STATUS(compile_split(regex, w, *impl));
  if (const json d = j.value("decoder", json());
      !d.is_null() && d.value("type", std::string()) != "ByteLevel") {
    return w.error(ErrorKind::kInvalidValue, "decoder", "only the ByteLevel decoder is supported");
  }
  impl->id_special.assign(impl->id_text.size(), false);
  for (const AddedToken& a : impl->added) {
    impl->id_special[static_cast<std::size_t>(a.id)] = a.special;
  }
  try {
    GRPO_TRY_STATUS(read_config(config_json, config_file, *impl));
  } catch (const json::exception& e) {
    return make_error(ErrorKind::kWrongType, "a value of the wrong type: " + json_message(e),
                      core::SourceLocation{config_file, 0, 0});
  }
  if (impl->config.chat_template.empty()) impl->config.chat_template = std::string(jinja);
  const auto id_of = [&](const std::string& t) -> std::optional<TokenId> {
    const auto it = impl->by_spelling.find(t);
    if (t.empty() || it == impl->by_spelling.end()) return std::nullopt;
    return it->second;
  };
  impl->config.eos_id = id_of(impl->config.eos_token);
  impl->config.pad_id = id_of(impl->config.pad_token);
  if (impl->config.chat_template.empty()) {
    impl->chat_format_error = "no chat_template in " + config_file;
  } else if (auto f = detect_chat_format(impl->config.chat_template); f.ok()) {
    impl->chat_format = *f;
  } else {
    impl->chat_format_error = config_file + ": " + f.error().message;
  }
  return impl;
}

}  // namespace

core::Result<Tokenizer> Tokenizer::from_json(std::string_view tokenizer_json,
                                             std::string_view config_json,
                                             std::string_view tokenizer_name,
                                             std::string_view config_name) {
  GRPO_TRY(auto impl, build(tokenizer_json, config_json, std::string(tokenizer_name),
                            std::string(config_name), {}));
  return Tokenizer(std::move(impl));
}

namespace {

// The whole file (grpo_io's read_file is not in the fuzz tree, which builds this library).
core::Result<std::string> read_text(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) {
    return make_error(ErrorKind::kNotFound, "no such file", core::SourceLocation{p.string(), 0, 0});
  }
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  if (!f.good() && !f.eof()) {
    return make_error(ErrorKind::kIo, "cannot read", core::SourceLocation{p.string(), 0, 0});
  }
  return s.str();
}

}  // namespace

core::Result<Tokenizer> Tokenizer::load(const std::filesystem::path& dir) {
  const auto tok_path = dir / "tokenizer.json";
  GRPO_TRY(const std::string tok, read_text(tok_path));
  std::string cfg, jinja;
  std::error_code ec;
  const auto cfg_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(cfg_path, ec)) {
    GRPO_TRY(cfg, read_text(cfg_path));
  }
  // Newer repositories keep the template in its own file.
  if (const auto p = dir / "chat_template.jinja"; std::filesystem::exists(p, ec)) {
    GRPO_TRY(jinja, read_text(p));
  }
  GRPO_TRY(auto impl, build(tok, cfg, tok_path.string(), cfg_path.string(), jinja));
  return Tokenizer(std::move(impl));
}

}  // namespace grpo::tokenizer
