// The built-in tasks with exact-match rewards, the character-level tokenizer they use, and
// TaskData: the data and rewards of a run as the training loop sees them.
// LibTorch-free: examples are strings and token ids are plain integers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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
  std::string prompt;  // "12+34="; a dataset's: the rendered chat prompt
  std::string answer;  // "46"; a dataset's: the SFT target (dataset.h)
  // Datasets only (dataset.h): the reward's inputs and the prompt's (truncated) token ids.
  std::string data_source;
  std::string ground_truth;
  std::vector<std::int64_t> prompt_ids;
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

// The data and rewards of a run, behind one object: its train and validation splits, which
// train examples a step takes, how an example becomes token ids, how a sampled response is
// scored and which tokens end one. The training loop reaches data only through this. Two
// implementations: the built-in tasks (create, below) and verl-format datasets (dataset.h).
class TaskData {
 public:
  virtual ~TaskData() = default;

  // The built-in task: make_task(name), then make_splits(task, seed, ...). `seed` also shuffles
  // every epoch. Errors: make_task's.
  static core::Result<std::unique_ptr<TaskData>> create(std::string_view task, std::uint64_t seed,
                                                        std::int64_t train_size,
                                                        std::int64_t val_size, std::int64_t min_len,
                                                        std::int64_t max_len);

  // For the log: "addition", "dataset (7473 train, 1319 val records)".
  virtual std::string describe() const = 0;
  const std::vector<Example>& train() const { return train_; }
  const std::vector<Example>& val() const { return val_; }

  // Global positions [cursor, cursor + global_count) of the train split, shuffled per epoch
  // (epoch_order; in file order without `shuffle`); `rank` of `world` takes its contiguous share
  // of global_count / world, so a prompt (and its whole group) belongs to exactly one rank. The
  // cursor is all the read position there is: a run resumed at cursor c takes exactly the
  // batches an uninterrupted run takes from c.
  std::vector<const Example*> train_batch(std::int64_t cursor, std::int64_t global_count, int rank,
                                          int world) const;

  // What the policy is prompted with (built-in: <bos> then the prompt's tokens).
  virtual std::vector<std::int64_t> prompt_ids(const Example& e) const = 0;
  // The SFT target: the answer's tokens then the first end-of-response token.
  virtual std::vector<std::int64_t> target_ids(const Example& e) const = 0;
  // The reward of a sampled response (token ids; what follows the first end token is ignored).
  virtual double reward(const Example& e, const std::vector<std::int64_t>& response_ids) const = 0;
  // The tokens that end a response (built-in: <eos>).
  virtual std::vector<std::int64_t> eos_ids() const = 0;
  // One more than the largest token id the data uses: the model's vocab_size must reach it.
  virtual std::int64_t vocab_size() const = 0;

 protected:
  TaskData(std::vector<Example> train, std::vector<Example> val, std::uint64_t seed, bool shuffle)
      : train_(std::move(train)), val_(std::move(val)), seed_(seed), shuffle_(shuffle) {}

 private:
  std::vector<Example> train_;
  std::vector<Example> val_;
  std::uint64_t seed_;
  bool shuffle_;
};

// splitmix64: the small counter-based generator the data pipeline uses (its whole state is one
// integer, so the data cursor needs no RNG state in checkpoints).
std::uint64_t splitmix64(std::uint64_t& state);

}  // namespace grpo::trainer
