// The built-in tasks with exact-match rewards, the character-level tokenizer they use, and
// TaskData: the data and rewards of a run as the training loop sees them.
// LibTorch-free: examples are strings and token ids are plain integers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::trainer {

// 64 ids: <pad>=0, <bos>=1, <eos>=2, then '0'-'9', 'a'-'z' and 25 punctuation characters.
class Tokenizer {
 public:
  static constexpr std::int64_t kVocabSize = 64;
  static constexpr std::int64_t kPad = 0;
  static constexpr std::int64_t kBos = 1;
  static constexpr std::int64_t kEos = 2;

  // Characters outside the vocabulary are an error (kInvalidValue).
  static core::Result<std::vector<std::int64_t>> encode(std::string_view text);
  // Stops at the first <eos>; <pad>/<bos> are skipped; unknown ids become '?'.
  static std::string decode(const std::vector<std::int64_t>& ids);
  static char to_char(std::int64_t id);  // '\0' for the special ids
  static std::string_view alphabet();    // the 61 characters, in id order from 3
};

struct Example {
  std::string prompt;  // "12+34="
  std::string answer;  // "46"
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string_view name() const = 0;
  // Reward of one response: 1.0 for an exact match of the answer, else 0.0.
  double reward(const Example& ex, std::string_view response) const {
    return response == ex.answer ? 1.0 : 0.0;
  }
  // Draws one example; `size` is the operand size (digits or letters).
  virtual Example draw(std::uint64_t& state, std::int64_t size) const = 0;
};

// "a+b=" with a, b of min..max digits (no leading zeros) -> the decimal sum.
std::unique_ptr<Task> make_addition_task();
// "r:abc=" with min..max letters -> the letters reversed.
std::unique_ptr<Task> make_reverse_task();
// "addition" or "reverse" (kInvalidValue otherwise).
core::Result<std::unique_ptr<Task>> make_task(std::string_view name);

struct Splits {
  std::vector<Example> train;
  std::vector<Example> val;  // disjoint from train (no prompt in both)
};
// Deterministic in (task, seed, sizes): the same on every rank and every run.
Splits make_splits(const Task& task, std::uint64_t seed, std::int64_t train_size,
                   std::int64_t val_size, std::int64_t min_len, std::int64_t max_len);

// The order in which epoch `epoch` visits the train split: a permutation seeded by (seed, epoch).
std::vector<std::int64_t> epoch_order(std::uint64_t seed, std::int64_t epoch, std::int64_t size);

// The data and rewards of a run, behind one object: the task, its train and validation splits,
// which train examples a step takes, how an example becomes token ids and how a sampled response
// is scored. The training loop reaches data only through this.
class TaskData {
 public:
  // make_task(name), then make_splits(task, seed, ...). `seed` also shuffles every epoch.
  // Errors: make_task's.
  static core::Result<TaskData> create(std::string_view task, std::uint64_t seed,
                                       std::int64_t train_size, std::int64_t val_size,
                                       std::int64_t min_len, std::int64_t max_len);

  const Task& task() const { return *task_; }
  const std::vector<Example>& train() const { return splits_.train; }
  const std::vector<Example>& val() const { return splits_.val; }

  // Global positions [cursor, cursor + global_count) of the train split, shuffled per epoch
  // (epoch_order); `rank` of `world` takes its contiguous share of global_count / world, so a
  // prompt (and its whole group) belongs to exactly one rank.
  std::vector<const Example*> train_batch(std::int64_t cursor, std::int64_t global_count, int rank,
                                          int world) const;

  // <bos> then the prompt's tokens: what the policy is prompted with.
  std::vector<std::int64_t> prompt_ids(const Example& e) const;
  // The answer's tokens then <eos>: the SFT target.
  std::vector<std::int64_t> target_ids(const Example& e) const;
  // The task's reward of a sampled response (token ids, decoded up to the first <eos>).
  double reward(const Example& e, const std::vector<std::int64_t>& response_ids) const;

 private:
  TaskData(std::unique_ptr<Task> task, Splits splits, std::uint64_t seed);
  std::unique_ptr<Task> task_;
  Splits splits_;
  std::uint64_t seed_;
};

// splitmix64: the small counter-based generator the data pipeline uses (its whole state is one
// integer, so the data cursor needs no RNG state in checkpoints).
std::uint64_t splitmix64(std::uint64_t& state);

}  // namespace grpo::trainer
