#include "grpo/trainer/tasks.h"

#include <algorithm>
#include <set>

namespace grpo::trainer {
namespace {

constexpr std::string_view kAlphabet =
    "0123456789abcdefghijklmnopqrstuvwxyz+-*=>< :?,.()|#!/_[]{}&%$";
static_assert(kAlphabet.size() == Tokenizer::kVocabSize - 3);

std::uint64_t uniform(std::uint64_t& state, std::uint64_t n) {
  return splitmix64(state) % n;
}

std::string number_with_digits(std::uint64_t& state, std::int64_t digits) {
  std::string s;
  s += static_cast<char>('0' + (digits == 1 ? uniform(state, 10) : 1 + uniform(state, 9)));
  for (std::int64_t i = 1; i < digits; ++i) s += static_cast<char>('0' + uniform(state, 10));
  return s;
}

std::string add_decimal(const std::string& a, const std::string& b) {
  std::string out;
  int carry = 0;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()) || carry; ++i) {
    int d = carry;
    if (i < a.size()) d += a[a.size() - 1 - i] - '0';
    if (i < b.size()) d += b[b.size() - 1 - i] - '0';
    out += static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

class AdditionTask final : public Task {
 public:
  std::string_view name() const override { return "addition"; }
  Example draw(std::uint64_t& state, std::int64_t size) const override {
    const std::string a = number_with_digits(state, size);
    const std::string b = number_with_digits(state, size);
    return Example{a + "+" + b + "=", add_decimal(a, b), {}, {}, {}};
  }
};

class ReverseTask final : public Task {
 public:
  std::string_view name() const override { return "reverse"; }
  Example draw(std::uint64_t& state, std::int64_t size) const override {
    std::string s;
    for (std::int64_t i = 0; i < size; ++i) s += static_cast<char>('a' + uniform(state, 26));
    std::string r(s.rbegin(), s.rend());
    return Example{"r:" + s + "=", r, {}, {}, {}};
  }
};

}  // namespace

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string_view Tokenizer::alphabet() {
  return kAlphabet;
}

core::Result<std::vector<std::int64_t>> Tokenizer::encode(std::string_view text) {
  std::vector<std::int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) {
    const auto pos = kAlphabet.find(c);
    if (pos == std::string_view::npos) {
      return core::make_error(core::ErrorKind::kInvalidValue,
                              std::string("character '") + c + "' is not in the vocabulary");
    }
    ids.push_back(static_cast<std::int64_t>(pos) + 3);
  }
  return ids;
}

char Tokenizer::to_char(std::int64_t id) {
  if (id < 3 || id >= kVocabSize) return '\0';
  return kAlphabet[static_cast<std::size_t>(id - 3)];
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids) {
  std::string out;
  for (std::int64_t id : ids) {
    if (id == kEos) break;
    if (id == kPad || id == kBos) continue;
    const char c = to_char(id);
    out += c == '\0' ? '?' : c;
  }
  return out;
}

std::unique_ptr<Task> make_addition_task() {
  return std::make_unique<AdditionTask>();
}
std::unique_ptr<Task> make_reverse_task() {
  return std::make_unique<ReverseTask>();
}

core::Result<std::unique_ptr<Task>> make_task(std::string_view name) {
  if (name == "addition") return make_addition_task();
  if (name == "reverse") return make_reverse_task();
  return core::make_error(core::ErrorKind::kInvalidValue,
                          "unknown task '" + std::string(name) + "' (addition, reverse)");
}

Splits make_splits(const Task& task, std::uint64_t seed, std::int64_t train_size,
                   std::int64_t val_size, std::int64_t min_len, std::int64_t max_len) {
  Splits s;
  std::uint64_t state = seed * 0x2545f4914f6cdd1dULL + 0x1234567ULL;
  const auto span = static_cast<std::uint64_t>(max_len - min_len + 1);
  auto draw = [&] {
    const auto size = min_len + static_cast<std::int64_t>(uniform(state, span));
    return task.draw(state, size);
  };
  std::set<std::string> val_prompts;
  // Validation first; bounded attempts so tiny example spaces cannot loop forever.
  for (std::int64_t tries = 0; std::ssize(s.val) < val_size && tries < 100 * val_size; ++tries) {
    Example e = draw();
    if (val_prompts.insert(e.prompt).second) s.val.push_back(std::move(e));
  }
  for (std::int64_t tries = 0; std::ssize(s.train) < train_size && tries < 100 * train_size;
       ++tries) {
    Example e = draw();
    if (!val_prompts.count(e.prompt)) s.train.push_back(std::move(e));
  }
  return s;
}

std::vector<std::int64_t> epoch_order(std::uint64_t seed, std::int64_t epoch, std::int64_t size) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) order[static_cast<std::size_t>(i)] = i;
  std::uint64_t state = seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(epoch + 1));
  for (std::int64_t i = size - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(uniform(state, static_cast<std::uint64_t>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

namespace {

class BuiltinTaskData final : public TaskData {
 public:
  BuiltinTaskData(std::unique_ptr<Task> task, Splits splits, std::uint64_t seed)
      : TaskData(std::move(splits.train), std::move(splits.val), seed, true),
        task_(std::move(task)) {}

  std::string describe() const override { return std::string(task_->name()); }

  std::vector<std::int64_t> prompt_ids(const Example& e) const override {
    std::vector<std::int64_t> ids{Tokenizer::kBos};
    auto enc = Tokenizer::encode(e.prompt);
    ids.insert(ids.end(), enc->begin(), enc->end());
    return ids;
  }

  std::vector<std::int64_t> target_ids(const Example& e) const override {
    std::vector<std::int64_t> ids = Tokenizer::encode(e.answer).value();
    ids.push_back(Tokenizer::kEos);
    return ids;
  }

  double reward(const Example& e, const std::vector<std::int64_t>& response_ids) const override {
    return task_->reward(e, Tokenizer::decode(response_ids));
  }

  std::vector<std::int64_t> eos_ids() const override { return {Tokenizer::kEos}; }
  std::int64_t vocab_size() const override { return Tokenizer::kVocabSize; }

 private:
  std::unique_ptr<Task> task_;
};

}  // namespace

core::Result<std::unique_ptr<TaskData>> TaskData::create(std::string_view task, std::uint64_t seed,
                                                         std::int64_t train_size,
                                                         std::int64_t val_size,
                                                         std::int64_t min_len,
                                                         std::int64_t max_len) {
  GRPO_TRY(std::unique_ptr<Task> t, make_task(task));
  Splits splits = make_splits(*t, seed, train_size, val_size, min_len, max_len);
  return std::unique_ptr<TaskData>(
      std::make_unique<BuiltinTaskData>(std::move(t), std::move(splits), seed));
}

std::vector<const Example*> TaskData::train_batch(std::int64_t cursor, std::int64_t global_count,
                                                  int rank, int world) const {
  const auto n = static_cast<std::int64_t>(train_.size());
  const std::int64_t per_rank = global_count / world;
  std::vector<const Example*> out;
  std::int64_t cached_epoch = -1;
  std::vector<std::int64_t> order;
  for (std::int64_t i = rank * per_rank; i < (rank + 1) * per_rank; ++i) {
    const std::int64_t pos = cursor + i;
    const std::int64_t epoch = pos / n;
    if (epoch != cached_epoch) {
      if (shuffle_) {
        order = epoch_order(seed_, epoch, n);
      } else {
        order.resize(static_cast<std::size_t>(n));
        for (std::int64_t k = 0; k < n; ++k) order[static_cast<std::size_t>(k)] = k;
      }
      cached_epoch = epoch;
    }
    out.push_back(&train_[static_cast<std::size_t>(order[static_cast<std::size_t>(pos % n)])]);
  }
  return out;
}

}  // namespace grpo::trainer
