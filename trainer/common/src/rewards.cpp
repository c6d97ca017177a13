// Rule-based rewards as verl scores them; the rules and the verl source they follow are in
// docs/rewards.md. Written from verl's behaviour, not translated line by line: where verl's Python
// raises (IndexError, AssertionError) these functions return nullopt and the callers do what verl's
// try/except does.
#include "grpo/trainer/rewards.h"

#include <cstddef>
#include <vector>

namespace grpo::trainer {
namespace {

// Python strings index code points; verl's rules count and slice them. These walk UTF-8.
bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

std::size_t code_point_count(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += is_continuation(c) ? 0 : 1;
  return n;
}

// Bytes of the code point starting at s[i] (1 for a stray continuation byte).
std::size_t code_point_bytes(std::string_view s, std::size_t i) {
  std::size_t j = i + 1;
  while (j < s.size() && is_continuation(s[j])) ++j;
  return j - i;
}

// The last n code points of s (all of s when it has no more).
std::string_view last_code_points(std::string_view s, std::size_t n) {
  std::size_t seen = 0;
  std::size_t i = s.size();
  while (i > 0) {
    --i;
    if (!is_continuation(s[i]) && ++seen == n) return s.substr(i);
  }
  return s;
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t at = s.find(sep); at != std::string_view::npos; at = s.find(sep, start)) {
    parts.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = s.find(from); at != std::string_view::npos; at = s.find(from, start)) {
    out.append(s.substr(start, at - start));
    out.append(to);
    start = at + from.size();
  }
  out.append(s.substr(start));
  return out;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// ---- gsm8k ----------------------------------------------------------------------------------

// verl searches only the solution's last 300 characters (_SOLUTION_CLIP_CHARS).
constexpr std::size_t kGsm8kClipChars = 300;

bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == ',';
}

// Length of the match of `-?[0-9.,]+` at s[i], 0 where none.
std::size_t number_match(std::string_view s, std::size_t i) {
  std::size_t j = i;
  if (j < s.size() && s[j] == '-' && j + 1 < s.size() && is_number_char(s[j + 1])) ++j;
  std::size_t run = j;
  while (run < s.size() && is_number_char(s[run])) ++run;
  return run > j ? run - i : 0;
}

// ---- math -----------------------------------------------------------------------------------

// Python int(x) then str(...) giving x back: an optional '-', then digits without a leading
// zero, and never "-0".
bool is_canonical_int(std::string_view s) {
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  if (digits.empty()) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  if (digits.size() > 1 && digits.front() == '0') return false;
  return !(s.front() == '-' && digits == "0");
}

// "\frac12" -> "\frac{1}{2}", "\frac1{2}" -> "\frac{1}{2}"; an argument shorter than two
// characters leaves the whole string as it was; an empty one raises (nullopt).
std::optional<std::string> fix_fracs(const std::string& s) {
  std::vector<std::string_view> parts = split(s, "\\frac");
  std::string out(parts[0]);
  for (std::size_t k = 1; k < parts.size(); ++k) {
    std::string_view part = parts[k];
    out += "\\frac";
    if (part.empty()) return std::nullopt;  // verl: substr[0] raises IndexError
    if (part[0] == '{') {
      out += part;
      continue;
    }
    std::size_t a_len = code_point_bytes(part, 0);
    if (a_len >= part.size()) return s;  // fewer than two characters
    std::string_view a = part.substr(0, a_len);
    std::size_t b_len = code_point_bytes(part, a_len);
    std::string_view b = part.substr(a_len, b_len);
    std::string_view rest = part.substr(a_len + b_len);
    out += "{";
    out += a;
    out += "}";
    if (b != "{") {
      out += "{";
      out += b;
      out += "}";
    } else {
      out += b;
    }
    out += rest;
  }
  return out;
}

// "a/b" with a and b integers as Python prints them -> "\frac{a}{b}".
std::string fix_a_slash_b(const std::string& s) {
  std::vector<std::string_view> parts = split(s, "/");
  if (parts.size() != 2 || !is_canonical_int(parts[0]) || !is_canonical_int(parts[1])) return s;
  return "\\frac{" + std::string(parts[0]) + "}{" + std::string(parts[1]) + "}";
}

// A unit after "\text{ " is dropped; two of them raise (nullopt).
std::optional<std::string> remove_right_units(const std::string& s) {
  if (!contains(s, "\\text{ ")) return s;
  std::vector<std::string_view> parts = split(s, "\\text{ ");
  if (parts.size() != 2) return std::nullopt;  // verl: assert len(splits) == 2
  return std::string(parts[0]);
}

// "\sqrt3" -> "\sqrt{3}" (one character); an empty argument raises (nullopt).
std::optional<std::string> fix_sqrt(const std::string& s) {
  if (!contains(s, "\\sqrt")) return s;
  std::vector<std::string_view> parts = split(s, "\\sqrt");
  std::string out(parts[0]);
  for (std::size_t k = 1; k < parts.size(); ++k) {
    std::string_view part = parts[k];
    if (part.empty()) return std::nullopt;  // verl: split[0] raises IndexError
    if (part[0] != '{') {
      std::size_t a_len = code_point_bytes(part, 0);
      out += "\\sqrt{";
      out += part.substr(0, a_len);
      out += "}";
      out += part.substr(a_len);
    } else {
      out += "\\sqrt";
      out += part;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> gsm8k_extract(std::string_view solution, Gsm8kMethod method) {
  std::string_view text = last_code_points(solution, kGsm8kClipChars);
  if (method == Gsm8kMethod::kStrict) {
    // The last "#### <number>"; the number's commas (and any '$') removed.
    std::optional<std::string> last;
    constexpr std::string_view kMarker = "#### ";
    for (std::size_t at = text.find(kMarker); at != std::string_view::npos;
         at = text.find(kMarker, at + 1)) {
      std::size_t n = number_match(text, at + kMarker.size());
      if (n == 0) continue;
      std::string answer;
      for (char c : text.substr(at + kMarker.size(), n))
        if (c != ',' && c != '$') answer += c;
      last = std::move(answer);
    }
    return last;
  }
  // Flexible: every non-overlapping number-like run; the last one that is not "." (where all
  // are ".", verl's loop ends on the first, which is "." as well). Commas stay.
  std::vector<std::string_view> found;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = number_match(text, i);
    if (n == 0) {
      ++i;
      continue;
    }
    found.push_back(text.substr(i, n));
    i += n;
  }
  if (found.empty()) return std::nullopt;
  for (auto it = found.rbegin(); it != found.rend(); ++it)
    if (*it != "" && *it != ".") return std::string(*it);
  return std::string(found.front());
}

double gsm8k_score(std::string_view solution, std::string_view ground_truth, Gsm8kMethod method,
                   double format_score, double score) {
  std::optional<std::string> answer = gsm8k_extract(solution, method);
  if (!answer) return 0.0;
  return *answer == ground_truth ? score : format_score;
}

std::optional<std::string> math_last_boxed(std::string_view text) {
  // A "\boxed " anywhere wins: what follows the last one, up to the next '$'.
  constexpr std::string_view kBoxedSpace = "\\boxed ";
  if (std::size_t at = text.rfind(kBoxedSpace); at != std::string_view::npos) {
    std::string_view rest = text.substr(at + kBoxedSpace.size());
    return std::string(kBoxedSpace) + std::string(rest.substr(0, rest.find('$')));
  }
  std::size_t idx = text.rfind("\\boxed");
  if (idx == std::string_view::npos) idx = text.rfind("\\fbox");
  if (idx == std::string_view::npos) return std::nullopt;
  int open = 0;
  for (std::size_t i = idx; i < text.size(); ++i) {
    if (text[i] == '{') ++open;
    if (text[i] == '}' && --open == 0) return std::string(text.substr(idx, i - idx + 1));
  }
  return std::nullopt;  // the braces never close
}

std::optional<std::string> math_remove_boxed(std::string_view boxed) {
  constexpr std::string_view kBoxedSpace = "\\boxed ";
  if (contains(boxed, kBoxedSpace)) {
    if (!boxed.starts_with(kBoxedSpace)) return std::nullopt;
    return std::string(boxed.substr(kBoxedSpace.size()));
  }
  constexpr std::string_view kLeft = "\\boxed{";
  if (!boxed.starts_with(kLeft) || boxed.back() != '}') return std::nullopt;
  return std::string(boxed.substr(kLeft.size(), boxed.size() - kLeft.size() - 1));
}

std::optional<std::string> math_strip_string(std::string_view answer) {
  std::string s = replace_all(answer, "\n", "");  // linebreaks
  s = replace_all(s, "\\!", "");                  // inverse spaces
  s = replace_all(s, "\\\\", "\\");               // "\\" -> "\"
  s = replace_all(s, "tfrac", "frac");
  s = replace_all(s, "dfrac", "frac");
  s = replace_all(s, "\\left", "");
  s = replace_all(s, "\\right", "");
  s = replace_all(s, "^{\\circ}", "");  // degrees
  s = replace_all(s, "^\\circ", "");
  s = replace_all(s, "\\$", "");  // dollars
  std::optional<std::string> no_units = remove_right_units(s);
  if (!no_units) return std::nullopt;
  s = replace_all(*no_units, "\\\\%", "");  // percentages (only the escaped '%')
  s = replace_all(s, "\\%", "");
  s = replace_all(s, " .", " 0.");
  s = replace_all(s, "{.", "{0.");
  if (s.empty()) return s;
  if (s[0] == '.') s = "0" + s;
  // "k = 5" -> " 5": one '=' with at most two characters before it.
  if (std::vector<std::string_view> sides = split(s, "=");
      sides.size() == 2 && code_point_count(sides[0]) <= 2)
    s = std::string(sides[1]);
  std::optional<std::string> sqrt_fixed = fix_sqrt(s);
  if (!sqrt_fixed) return std::nullopt;
  s = replace_all(*sqrt_fixed, " ", "");
  std::optional<std::string> frac_fixed = fix_fracs(s);
  if (!frac_fixed) return std::nullopt;
  s = std::move(*frac_fixed);
  if (s == "0.5") s = "\\frac{1}{2}";
  return fix_a_slash_b(s);
}

bool math_is_equiv(std::string_view a, std::string_view b) {
  std::optional<std::string> sa = math_strip_string(a);
  std::optional<std::string> sb = math_strip_string(b);
  if (!sa || !sb) return a == b;
  return *sa == *sb;
}

double math_score(std::string_view solution, std::string_view ground_truth) {
  std::optional<std::string> boxed = math_last_boxed(solution);
  if (!boxed) return 0.0;
  std::optional<std::string> answer = math_remove_boxed(*boxed);
  if (!answer) return 0.0;
  return math_is_equiv(*answer, ground_truth) ? 1.0 : 0.0;
}

std::optional<RewardScorer> reward_scorer_for(std::string_view data_source) {
  if (data_source == "openai/gsm8k") return RewardScorer::kGsm8k;
  if (data_source == "lighteval/MATH" || data_source == "DigitalLearningGmbH/MATH-lighteval" ||
      data_source == "HuggingFaceH4/MATH-500")
    return RewardScorer::kMath;
  return std::nullopt;
}

std::optional<double> compute_score(std::string_view data_source, std::string_view solution,
                                    std::string_view ground_truth) {
  std::optional<RewardScorer> scorer = reward_scorer_for(data_source);
  if (!scorer) return std::nullopt;
  if (*scorer == RewardScorer::kGsm8k) return gsm8k_score(solution, ground_truth);
  return math_score(solution, ground_truth);
}

std::string unknown_data_source_error(std::string_view data_source) {
  return "no reward function for data_source '" + std::string(data_source) +
         "' (known: openai/gsm8k, lighteval/MATH, DigitalLearningGmbH/MATH-lighteval, "
         "HuggingFaceH4/MATH-500)";
}

}  // namespace grpo::trainer
