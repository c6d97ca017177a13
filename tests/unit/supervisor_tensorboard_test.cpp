// The supervisor's TensorBoard scalars (supervisor_tensorboard.h, docs/tensorboard.md): a run
// with one crash and one restart on the simulated runner, its event file read back with a
// protobuf wire decoder written here (varints, fixed32/64, length-delimited fields by
// TensorFlow's Event / Summary field numbers), independent of the protobuf library that wrote it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "grpo/io/files.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/supervise/supervisor_tensorboard.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"
#include "grpo/test_support/simulated_runner.h"
#include "grpo/test_support/supervisor_harness.h"

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;

// --- a minimal protobuf wire reader -------------------------------------------------------
struct Wire {
  std::string_view s;
  std::size_t pos = 0;
  bool done() const { return pos >= s.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; pos < s.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(s[pos++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  std::string_view bytes(std::size_t n) {
    const std::string_view out = s.substr(pos, n);
    pos += n;
    return out;
  }
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::map<std::string, float> scalars;
};

std::map<std::string, float> decode_summary(std::string_view data) {
  std::map<std::string, float> out;
  Wire w{data};
  while (!w.done()) {
    const std::uint64_t key = w.varint();
    EXPECT_EQ(key, (1u << 3) | 2u);  // Summary.value, length-delimited
    Wire v{w.bytes(w.varint())};
    std::string tag;
    float value = 0;
    while (!v.done()) {
      const std::uint64_t k = v.varint();
      if (k == ((1u << 3) | 2u)) {
        tag = std::string(v.bytes(v.varint()));
      } else if (k == ((2u << 3) | 5u)) {  // simple_value, fixed32 little-endian float
        const std::string_view b = v.bytes(4);
        std::uint32_t bits = 0;
        for (int i = 0; i < 4; ++i) {
          bits |= static_cast<std::uint32_t>(static_cast<unsigned char>(b[i])) << (8 * i);
        }
        std::memcpy(&value, &bits, 4);
      } else {
        ADD_FAILURE() << "unexpected Summary.Value key " << k;
        return out;
      }
    }
    out[tag] = value;
  }
  return out;
}

Event decode_event(std::string_view data) {
  Event e;
  Wire w{data};
  while (!w.done()) {
    const std::uint64_t k = w.varint();
    if (k == ((1u << 3) | 1u)) {  // wall_time, fixed64 double
      const std::string_view b = w.bytes(8);
      std::uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) {
        bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
      }
      std::memcpy(&e.wall_time, &bits, 8);
    } else if (k == ((2u << 3) | 0u)) {
      e.step = static_cast<std::int64_t>(w.varint());
    } else if (k == ((3u << 3) | 2u)) {
      e.file_version = std::string(w.bytes(w.varint()));
    } else if (k == ((5u << 3) | 2u)) {
      e.scalars = decode_summary(w.bytes(w.varint()));
    } else {
      ADD_FAILURE() << "unexpected Event key " << k;
      break;
    }
  }
  return e;
}

// Records by their length fields (the CRCs are checked by TensorBoard.* and the Python reader).
std::vector<Event> read_events(const fs::path& file) {
  auto text = io::read_file(file);
  EXPECT_TRUE(text.ok());
  std::vector<Event> out;
  if (!text.ok()) return out;
  std::size_t pos = 0;
  while (pos + 12 <= text->size()) {
    std::uint64_t len = 0;
    for (int i = 0; i < 8; ++i) {
      len |= static_cast<std::uint64_t>(static_cast<unsigned char>((*text)[pos + i])) << (8 * i);
    }
    out.push_back(decode_event(std::string_view(*text).substr(pos + 12, len)));
    pos += 16 + len;
  }
  EXPECT_EQ(pos, text->size());
  return out;
}

// --- the supervisor on the simulated runner -------------------------------------------------
struct SupervisedRun : SupervisorHarness {
  explicit SupervisedRun(const std::string& name) : SupervisorHarness("tb-" + name) {
    opts.config.micro_batch = 16;
    opts.config.budget.max_restarts = 3;
    opts.config.budget.backoff_base_s = 1;
    opts.config.divisible_by = {16, 8};
  }

  // One attempt whose rank 1 is killed at step 7, then one from the checkpoint of step 5.
  int crash_and_restart() {
    SimAttempt first = sim_trainer(2, 0, 10, 1.0, 5);
    sim_fault(first, 1, 7, Signaled{SIGKILL});
    push(std::move(first));
    push(sim_trainer(2, 5, 10, 1.0, 5));
    return run();
  }
};

TEST(SupervisorTensorBoard, TrainerArgvWantsTensorBoard) {
  EXPECT_TRUE(trainer_argv_wants_tensorboard(
      {"grpo-trainer", "--set", "trainer.logger=['console','tensorboard']"}));
  EXPECT_TRUE(trainer_argv_wants_tensorboard({"x", "--set=trainer.logger=tensorboard"}));
  EXPECT_TRUE(trainer_argv_wants_tensorboard({"x", "trainer.logger=[console,tensorboard]"}));
  EXPECT_FALSE(trainer_argv_wants_tensorboard({"x", "--set", "trainer.logger=['console']"}));
  EXPECT_FALSE(
      trainer_argv_wants_tensorboard({"x", "--set", "trainer.experiment_name=tensorboard"}));
  EXPECT_FALSE(trainer_argv_wants_tensorboard({}));
}

TEST(SupervisorTensorBoard, RestartsAndFailuresOfARunWithOneCrash) {
  SupervisedRun r("crash");
  r.opts.trainer_argv = {"grpo-trainer", "--model", "tiny-moe", "--set",
                         "trainer.logger=['console','tensorboard']"};
  EXPECT_EQ(r.crash_and_restart(), kExitSucceeded);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(r.dir / "tensorboard")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  const std::string name = files[0].filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - 11), ".supervisor") << name;

  const std::vector<Event> events = read_events(files[0]);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  // Written at run_started, 2 x attempt_started, failure, decision, run_finished.
  ASSERT_EQ(events.size(), 7u);
  const Event& first = events[1];
  EXPECT_EQ(first.step, 0);
  EXPECT_EQ(first.scalars.at("supervisor/restarts"), 0.0f);
  EXPECT_EQ(first.scalars.at("supervisor/failures"), 0.0f);
  const Event& last = events.back();
  // The run: one crash (rank 1 killed after step 6 finished), one restart, two attempts, and
  // the attempt ran to step 10.
  EXPECT_EQ(last.step, 10);
  EXPECT_EQ(last.scalars.at("supervisor/restarts"), 1.0f);
  EXPECT_EQ(last.scalars.at("supervisor/failures"), 1.0f);
  EXPECT_EQ(last.scalars.at("supervisor/failures/crash"), 1.0f);
  EXPECT_EQ(last.scalars.at("supervisor/attempts"), 2.0f);
  EXPECT_EQ(last.scalars.at("supervisor/requeues"), 0.0f);
  EXPECT_GT(last.scalars.at("supervisor/lost_s"), 0.0f);
  // The failure is recorded at the step the crash interrupted.
  bool failure_seen = false;
  for (const Event& e : events) {
    if (e.scalars.count("supervisor/failures") && e.scalars.at("supervisor/failures") == 1.0f &&
        !failure_seen) {
      failure_seen = true;
      EXPECT_EQ(e.step, 6);
      EXPECT_EQ(e.scalars.at("supervisor/restarts"), 0.0f);  // the decision comes next
    }
  }
  EXPECT_TRUE(failure_seen);
}

TEST(SupervisorTensorBoard, NothingWithoutTheLogger) {
  SupervisedRun r("plain");
  r.opts.trainer_argv = {"grpo-trainer", "--model", "tiny-moe"};
  EXPECT_EQ(r.crash_and_restart(), kExitSucceeded);
  EXPECT_FALSE(fs::exists(r.dir / "tensorboard"));
}

}  // namespace
}  // namespace grpo::supervise
