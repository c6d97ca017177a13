// Small text helpers shared by every layer: trimming, case, booleans, did-you-mean suggestions
// and number formatting. The one home of these helpers: do not write another trim(), split(),
// lower() or parse_bool().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grpo::core {

// `s` without leading and trailing ASCII white space (space, tab, CR, LF, VT, FF).
std::string_view trim(std::string_view s);

// The fields of `s` between `sep` characters, empty ones included ("a,,b" -> a, "", b; "" -> one
// empty field). The views point into `s`.
std::vector<std::string_view> split(std::string_view s, char sep);

// `s` with ASCII A-Z lowered (other bytes, UTF-8 included, unchanged).
std::string ascii_lower(std::string_view s);

// A boolean as OmegaConf reads one into a bool field (omegaconf/nodes.py
// BooleanNode._validate_and_convert_impl), which is how verl's Hydra overrides and our --set
// read them: an integer is true unless 0; otherwise, ignoring case, "true" "yes" "y" "on" or
// "false" "no" "n" "off". Anything else: nullopt.
std::optional<bool> parse_bool_word(std::string_view s);

// UTF-8 as RFC 3629 and the WHATWG decoder read it (no surrogates, no overlongs, nothing above
// U+10FFFF). At byte `i` of `s` (i < s.size()): the length (1-4) of the well-formed sequence
// that starts there, or -n for an ill-formed subpart of n bytes (what one U+FFFD replaces).
int utf8_sequence_at(std::string_view s, std::size_t i);
// The offset of the first byte of `s` that is not well-formed UTF-8; npos when all of it is.
std::size_t first_invalid_utf8(std::string_view s);

// `s` made safe to print on a terminal: what a terminal would act on is shown instead, so text
// that ranks, programs or files supplied cannot move the cursor, set the title or recolour the
// screen. C0 controls and DEL become \xNN (newline and tab stay when `keep_newlines`), the C1
// controls U+0080..U+009F become \u00NN, and bytes that are not UTF-8 become \xNN.
std::string escape_controls(std::string_view s, bool keep_newlines = false);

// Levenshtein distance (insert, delete, substitute each cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is close enough to be a likely typo (distance at most
// max(2, |word| / 4)); nullopt otherwise. Ties go to the first candidate in order.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Bytes as GiB with one decimal: "97.3 GiB".
std::string format_gib(double bytes);
// A count with a unit suffix: 30.5B, 3.3B, 768M, 12.6K.
std::string format_count(double n);
// Fixed decimals.
std::string format_fixed(double v, int decimals);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace grpo::core
