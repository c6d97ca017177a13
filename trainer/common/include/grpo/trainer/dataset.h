// verl-format datasets (docs/datasets.md): records with a `prompt` of chat messages, a
// `data_source` that picks the reward, `reward_model.ground_truth` and `extra_info`, read from
// JSONL (one record per line) or a JSON array file, and turned into the TaskData the training
// loop reads (tasks.h): prompts rendered with the model directory's chat template and tokenizer,
// truncated or filtered as verl's RLHFDataset does (verl/utils/dataset/rl_dataset.py), rollouts
// decoded and scored by the data_source's verl reward (rewards.h). LibTorch-free.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/tokenizer/chat.h"
#include "grpo/trainer/config.h"
#include "grpo/trainer/tasks.h"

namespace grpo::tokenizer {
class Tokenizer;
}

namespace grpo::trainer {

struct DatasetRecord {
  std::vector<tokenizer::ChatMessage> prompt;  // the prompt_key field
  std::string data_source;
  std::string ground_truth;    // reward_model.ground_truth (a number is kept as its JSON text)
  std::string answer;          // extra_info.answer where it is a string (the SFT target), else ""
  core::SourceLocation where;  // file:line of the record (line 0 inside a JSON array file)
};

// One file's records. JSONL: one JSON object per line, blank lines skipped. A file whose first
// non-blank character is '[' is one JSON array of such objects. Every record needs `prompt_key`
// (a list of {role, content} messages), `data_source` (string) and `reward_model.ground_truth`
// (string or number); `extra_info` is optional (an object). Errors: kParse (not JSON:
// file:line:col), kMissingKey / kWrongType / kInvalidValue (file:line: the field), each one line.
core::Result<std::vector<DatasetRecord>> parse_dataset(std::string_view text,
                                                       std::string_view file_name,
                                                       std::string_view prompt_key = "prompt");

enum class Truncation { kError, kLeft, kRight, kMiddle };
core::Result<Truncation> parse_truncation(std::string_view name);

// verl's raw_prompt_ids handling of a prompt longer than max_length: kLeft keeps the last
// max_length ids, kRight the first, kMiddle the first max_length / 2 and the last
// max_length - max_length / 2; kError is an error (kInvalidValue, at `where`). Shorter prompts are
// returned as they are.
core::Result<std::vector<std::int64_t>> truncate_prompt(std::vector<std::int64_t> ids,
                                                        std::int64_t max_length,
                                                        Truncation truncation,
                                                        const core::SourceLocation& where);

// The token ids that end a response: tokenizer_config.json's eos_token, then
// generation_config.json's eos_token_id (an integer or a list) when the file is in `model_dir`,
// without repeats. Error (kInvalidValue) when there is none; kParse for a bad
// generation_config.json.
core::Result<std::vector<std::int64_t>> eos_token_ids(const tokenizer::Tokenizer& tok,
                                                      const std::filesystem::path& model_dir);

// The TaskData of a run: the built-in task (cfg.task) or, with cfg.train_files set, the dataset
// read with the tokenizer of the Hugging Face directory cfg.model_path. Dataset errors are one
// line (file:line[:col]), kInvalidValue when the model is not a Hugging Face directory, when a
// data_source has no verl scorer, or when nothing is left to train on.
core::Result<std::unique_ptr<TaskData>> make_task_data(const TrainerConfig& cfg);

}  // namespace grpo::trainer
