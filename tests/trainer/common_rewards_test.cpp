// Rewards as verl scores them (docs/rewards.md). Every vector is written from the rule verl's
// code applies (verl gsm8k.py, math_reward.py); the comment names the rule that decides it.
// naive_differs: a naive exact match (gsm8k: the raw text after the last "#### "; math: the raw
// inside of the last \boxed{}) scores the vector differently; "[naive wrong]" marks those where
// verl's rule gives the right answer, "[quirk]" those where verl's rule is itself surprising.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "grpo/trainer/rewards.h"

namespace grpo::trainer {
namespace {

constexpr Gsm8kMethod S = Gsm8kMethod::kStrict;
constexpr Gsm8kMethod F = Gsm8kMethod::kFlexible;

struct Gsm8kCase {
  std::string solution;
  std::string truth;
  Gsm8kMethod method;
  double format_score;
  double expected;
  bool naive_differs = false;
  double score = 1.0;
};

// Naive: the raw text after the last "#### " equals the ground truth.
double naive_gsm8k(const std::string& solution, const std::string& truth) {
  std::size_t at = solution.rfind("#### ");
  if (at == std::string::npos) return 0.0;
  return solution.substr(at + 5) == truth ? 1.0 : 0.0;
}

std::vector<Gsm8kCase> gsm8k_cases() {
  std::string accents;
  for (int i = 0; i < 294; ++i) accents += "\xC3\xA9";  // 294 two-byte characters
  return {
      // strict: "#### <number>" at the end
      {"Natalia sold 48+24 = 72 clips.\n#### 72", "72", S, 0.0, 1.0},
      // flexible: the last number
      {"Natalia sold 48+24 = 72 clips.\n#### 72", "72", F, 0.0, 1.0},
      // strict removes commas [naive wrong]
      {"#### 1,000", "1000", S, 0.0, 1.0, true},
      // flexible keeps commas: "1,000" != "1000" [quirk]
      {"#### 1,000", "1000", F, 0.0, 0.0},
      // flexible keeps commas; an extracted wrong answer earns the format score
      {"#### 1,000", "1000", F, 0.1, 0.1, true},
      // strict: optional leading '-'
      {"#### -5", "-5", S, 0.0, 1.0},
      // flexible: a negative number
      {"The temperature is -5 degrees", "-5", F, 0.0, 1.0, true},
      // strict: decimals are in the number class
      {"#### 3.5", "3.5", S, 0.0, 1.0},
      // exact string compare, no numeric equivalence
      {"#### 3.50", "3.5", S, 0.0, 0.0},
      // strict: '$' is not in the number class, so "#### $18" extracts nothing -> 0 [quirk]
      {"#### $18", "18", S, 0.5, 0.0},
      // flexible skips the '$' [naive wrong]
      {"The total is $18", "18", F, 0.0, 1.0, true},
      // strict: a trailing '.' is in the number class, "18." != "18" [quirk]
      {"#### 18.", "18", S, 0.0, 0.0},
      // same, with a format score: extracted but wrong
      {"#### 18.", "18", S, 0.1, 0.1, true},
      // flexible: "18." extracted [quirk]
      {"The answer is 18.", "18", F, 0.0, 0.0},
      // flexible: a lone "." is skipped, the last number is "18" [naive wrong]
      {"So 18 cookies .", "18", F, 0.0, 1.0, true},
      // strict: the last "####" wins (current verl; older verl took the first)
      {"#### 5\n#### 7", "7", S, 0.0, 1.0},
      // strict: the first "####" loses
      {"#### 5\n#### 7", "5", S, 0.0, 0.0},
      // flexible: the last number, not the one after "####"
      {"#### 5 and then 7", "5", F, 0.0, 0.0},
      // strict: only the number after "#### " [naive wrong]
      {"#### 5 and then 7", "5", S, 0.0, 1.0, true},
      // strict: no "####" -> nothing extracted -> 0
      {"The answer is 42", "42", S, 0.0, 0.0},
      // strict: nothing extracted gives 0, never the format score
      {"The answer is 42", "42", S, 0.1, 0.0},
      // flexible: the last number [naive wrong]
      {"The answer is 42", "42", F, 0.0, 1.0, true},
      // flexible: no number -> 0
      {"No numbers here", "42", F, 0.0, 0.0},
      // flexible: no number -> 0, never the format score
      {"No numbers here", "42", F, 0.1, 0.0},
      // strict: the space after "####" is required
      {"####42", "42", S, 0.0, 0.0},
      // strict: exactly one space after "####"
      {"####  42", "42", S, 0.0, 0.0},
      // strict: '-' must touch the number
      {"#### - 5", "-5", S, 0.0, 0.0},
      // strict: one '-' at most
      {"#### --5", "-5", S, 0.0, 0.0},
      // exact compare: "42" != "42.0"
      {"#### 42", "42.0", S, 0.0, 0.0},
      // exact compare: "0.5" != ".5"
      {"#### 0.5", ".5", S, 0.0, 0.0},
      // flexible keeps commas: equal to a ground truth with commas [naive wrong]
      {"Answer: 1,234,567", "1,234,567", F, 0.0, 1.0, true},
      // strict removes commas: "1234567" != "1,234,567" [quirk]
      {"#### 1,234,567", "1,234,567", S, 0.0, 0.0, true},
      // strict: negative decimal with commas [naive wrong]
      {"#### -1,200.50", "-1200.50", S, 0.0, 1.0, true},
      // flexible: "12..." is one run
      {"I think 12...", "12", F, 0.0, 0.0},
      // flexible: "12." then "."; the last that is not "." is "12." [quirk]
      {"Total: 12. Done.", "12", F, 0.0, 0.0},
      // flexible: a lone ',' is a run and is extracted [quirk]
      {"Hello, world", "42", F, 0.1, 0.1},
      // flexible: "..." is not "." and is extracted
      {"Wait...", "5", F, 0.1, 0.1},
      // flexible: only "." found -> "." extracted (verl's loop ends on it), format score [quirk]
      {"End.", "5", F, 0.1, 0.1},
      // only the last 300 characters are searched: the marker is outside
      {"#### 7" + std::string(300, 'x'), "7", S, 0.0, 0.0},
      // exactly 300 characters: the marker is inside
      {"#### 7" + std::string(294, ' '), "7", S, 0.0, 1.0, true},
      // 301 characters: the first '#' is clipped, "### 7" is no marker
      {"#### 7" + std::string(295, ' '), "7", S, 0.0, 0.0},
      // the clip counts characters, not bytes [naive wrong]
      {"#### 7" + accents, "7", S, 0.0, 1.0, true},
      // flexible: a number outside the last 300 characters is not seen
      {"42" + std::string(300, 'x'), "42", F, 0.0, 0.0},
      // strict ignores text after the number [naive wrong]
      {"#### 72\n\nThe answer is 72.", "72", S, 0.0, 1.0, true},
      // flexible: the last run is "72." [quirk]
      {"#### 72\n\nThe answer is 72.", "72", F, 0.0, 0.0},
      // flexible: the last of "5", "-3", "2"
      {"The difference is 5-3=2", "2", F, 0.0, 1.0, true},
      // flexible: '-' attaches to the number after it [quirk]
      {"5-3", "3", F, 0.0, 0.0},
      // strict: the run stops at 'e' [naive wrong]
      {"#### 1e5", "1", S, 0.0, 1.0, true},
      // strict: the run stops at '%' [naive wrong]
      {"#### 100%", "100", S, 0.0, 1.0, true},
      // strict: the run stops at the space [naive wrong]
      {"#### 100 dollars", "100", S, 0.0, 1.0, true},
      // strict: the run stops at the newline [naive wrong]
      {"#### 12\n", "12", S, 0.0, 1.0, true},
      // strict: a leading '.' is in the class
      {"#### .5", ".5", S, 0.0, 1.0},
      // the ground truth is compared as given
      {"#### 5", "5 ", S, 0.0, 0.0},
      // the score parameter is what a correct answer earns
      {"#### 3", "3", S, 0.1, 2.0, true, 2.0},
      // strict: wrong answer, format score
      {"#### 4", "3", S, 0.1, 0.1, true},
      // flexible: wrong answer, format score
      {"#### 4", "3", F, 0.1, 0.1, true},
      // [0-9] is ASCII only: a fullwidth digit is no number
      {"#### \xEF\xBC\x99", "9", S, 0.0, 0.0},
      // strict: "-0" is kept as written
      {"#### -0", "-0", S, 0.0, 1.0},
      // exact compare: "-0" != "0"
      {"#### -0", "0", S, 0.0, 0.0},
      // strict removes every comma [quirk]
      {"#### 1,0,0", "100", S, 0.0, 1.0, true},
      // flexible: the last number in a multi-step answer [naive wrong]
      {"Step 1: 3 apples. Step 2: 4 apples. Total 7", "7", F, 0.0, 1.0, true},
  };
}

TEST(Gsm8kScore, VectorsFollowVerl) {
  std::vector<Gsm8kCase> cases = gsm8k_cases();
  EXPECT_GE(cases.size(), 50u);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Gsm8kCase& c = cases[i];
    SCOPED_TRACE("gsm8k vector " + std::to_string(i) + ": " + c.solution.substr(0, 60));
    EXPECT_DOUBLE_EQ(gsm8k_score(c.solution, c.truth, c.method, c.format_score, c.score),
                     c.expected);
    if (c.naive_differs) {
      EXPECT_NE(naive_gsm8k(c.solution, c.truth), c.expected);
    }
  }
}

TEST(Gsm8kScore, ExtractsAsVerl) {
  EXPECT_EQ(gsm8k_extract("#### 1,000", S), "1000");
  EXPECT_EQ(gsm8k_extract("#### 1,000", F), "1,000");
  EXPECT_EQ(gsm8k_extract("End.", F), ".");
  EXPECT_EQ(gsm8k_extract("no answer", S), std::nullopt);
  EXPECT_EQ(gsm8k_extract("no answer", F), std::nullopt);
}

struct MathCase {
  std::string solution;
  std::string truth;
  double expected;
  bool naive_differs = false;
};

// Naive: the raw inside of the last \boxed{} equals the ground truth.
double naive_math(const std::string& solution, const std::string& truth) {
  std::optional<std::string> boxed = math_last_boxed(solution);
  if (!boxed) return 0.0;
  std::optional<std::string> inside = math_remove_boxed(*boxed);
  return inside && *inside == truth ? 1.0 : 0.0;
}

std::vector<MathCase> math_cases() {
  return {
      // the last \boxed{} equals the ground truth
      {"The answer is $\\boxed{5}$.", "5", 1.0},
      // "0.5" is rewritten to \frac{1}{2} [naive wrong]
      {"\\boxed{\\frac{1}{2}}", "0.5", 1.0, true},
      // "0.5" is rewritten to \frac{1}{2} [naive wrong]
      {"\\boxed{0.5}", "\\frac{1}{2}", 1.0, true},
      // leading '.' gets a 0, then 0.5 -> \frac{1}{2}; \frac12 -> \frac{1}{2} [naive wrong]
      {"\\boxed{.5}", "\\frac12", 1.0, true},
      // only the exact string "0.5" is rewritten: trailing zeros stay
      {"\\boxed{0.50}", "\\frac{1}{2}", 0.0},
      // no numeric equivalence besides 0.5
      {"\\boxed{0.25}", "\\frac{1}{4}", 0.0},
      // dfrac -> frac [naive wrong]
      {"\\boxed{\\dfrac{3}{4}}", "\\frac{3}{4}", 1.0, true},
      // tfrac -> frac, then fix_fracs [naive wrong]
      {"\\boxed{\\tfrac34}", "\\frac{3}{4}", 1.0, true},
      // fix_fracs: \frac12 -> \frac{1}{2} [naive wrong]
      {"\\boxed{\\frac12}", "\\frac{1}{2}", 1.0, true},
      // fix_fracs: \frac1{72} -> \frac{1}{72} [naive wrong]
      {"\\boxed{\\frac1{72}}", "\\frac{1}{72}", 1.0, true},
      // fix_fracs does not fix \frac{72}1
      {"\\boxed{\\frac{72}1}", "\\frac{72}{1}", 0.0},
      // fix_a_slash_b: 1/2 -> \frac{1}{2} [naive wrong]
      {"\\boxed{1/2}", "\\frac{1}{2}", 1.0, true},
      // fix_a_slash_b keeps the sign on the numerator [naive wrong]
      {"\\boxed{-1/2}", "\\frac{-1}{2}", 1.0, true},
      // ... so it differs from -\frac{1}{2}
      {"\\boxed{-1/2}", "-\\frac{1}{2}", 0.0},
      // fix_a_slash_b: both sides must be integers as Python prints them ("01" is not)
      {"\\boxed{01/2}", "\\frac{1}{2}", 0.0},
      // fix_a_slash_b: only integers
      {"\\boxed{x/2}", "\\frac{x}{2}", 0.0},
      // "x=" with a short left side is dropped [naive wrong]
      {"\\boxed{x=2}", "2", 1.0, true},
      // "x " is two characters: dropped, then spaces removed [naive wrong]
      {"\\boxed{x = 2}", "2", 1.0, true},
      // a left side of three characters stays
      {"\\boxed{abc=2}", "2", 0.0},
      // the right side may be an expression [naive wrong]
      {"\\boxed{y=2x+1}", "2x+1", 1.0, true},
      // two '=': nothing dropped; spaces removed [naive wrong]
      {"\\boxed{x=1, y=2}", "x=1,y=2", 1.0, true},
      // "=5": the empty left side is short [naive wrong]
      {"\\boxed{=5}", "5", 1.0, true},
      // "k = 3" [naive wrong]
      {"\\boxed{k = 3}", "3", 1.0, true},
      // the left side is counted in characters: "πr" is two [naive wrong]
      {"\\boxed{\xCF\x80r=3}", "3", 1.0, true},
      // the ground truth is normalized as well
      {"\\boxed{x=5}", "x=5", 1.0},
      // "\%" removed [naive wrong]
      {"\\boxed{10\\%}", "10", 1.0, true},
      // a plain '%' is not removed [quirk]
      {"\\boxed{10%}", "10", 0.0},
      // units after "\text{ " removed [naive wrong]
      {"\\boxed{5\\text{ cm}}", "5", 1.0, true},
      // "\text{cm}" (no space) is not a unit for verl [quirk]
      {"\\boxed{5\\text{cm}}", "5", 0.0},
      // unit removed, then spaces [naive wrong]
      {"\\boxed{5 \\text{ cm}}", "5", 1.0, true},
      // everything after "\text{ " goes [naive wrong]
      {"\\boxed{5\\text{ cm}^2}", "5", 1.0, true},
      // the ground truth's unit is removed too [naive wrong]
      {"\\boxed{5}", "5\\text{ cm}", 1.0, true},
      // two "\text{ ": verl's strip raises, the raw strings are compared
      {"\\boxed{5\\text{ m} + 3\\text{ m}}", "8", 0.0},
      // ... and equal raw strings score 1
      {"\\boxed{5\\text{ m} + 3\\text{ m}}", "5\\text{ m} + 3\\text{ m}", 1.0},
      // \left and \right removed, spaces removed [naive wrong]
      {"\\boxed{\\left( 1, 2 \\right)}", "(1,2)", 1.0, true},
      // half-open interval [naive wrong]
      {"\\boxed{\\left[ 0, 1 \\right)}", "[0,1)", 1.0, true},
      // \left\{ -> \{ [naive wrong]
      {"\\boxed{\\left\\{1,2\\right\\}}", "\\{1,2\\}", 1.0, true},
      // "\left" is removed inside \leftarrow too [quirk]
      {"\\boxed{\\leftarrow}", "arrow", 1.0, true},
      // fix_sqrt: \sqrt2 -> \sqrt{2} [naive wrong]
      {"\\boxed{\\sqrt2}", "\\sqrt{2}", 1.0, true},
      // fix_sqrt after a coefficient [naive wrong]
      {"\\boxed{2\\sqrt3}", "2\\sqrt{3}", 1.0, true},
      // no symbolic simplification
      {"\\boxed{\\sqrt{12}}", "2\\sqrt{3}", 0.0},
      // fix_sqrt runs before spaces go: "\sqrt 2" -> "\sqrt{ }2" -> "\sqrt{}2" [quirk]
      {"\\boxed{\\sqrt 2}", "\\sqrt{2}", 0.0},
      // nested braces inside \boxed{}, \dfrac, \sqrt3 [naive wrong]
      {"\\boxed{\\dfrac{\\sqrt{3}}{2}}", "\\frac{\\sqrt3}{2}", 1.0, true},
      // nested braces are kept whole
      {"So $\\boxed{\\frac{\\sqrt{3}}{2}}$.", "\\frac{\\sqrt{3}}{2}", 1.0},
      // degrees ^\circ removed [naive wrong]
      {"\\boxed{90^\\circ}", "90", 1.0, true},
      // degrees ^{\circ} removed [naive wrong]
      {"\\boxed{90^{\\circ}}", "90", 1.0, true},
      // "\$" removed [naive wrong]
      {"\\boxed{\\$18}", "18", 1.0, true},
      // a bare '$' is not removed
      {"\\boxed{$18}", "18", 0.0},
      // no trailing '.' rule in verl's math strip_string [quirk]
      {"\\boxed{5.}", "5", 0.0},
      // no \boxed -> 0
      {"The answer is 5", "5", 0.0},
      // \fbox is found but remove_boxed rejects it -> 0 [quirk]
      {"\\fbox{5}", "5", 0.0},
      // \fbox only where there is no \boxed
      {"\\boxed{3} then \\fbox{5}", "3", 1.0},
      // the last \boxed wins
      {"First \\boxed{1}, finally \\boxed{2}", "2", 1.0},
      // ... not the first
      {"First \\boxed{1}, finally \\boxed{2}", "1", 0.0},
      // unbalanced braces: no box -> 0
      {"\\boxed{5", "5", 0.0},
      // "\boxed 5" up to the next '$'
      {"$\\boxed 5$", "5", 1.0},
      // a "\boxed " anywhere wins over a later \boxed{} [quirk]
      {"\\boxed 5 and \\boxed{6}", "6", 0.0},
      // \text{} is not unwrapped in verl's math strip_string
      {"\\boxed{\\text{(A)}}", "(A)", 0.0},
      // spaces removed [naive wrong]
      {"\\boxed{ 7 }", "7", 1.0, true},
      // linebreaks removed [naive wrong]
      {"\\boxed{7\n}", "7", 1.0, true},
      // "\!" removed [naive wrong]
      {"\\boxed{1\\!000}", "1000", 1.0, true},
      // commas are kept
      {"\\boxed{1,000}", "1000", 0.0},
      // "\\" -> "\" [naive wrong]
      {"\\boxed{\\\\frac{1}{2}}", "\\frac{1}{2}", 1.0, true},
      // an empty \frac argument: strip raises, raw strings compared
      {"\\boxed{\\frac}", "\\frac", 1.0},
      // ... raw strings differ
      {"\\boxed{\\frac}", "\\frac{}{}", 0.0},
      // a one-character \frac argument leaves the whole string as it was
      {"\\boxed{\\frac1}", "\\frac{1}", 0.0},
      // fix_fracs takes single characters: \frac\pi2 is garbled, not \frac{\pi}{2} [quirk]
      {"\\boxed{\\frac\\pi2}", "\\frac{\\pi}{2}", 0.0},
      // " .5" -> " 0.5" -> "0.5" -> \frac{1}{2}; 1/2 -> \frac{1}{2} [naive wrong]
      {"\\boxed{ .5}", "1/2", 1.0, true},
      // no numeric evaluation
      {"\\boxed{\\pi}", "3.14", 0.0},
  };
}

TEST(MathScore, VectorsFollowVerl) {
  std::vector<MathCase> cases = math_cases();
  EXPECT_GE(cases.size(), 50u);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const MathCase& c = cases[i];
    SCOPED_TRACE("math vector " + std::to_string(i) + ": " + c.solution);
    EXPECT_DOUBLE_EQ(math_score(c.solution, c.truth), c.expected);
    if (c.naive_differs) {
      EXPECT_NE(naive_math(c.solution, c.truth), c.expected);
    }
  }
}

TEST(MathScore, NormalizesAsVerl) {
  EXPECT_EQ(math_last_boxed("a \\boxed{\\frac{1}{2}} b"), "\\boxed{\\frac{1}{2}}");
  EXPECT_EQ(math_last_boxed("\\fbox{3}"), "\\fbox{3}");
  EXPECT_EQ(math_remove_boxed("\\fbox{3}"), std::nullopt);
  EXPECT_EQ(math_strip_string("\\frac12"), "\\frac{1}{2}");
  EXPECT_EQ(math_strip_string("\\sqrt"), std::nullopt);
  EXPECT_EQ(math_strip_string(""), "");
  EXPECT_TRUE(math_is_equiv("x = \\dfrac{1}{2}", "0.5"));
}

TEST(ComputeScore, DispatchesOnDataSourceAsVerl) {
  // openai/gsm8k: strict, format score 0
  EXPECT_EQ(compute_score("openai/gsm8k", "#### 1,000", "1000"), 1.0);
  EXPECT_EQ(compute_score("openai/gsm8k", "The answer is 72", "72"), 0.0);
  EXPECT_EQ(compute_score("openai/gsm8k", "#### 71", "72"), 0.0);
  for (const char* source :
       {"lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500"}) {
    SCOPED_TRACE(source);
    EXPECT_EQ(reward_scorer_for(source), RewardScorer::kMath);
    EXPECT_EQ(compute_score(source, "\\boxed{\\frac12}", "0.5"), 1.0);
    EXPECT_EQ(compute_score(source, "#### 1", "1"), 0.0);
  }
  EXPECT_EQ(reward_scorer_for("openai/gsm8k"), RewardScorer::kGsm8k);
}

TEST(ComputeScore, UnknownDataSourceHasNoScorerAndAOneLineError) {
  // verl raises NotImplementedError; names are case-sensitive; verl's other scorers
  // (math_dapo, prime_math, code, geo3k) are not implemented here.
  for (const char* source :
       {"foo/bar", "", "gsm8k", "openai/GSM8K", "math_dapo", "aime2024", "numina_olympiads"}) {
    SCOPED_TRACE(source);
    EXPECT_EQ(compute_score(source, "#### 1", "1"), std::nullopt);
    EXPECT_EQ(reward_scorer_for(source), std::nullopt);
  }
  std::string error = unknown_data_source_error("foo/bar");
  EXPECT_NE(error.find("'foo/bar'"), std::string::npos);
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace grpo::trainer
