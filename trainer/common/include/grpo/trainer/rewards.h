// Rule-based rewards as verl scores them (docs/rewards.md): gsm8k's "#### answer" extraction
// (strict and flexible), MATH's last \boxed{} answer under verl's string normalization, and the
// dispatch on a sample's data_source that verl's default_compute_score does.
// LibTorch-free. The training loop scores a verl-format dataset's responses with compute_score
// (dataset.h, docs/datasets.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace grpo::trainer {

// verl gsm8k.extract_solution's two methods. kStrict is the one verl's dispatch uses.
enum class Gsm8kMethod { kStrict, kFlexible };

// The answer verl's gsm8k extracts from a solution (only its last 300 characters are searched),
// nullopt where it finds none. Strict: the last "#### <number>", commas removed. Flexible: the
// last number-like run that is not "." (commas kept, as verl keeps them).
std::optional<std::string> gsm8k_extract(std::string_view solution, Gsm8kMethod method);

// verl gsm8k.compute_score: 0 without an extracted answer, `score` where the answer equals
// ground_truth exactly, else `format_score` (the optional format reward).
double gsm8k_score(std::string_view solution, std::string_view ground_truth,
                   Gsm8kMethod method = Gsm8kMethod::kStrict, double format_score = 0.0,
                   double score = 1.0);

// verl math_reward.last_boxed_only_string: the last "\boxed{...}" (braces balanced) or, only
// without any "\boxed", the last "\fbox{...}"; "\boxed <x>" up to the next '$'. nullopt: none.
std::optional<std::string> math_last_boxed(std::string_view text);

// verl math_reward.remove_boxed: the inside of "\boxed{...}" or what follows "\boxed ";
// nullopt where verl's assertions fail (e.g. an "\fbox{...}").
std::optional<std::string> math_remove_boxed(std::string_view boxed);

// verl math_reward.strip_string (the normalization). nullopt where verl's code raises
// (an empty argument after "\frac" or "\sqrt", two "\text{ " units).
std::optional<std::string> math_strip_string(std::string_view answer);

// verl math_reward.is_equiv: normalized strings equal; where either normalization raises, the
// raw strings equal.
bool math_is_equiv(std::string_view a, std::string_view b);

// verl math_reward.compute_score: 1 where the last boxed answer is equivalent to ground_truth,
// else 0 (also where there is no box or it cannot be unboxed).
double math_score(std::string_view solution, std::string_view ground_truth);

enum class RewardScorer { kGsm8k, kMath };

// The scorer verl's default_compute_score picks for a data_source: "openai/gsm8k" -> gsm8k;
// "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500" -> math.
// nullopt for every other source (verl's other scorers are not implemented here).
std::optional<RewardScorer> reward_scorer_for(std::string_view data_source);

// default_compute_score: gsm8k strict with format_score 0 and score 1, or math. nullopt for a
// data_source without a scorer (verl raises NotImplementedError); see unknown_data_source_error.
std::optional<double> compute_score(std::string_view data_source, std::string_view solution,
                                    std::string_view ground_truth);

// The one-line error for a data_source compute_score has no scorer for.
std::string unknown_data_source_error(std::string_view data_source);

}  // namespace grpo::trainer
