// The process runner: the real posix_spawn one against /bin/sh, and the scripted fake.
#include "grpo/process/process_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "grpo/test_support/fake_process_runner.h"

namespace grpo::process {
namespace {

using std::chrono::milliseconds;

CommandSpec sh(const std::string& script) {
  CommandSpec c;
  c.argv = {"sh", "-c", script};
  c.timeout = std::chrono::seconds(20);
  return c;
}

TEST(PosixProcessRunner, CapturesOutputAndExitCode) {
  PosixProcessRunner r;
  auto done = r.run(sh("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(done.ok()) << done.error().str();
  EXPECT_EQ(done->status, ExitStatus(Exited{3}));
  EXPECT_EQ(done->out, "out\n");
  EXPECT_EQ(done->err, "err\n");
  EXPECT_FALSE(done->timed_out);
  EXPECT_EQ(shell_code(done->status), 3);
  EXPECT_EQ(describe(done->status), "exit 3");
}

TEST(PosixProcessRunner, LargeOutputIsCappedButDrained) {
  PosixProcessRunner r;
  CommandSpec c = sh("head -c 3000000 /dev/zero; echo done >&2");
  c.max_capture = 1000;
  auto done = r.run(c);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->out.size(), 1000u);
  EXPECT_EQ(done->err, "done\n");
  EXPECT_EQ(done->status, ExitStatus(Exited{0}));
}

TEST(PosixProcessRunner, NoShellIsInvolved) {
  PosixProcessRunner r;
  CommandSpec c;
  c.argv = {"printf", "%s|", "a b", "$(touch x)", "`id`", "'", ""};
  auto done = r.run(c);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->out, "a b|$(touch x)|`id`|'||");
}

TEST(PosixProcessRunner, EnvironmentSetAndUnset) {
  ::setenv("GRPO_RUNNER_TEST_DROP", "1", 1);
  PosixProcessRunner r;
  CommandSpec c = sh("echo \"${GRPO_RUNNER_TEST_SET}|${GRPO_RUNNER_TEST_DROP:-unset}\"");
  c.env = {{"GRPO_RUNNER_TEST_SET", "a b"}};
  c.unset_env = {"GRPO_RUNNER_TEST_DROP"};
  auto done = r.run(c);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->out, "a b|unset\n");
  ::unsetenv("GRPO_RUNNER_TEST_DROP");
}

TEST(PosixProcessRunner, StdinIsDevNullAndStreamsCanBeDiscarded) {
  PosixProcessRunner r;
  CommandSpec c = sh("cat; echo visible >&2; echo hidden");
  c.out = Stream::kNull;
  auto done = r.run(c);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->out, "");
  EXPECT_EQ(done->err, "visible\n");
}

TEST(PosixProcessRunner, NotFoundErrors) {
  PosixProcessRunner r;
  CommandSpec c;
  c.argv = {"grpo-no-such-program"};
  auto done = r.run(c);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().kind, core::ErrorKind::kNotFound);
  EXPECT_EQ(done.error().message, "grpo-no-such-program: not found on PATH");
  c.argv = {"/nonexistent/sbatch"};
  done = r.run(c);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().message, "/nonexistent/sbatch: no such executable file");
  // The child's PATH decides.
  c.argv = {"sh", "-c", "true"};
  c.env = {{"PATH", "/nonexistent"}};
  done = r.run(c);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().kind, core::ErrorKind::kNotFound);
  c.argv = {};
  EXPECT_EQ(r.run(c).error().kind, core::ErrorKind::kInvalidValue);
}

// A program in the current directory is never found through an empty or relative PATH entry
// (eu-stack was once looked up in the current directory when PATH was unset).
TEST(FindExecutable, NeverSearchesTheCurrentDirectory) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("grpo-find-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  std::ofstream("eu-stack") << "#!/bin/sh\n";
  std::filesystem::permissions("eu-stack", std::filesystem::perms::owner_all);
  EXPECT_FALSE(find_executable("eu-stack", ""));
  EXPECT_FALSE(find_executable("eu-stack", ":/nonexistent"));
  EXPECT_FALSE(find_executable("eu-stack", "."));
  EXPECT_EQ(find_executable("eu-stack", dir.string()), (dir / "eu-stack").string());
  EXPECT_TRUE(find_executable("sh", kDefaultPath));
  std::filesystem::current_path(cwd);
  std::filesystem::remove_all(dir);
}

TEST(PosixProcessRunner, TimeoutTerminatesTheGroup) {
  PosixProcessRunner r;
  // The child ignores nothing; its own child (sleep) is in the same new group and dies too.
  CommandSpec c = sh("sleep 30 & wait");
  c.timeout = milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  auto done = r.run(c);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->timed_out);
  EXPECT_EQ(done->status, ExitStatus(Signaled{SIGTERM}));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(PosixProcessRunner, TimeoutEscalatesToKill) {
  PosixProcessRunner r;
  CommandSpec c = sh("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  c.timeout = milliseconds(300);
  c.kill_grace = milliseconds(300);
  auto done = r.run(c);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->timed_out);
  EXPECT_EQ(done->status, ExitStatus(Signaled{SIGKILL}));
  EXPECT_EQ(describe(done->status), "signal 9 (SIGKILL)");
  EXPECT_EQ(shell_code(done->status), 137);
}

TEST(PosixProcessRunner, StartWaitSignal) {
  PosixProcessRunner r;
  CommandSpec c = sh("trap 'exit 7' USR2; while :; do sleep 0.02; done");
  c.out = Stream::kInherit;
  c.err = Stream::kInherit;
  auto p = r.start(c);
  ASSERT_TRUE(p.ok()) << p.error().str();
  auto& proc = *p.value();
  EXPECT_GT(proc.pid(), 0);
  auto still = proc.wait_for(milliseconds(100));
  ASSERT_TRUE(still.ok());
  EXPECT_FALSE(still.value().has_value());
  ASSERT_TRUE(proc.signal(SIGUSR2).ok());
  std::optional<ExitStatus> end;
  for (int i = 0; i < 200 && !end; ++i) end = proc.wait_for(milliseconds(50)).value();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(*end, ExitStatus(Exited{7}));
  // After the end: wait_for returns the same status, signal and kill are no-ops.
  EXPECT_EQ(*proc.wait_for(milliseconds(0)).value(), ExitStatus(Exited{7}));
  EXPECT_TRUE(proc.signal(SIGTERM).ok());
  EXPECT_TRUE(proc.kill().ok());
}

TEST(PosixProcessRunner, KillReachesTheGroupAndDestructorReaps) {
  PosixProcessRunner r;
  CommandSpec c = sh("sleep 30 & echo $! > \"$1\"; wait");
  const std::string pidfile = testing::TempDir() + "/grpo-runner-pid-" + std::to_string(::getpid());
  c.argv.push_back("sh");
  c.argv.push_back(pidfile);
  c.out = Stream::kNull;
  c.err = Stream::kNull;
  auto p = r.start(c);
  ASSERT_TRUE(p.ok());
  pid_t grandchild = 0;
  for (int i = 0; i < 200 && grandchild == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    FILE* f = std::fopen(pidfile.c_str(), "r");
    if (f != nullptr) {
      int v = 0;
      if (std::fscanf(f, "%d", &v) == 1) grandchild = v;
      std::fclose(f);
    }
  }
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(p.value()->kill().ok());
  auto end = p.value()->wait_for(std::nullopt);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end.value(), ExitStatus(Signaled{SIGKILL}));
  // The grandchild got SIGKILL too (it may linger as a zombie until init reaps it).
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    char state = '?';
    FILE* f = std::fopen(("/proc/" + std::to_string(grandchild) + "/stat").c_str(), "r");
    if (f == nullptr) {
      gone = true;
      break;
    }
    if (std::fscanf(f, "%*d %*s %c", &state) == 1 && (state == 'Z' || state == 'X')) gone = true;
    std::fclose(f);
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(gone);
  std::filesystem::remove(pidfile);

  // A handle dropped while its child runs kills and reaps it.
  auto q = r.start(sh("sleep 30"));
  ASSERT_FALSE(q.ok());  // capture is run()'s only
  CommandSpec quiet = sh("sleep 30");
  quiet.out = Stream::kNull;
  quiet.err = Stream::kNull;
  auto h = r.start(quiet);
  ASSERT_TRUE(h.ok());
  const pid_t pid = h.value()->pid();
  h.value().reset();
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: the pid is gone
}

TEST(FindExecutable, PathLookup) {
  EXPECT_EQ(find_executable("sh", "/nonexistent::/bin"), std::optional<std::string>("/bin/sh"));
  EXPECT_EQ(find_executable("sh", "/nonexistent"), std::nullopt);
  EXPECT_EQ(find_executable("/bin/sh", ""), std::optional<std::string>("/bin/sh"));
  const std::string plain = testing::TempDir() + "/grpo-not-executable";
  std::fclose(std::fopen(plain.c_str(), "w"));
  std::filesystem::permissions(
      plain, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(find_executable(plain, "/bin"), std::nullopt);  // not executable
  std::filesystem::remove(plain);
  EXPECT_EQ(find_executable("", "/bin"), std::nullopt);
}

TEST(FakeProcessRunner, ScriptedOutcomesAndRecordedCalls) {
  FakeProcessRunner fake;
  FakeOutcome first;
  first.out = "42\n";
  fake.push(first);
  FakeOutcome second;
  second.status = Exited{1};
  second.err = "sbatch: error: nope\n";
  fake.push(second);
  FakeOutcome third;
  third.running_polls = 2;
  third.ends_on_signal = true;
  third.status_on_signal = Exited{143};
  fake.push(third);

  CommandSpec c;
  c.argv = {"sbatch", "x"};
  auto a = fake.run(c);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->out, "42\n");
  auto b = fake.run(c);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->status, ExitStatus(Exited{1}));
  c.argv = {"srun"};
  auto p = fake.start(c);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.value()->wait_for(milliseconds(1)).value().has_value());
  ASSERT_TRUE(p.value()->signal(SIGTERM).ok());
  EXPECT_EQ(*p.value()->wait_for(milliseconds(1)).value(), ExitStatus(Exited{143}));
  EXPECT_EQ(fake.signals(), std::vector<int>{SIGTERM});
  ASSERT_EQ(fake.calls().size(), 3u);
  EXPECT_EQ(fake.calls()[2].argv, std::vector<std::string>{"srun"});
  // Out of script: an error, never a silent success.
  auto none = fake.run(c);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, core::ErrorKind::kInternal);
}

}  // namespace
}  // namespace grpo::process
