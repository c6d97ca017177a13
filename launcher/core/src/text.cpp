#include "grpo/core/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace grpo::core {

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<bool> parse_bool_word(std::string_view s) {
  std::int64_t n = 0;
  const char* end = s.data() + s.size();
  const char* from = !s.empty() && s.front() == '+' ? s.data() + 1 : s.data();
  if (const auto [p, ec] = std::from_chars(from, end, n); ec == std::errc{} && p == end) {
    return n != 0;
  }
  const std::string l = ascii_lower(s);
  if (l == "true" || l == "yes" || l == "y" || l == "on") return true;
  if (l == "false" || l == "no" || l == "n" || l == "off") return false;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

int utf8_sequence_at(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  int need = 0;
  unsigned char lower = 0x80, upper = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lower = 0xA0;
    if (b == 0xED) upper = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lower = 0x90;
    if (b == 0xF4) upper = 0x8F;  // nothing above U+10FFFF
  } else {
    return -1;  // a continuation byte or C0, C1, F5-FF
  }
  for (int k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return -k;  // truncated: the bytes so far are one subpart
    const auto c = static_cast<unsigned char>(s[i + k]);
    const unsigned char lo = k == 1 ? lower : 0x80, hi = k == 1 ? upper : 0xBF;
    if (c < lo || c > hi) return -k;
  }
  return need + 1;
}

std::string escape_controls(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  const auto hex = [&](const char* prefix, unsigned v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, v);
    out += buf;
  };
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c == '\n' || c == '\t') && keep_newlines) {
        out += static_cast<char>(c);
      } else if (c < 0x20 || c == 0x7f) {
        hex("\\x", c, 2);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const int n = utf8_sequence_at(s, i);
    if (n < 0) {  // each byte of an ill-formed subpart, visibly
      for (int k = 0; k < -n; ++k) hex("\\x", static_cast<unsigned char>(s[i + k]), 2);
      i += static_cast<std::size_t>(-n);
      continue;
    }
    const auto b1 = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
    if (n == 2 && c == 0xc2 && b1 < 0xa0) {  // U+0080..U+009F: the C1 controls (CSI is U+009B)
      hex("\\u", b1, 4);
    } else {
      out.append(s.substr(i, static_cast<std::size_t>(n)));
    }
    i += static_cast<std::size_t>(n);
  }
  return out;
}

std::size_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = utf8_sequence_at(s, i);
    if (n < 0) return i;
    i += static_cast<std::size_t>(n);
  }
  return std::string_view::npos;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 4);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto m = closest_match(word, candidates);
  return m ? " (did you mean '" + *m + "'?)" : std::string{};
}

std::string format_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_gib(double bytes) {
  return format_fixed(bytes / kGiB, 1) + " GiB";
}

std::string format_count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e9) return format_fixed(n / 1e9, a >= 1e11 ? 0 : 1) + "B";
  if (a >= 1e6) return format_fixed(n / 1e6, a >= 1e8 ? 0 : 1) + "M";
  if (a >= 1e3) return format_fixed(n / 1e3, 1) + "K";
  return format_fixed(n, 0);
}

}  // namespace grpo::core
