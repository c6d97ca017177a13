// The supervisor's child processes (child_process.h) as real processes: no descriptor leaks on
// a failed spawn, no signal to a process group whose leader was reaped, and log directories
// that change the mode of nothing but what they create.
#include "grpo/supervise/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace grpo::supervise {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("grpo-child-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int open_fds() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// The state letter of /proc/<pid>/stat ('S' sleeping, 'Z' zombie, ...); '?' when it is gone.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
}

// Every way spawn can fail after it opened descriptors closes all of them: a stderr file that
// cannot be opened (the stdin pipe is already open then) and an exec failure.
TEST(ChildSpawn, FailuresLeakNoDescriptors) {
  const fs::path d = temp_dir("fds");
  const fs::path not_a_program = d / "garbage";
  std::ofstream(not_a_program) << "not an executable format\n";
  fs::permissions(not_a_program, fs::perms::owner_all);
  const int before = open_fds();
  for (int i = 0; i < 3; ++i) {
    ChildSpec bad_log;
    bad_log.argv = {"/bin/true"};
    bad_log.stdin_pipe = true;
    bad_log.stderr_file = d / "no-such-dir" / "rank-0.log";
    auto a = Child::spawn(bad_log);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().kind, core::ErrorKind::kIo);
    EXPECT_NE(a.error().message.find("no-such-dir"), std::string::npos) << a.error().message;

    ChildSpec exec_fails;
    exec_fails.argv = {not_a_program.string()};
    exec_fails.stdin_pipe = true;
    auto b = Child::spawn(exec_fails);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().kind, core::ErrorKind::kIo);
    EXPECT_NE(b.error().message.find("cannot run " + not_a_program.string()), std::string::npos)
        << b.error().message;

    ChildSpec piped_stderr = exec_fails;
    piped_stderr.stdin_pipe = false;
    EXPECT_FALSE(Child::spawn(piped_stderr).ok());
  }
  EXPECT_EQ(open_fds(), before);
  fs::remove_all(d);
}

// After the leader is reaped its pid may be reused, and -pid may name another process group:
// signal_group must not send anything then, even though a member of the old group (here a
// background sleep the leader left behind) still runs.
TEST(ChildSignal, NothingIsSentToTheGroupOnceTheLeaderIsReaped) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 30 & echo $!; exit 0"};
  auto spawned = Child::spawn(spec);
  ASSERT_TRUE(spawned.ok()) << spawned.error().str();
  auto& child = *spawned.value();
  LineBuffer out;
  std::vector<std::string> lines;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<process::ExitStatus> status;
  while ((lines.empty() || !status) && std::chrono::steady_clock::now() < deadline) {
    if (child.out_fd() >= 0 && !out.read_from(child.out_fd(), lines)) child.close_out();
    if (!status) status = child.try_reap();
    wait_readable({child.out_fd()}, 0.01);
  }
  ASSERT_TRUE(status.has_value());
  ASSERT_FALSE(lines.empty());
  const pid_t member = static_cast<pid_t>(std::stoi(lines.front()));
  ASSERT_EQ(::getpgid(member), child.pid());  // still in the reaped leader's group
  EXPECT_TRUE(child.reaped());

  child.signal_group(SIGTERM);
  child.signal_self(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const char state = process_state(member);
  EXPECT_NE(state, 'Z') << "the group was signalled after its leader was reaped";
  EXPECT_NE(state, '?') << "the group was signalled after its leader was reaped";
  ::kill(member, SIGKILL);
}

// process_stopped reads the state from /proc: a SIGSTOPped child is stopped, a continued one
// is not, and neither is a pid that is gone.
TEST(ProcessStopped, FollowsSigstopAndSigcont) {
  ChildSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  auto spawned = Child::spawn(spec);
  ASSERT_TRUE(spawned.ok()) << spawned.error().str();
  auto& child = *spawned.value();
  const auto wait_for = [&](bool want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (process_stopped(child.pid()) != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return process_stopped(child.pid()) == want;
  };
  EXPECT_FALSE(process_stopped(child.pid()));
  child.signal_self(SIGSTOP);
  EXPECT_TRUE(wait_for(true));
  child.signal_self(SIGCONT);
  EXPECT_TRUE(wait_for(false));
  child.signal_self(SIGKILL);
  while (!child.try_reap()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(process_stopped(child.pid()));
}

// make_log_dir sets the mode of the directories it creates (0700) and of nothing else: not of a
// parent that was already there, nor of an attempt directory that exists.
TEST(MakeLogDir, ChangesOnlyWhatItCreates) {
  const fs::path d = temp_dir("logdir");
  ::chmod(d.c_str(), 0755);
  ASSERT_TRUE(make_log_dir(d / "logs" / "attempt-1").ok());
  EXPECT_EQ(mode_of(d), 0755u);
  EXPECT_EQ(mode_of(d / "logs"), 0700u);
  EXPECT_EQ(mode_of(d / "logs" / "attempt-1"), 0700u);

  // An existing parent (the run directory itself here) keeps its mode.
  fs::create_directories(d / "shared");
  ::chmod((d / "shared").c_str(), 0750);
  ASSERT_TRUE(make_log_dir(d / "shared" / "attempt-2").ok());
  EXPECT_EQ(mode_of(d / "shared"), 0750u);
  EXPECT_EQ(mode_of(d / "shared" / "attempt-2"), 0700u);

  // An existing log directory keeps its mode too.
  ::chmod((d / "shared" / "attempt-2").c_str(), 0710);
  ASSERT_TRUE(make_log_dir(d / "shared" / "attempt-2").ok());
  EXPECT_EQ(mode_of(d / "shared" / "attempt-2"), 0710u);

  // A file in the way is an error naming it.
  std::ofstream(d / "file") << "x";
  auto st = make_log_dir(d / "file" / "attempt-1");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find((d / "file").string()), std::string::npos)
      << st.error().message;
  fs::remove_all(d);
}

// OOM attribution reads only kernel log records written after the rank started, and only one
// naming both its PID and its program: a plain kill -9 of a rank whose PID an earlier process
// had (PID reuse), or that a container's PID namespace numbers differently, is no OOM (before,
// the whole log was searched for the PID, and such a kill halved the micro batch).
TEST(OomAttribution, OnlyRecordsSinceTheStartNamingPidAndProgram) {
  const fs::path log = fs::temp_directory_path() / ("grpo-kmsg-" + std::to_string(::getpid()));
  const pid_t pid = 4194301;  // near pid_max's ceiling: no /proc entry, so no cgroup counter
  std::ofstream(log) << "3,812,5000,-;Out of memory: Killed process 4194301 (grpo-trainer) "
                        "total-vm:1kB\n";
  OomSnapshot snap = oom_snapshot(pid, "/opt/grpo/bin/grpo-trainer", log);
  EXPECT_EQ(snap.comm, "grpo-trainer");
  EXPECT_FALSE(oom_killed(pid, snap)) << "a record from before the start counted";
  std::ofstream(log, std::ios::app)
      << "3,813,6000,-;Out of memory: Killed process 4194301 (python3) total-vm:1kB\n"
      << "6,814,6001,-;oom-kill:constraint=CONSTRAINT_NONE,task=grpo-trainer,pid=41943010,uid=0\n";
  EXPECT_FALSE(oom_killed(pid, snap)) << "another program, or another PID, counted";
  std::ofstream(log, std::ios::app) << "6,815,7000,-;oom-kill:constraint=CONSTRAINT_MEMCG,"
                                       "oom_memcg=/x,task_memcg=/x,task=grpo-trainer,pid=4194301,"
                                       "uid=0\n";
  EXPECT_TRUE(oom_killed(pid, snap));
  // The kernel's comm is the program's base name cut to 15 bytes.
  EXPECT_EQ(oom_snapshot(pid, "a-very-long-program-name", log).comm, "a-very-long-pro");
  EXPECT_TRUE(
      kmsg_names_oom_victim("Killed process 12 (a-very-long-pro) total-vm", 12, "a-very-long-pro"));
  EXPECT_FALSE(kmsg_names_oom_victim("Killed process 123 (x) total-vm", 12, "x"));
  fs::remove(log);
}

}  // namespace
}  // namespace grpo::supervise
