// A verl-format dataset as the training loop's TaskData (dataset.h): files read through io::,
// prompts rendered with the model directory's chat template and tokenized, truncated or filtered
// as verl's RLHFDataset does, responses decoded and scored by rewards.h's compute_score.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"
#include "grpo/tokenizer/bpe.h"
#include "grpo/trainer/dataset.h"
#include "grpo/trainer/rewards.h"

namespace grpo::trainer {
namespace {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using nlohmann::json;

// The largest dataset file read (verl's GSM8K train split is ~4 MiB as JSONL).
constexpr std::size_t kMaxDatasetBytes = std::size_t{2} << 30;

class DatasetTaskData final : public TaskData {
 public:
  DatasetTaskData(std::vector<Example> train, std::vector<Example> val, std::uint64_t seed,
                  bool shuffle, tokenizer::Tokenizer tok, std::vector<std::int64_t> eos,
                  std::int64_t max_response_length)
      : TaskData(std::move(train), std::move(val), seed, shuffle),
        tok_(std::move(tok)),
        eos_(std::move(eos)),
        max_response_length_(max_response_length) {}

  std::string describe() const override {
    return "dataset (" + std::to_string(train().size()) + " train, " +
           std::to_string(val().size()) + " validation records)";
  }

  std::vector<std::int64_t> prompt_ids(const Example& e) const override { return e.prompt_ids; }

  // The answer's tokens, cut to data.max_response_length - 1, then the first end token.
  std::vector<std::int64_t> target_ids(const Example& e) const override {
    std::vector<std::int64_t> ids;
    for (const tokenizer::TokenId id : tok_.encode(e.answer)) {
      if (std::ssize(ids) + 1 >= max_response_length_) break;
      ids.push_back(id);
    }
    ids.push_back(eos_.front());
    return ids;
  }

  double reward(const Example& e, const std::vector<std::int64_t>& response_ids) const override {
    // As verl's reward manager: the response up to and including its end token, decoded without
    // special tokens. Ids past the tokenizer's vocabulary (the embedding's padding rows, which an
    // untrained model may sample) decode to nothing.
    std::vector<tokenizer::TokenId> ids;
    const auto vocab = static_cast<std::int64_t>(tok_.vocab_size());
    for (const std::int64_t id : response_ids) {
      if (id >= 0 && id < vocab) ids.push_back(static_cast<tokenizer::TokenId>(id));
      if (std::find(eos_.begin(), eos_.end(), id) != eos_.end()) break;
    }
    auto text = tok_.decode(ids, /*skip_special=*/true);
    if (!text.ok()) return 0.0;
    return compute_score(e.data_source, *text, e.ground_truth).value_or(0.0);
  }

  std::vector<std::int64_t> eos_ids() const override { return eos_; }
  std::int64_t vocab_size() const override {
    std::int64_t v = static_cast<std::int64_t>(tok_.vocab_size());
    for (const std::int64_t id : eos_) v = std::max(v, id + 1);
    return v;
  }

 private:
  tokenizer::Tokenizer tok_;
  std::vector<std::int64_t> eos_;
  std::int64_t max_response_length_;
};

core::Result<std::vector<DatasetRecord>> read_files(const std::vector<std::string>& files,
                                                    const std::string& prompt_key) {
  std::vector<DatasetRecord> out;
  for (const std::string& f : files) {
    GRPO_TRY(const std::string text, io::read_file(f, kMaxDatasetBytes));
    GRPO_TRY(std::vector<DatasetRecord> records, parse_dataset(text, f, prompt_key));
    for (DatasetRecord& r : records) out.push_back(std::move(r));
  }
  return out;
}

// Records -> examples: data_source checked, prompt rendered, tokenized, filtered or truncated.
core::Result<std::vector<Example>> to_examples(std::vector<DatasetRecord> records,
                                               const tokenizer::Tokenizer& tok,
                                               const TrainerConfig& cfg, std::int64_t* filtered) {
  GRPO_TRY(const Truncation truncation, parse_truncation(cfg.truncation));
  tokenizer::ChatOptions chat;
  chat.add_generation_prompt = true;
  std::vector<Example> out;
  for (DatasetRecord& r : records) {
    if (!reward_scorer_for(r.data_source)) {
      return make_error(ErrorKind::kInvalidValue, unknown_data_source_error(r.data_source),
                        r.where);
    }
    auto rendered = tok.render_chat(r.prompt, chat);
    if (!rendered.ok()) {
      return make_error(rendered.error().kind, rendered.error().message, r.where);
    }
    std::vector<std::int64_t> ids;
    for (const tokenizer::TokenId id : tok.encode(*rendered)) ids.push_back(id);
    if (cfg.filter_overlong_prompts &&
        static_cast<std::int64_t>(ids.size()) > cfg.max_prompt_length) {
      ++*filtered;
      continue;
    }
    GRPO_TRY(ids, truncate_prompt(std::move(ids), cfg.max_prompt_length, truncation, r.where));
    Example e;
    e.prompt = std::move(rendered).value();
    // The SFT target: the worked solution where extra_info has one (verl's gsm8k preprocessing
    // keeps it there), else the bare answer in the form the gsm8k scorer reads.
    e.answer = !r.answer.empty() ? r.answer
               : reward_scorer_for(r.data_source) == RewardScorer::kMath
                   ? "\\boxed{" + r.ground_truth + "}"
                   : "#### " + r.ground_truth;
    e.data_source = std::move(r.data_source);
    e.ground_truth = std::move(r.ground_truth);
    e.prompt_ids = std::move(ids);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

core::Result<std::vector<std::int64_t>> eos_token_ids(const tokenizer::Tokenizer& tok,
                                                      const fs::path& model_dir) {
  std::vector<std::int64_t> ids;
  if (tok.config().eos_id) ids.push_back(*tok.config().eos_id);
  const fs::path gen = model_dir / "generation_config.json";
  std::error_code ec;
  if (fs::exists(gen, ec)) {
    GRPO_TRY(const std::string text, io::read_file(gen, 1u << 20));
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return make_error(ErrorKind::kParse, "not a JSON object", {gen.string(), 0, 0});
    }
    if (const auto e = j.find("eos_token_id"); e != j.end()) {
      const json list = e->is_array() ? *e : json::array({*e});
      for (const json& v : list) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
          return make_error(ErrorKind::kWrongType,
                            "eos_token_id: expected a token id or a list of them",
                            {gen.string(), 0, 0});
        }
        const auto id = v.get<std::int64_t>();
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
      }
    }
  }
  if (ids.empty()) {
    return make_error(ErrorKind::kInvalidValue,
                      "no end-of-response token: neither tokenizer_config.json's eos_token nor "
                      "generation_config.json's eos_token_id in " +
                          model_dir.string());
  }
  return ids;
}

core::Result<std::unique_ptr<TaskData>> make_task_data(const TrainerConfig& cfg) {
  if (!cfg.uses_dataset()) {
    return TaskData::create(cfg.task, static_cast<std::uint64_t>(cfg.data_seed), cfg.train_size,
                            cfg.val_size, cfg.task_min_len, cfg.task_max_len);
  }
  const auto config_json = io::hf_config_path(cfg.model_path);
  if (!config_json) {
    return make_error(ErrorKind::kInvalidValue,
                      "data.train_files needs a Hugging Face model directory (config.json and "
                      "tokenizer.json) as --model / actor_rollout_ref.model.path, got '" +
                          cfg.model_path + "'");
  }
  const fs::path dir = config_json->parent_path();
  GRPO_TRY(tokenizer::Tokenizer tok, tokenizer::Tokenizer::load(dir));
  GRPO_TRY(std::vector<std::int64_t> eos, eos_token_ids(tok, dir));

  std::int64_t filtered = 0;
  GRPO_TRY(std::vector<DatasetRecord> train_records, read_files(cfg.train_files, cfg.prompt_key));
  GRPO_TRY(std::vector<Example> train, to_examples(std::move(train_records), tok, cfg, &filtered));
  std::vector<Example> val;
  if (!cfg.val_files.empty()) {
    GRPO_TRY(std::vector<DatasetRecord> val_records, read_files(cfg.val_files, cfg.prompt_key));
    GRPO_TRY(val, to_examples(std::move(val_records), tok, cfg, &filtered));
    if (std::ssize(val) > cfg.val_size) val.resize(static_cast<std::size_t>(cfg.val_size));
  } else if (std::ssize(train) > cfg.val_size) {
    // No validation files: the last data.val_size train records validate (and are not trained).
    val.assign(std::make_move_iterator(train.end() - cfg.val_size),
               std::make_move_iterator(train.end()));
    train.resize(train.size() - static_cast<std::size_t>(cfg.val_size));
  }
  if (train.empty()) {
    return make_error(ErrorKind::kInvalidValue,
                      "no training records left in data.train_files" +
                          (filtered > 0 ? " (" + std::to_string(filtered) +
                                              " longer than data.max_prompt_length were filtered)"
                                        : std::string()));
  }
  if (val.empty()) {
    return make_error(ErrorKind::kInvalidValue,
                      "no validation records: set data.val_files, or give more than "
                      "data.val_size train records");
  }
  return std::unique_ptr<TaskData>(std::make_unique<DatasetTaskData>(
      std::move(train), std::move(val), static_cast<std::uint64_t>(cfg.data_seed), cfg.shuffle,
      std::move(tok), std::move(eos), cfg.max_response_length));
}

}  // namespace grpo::trainer
