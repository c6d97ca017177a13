// Runs the grpo-trainer executable as real processes (one per rank, torchrun environment on
// 127.0.0.1 and a free port) and reads back its JSONL events.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace grpo::trainer::testing {

namespace fs = std::filesystem;

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

struct RankResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::vector<nlohmann::json> events;
  std::string stderr_text;

  std::vector<nlohmann::json> of_type(const std::string& type) const {
    std::vector<nlohmann::json> out;
    for (const auto& e : events) {
      if (e.value("type", "") == type) out.push_back(e);
    }
    return out;
  }
  std::string final_sha() const {
    for (const auto& e : events) {
      if (e.value("type", "") == "done") return e.value("weights_sha256", "");
    }
    return {};
  }
};

// Small, fast settings: 2 SFT + 4 GRPO steps on tiny batches, one thread.
inline std::vector<std::string> fast_args(const std::string& model) {
  return {"--model",     model,
          "--set",       "trainer.sft_warmup_steps=2",
          "--set",       "trainer.total_training_steps=4",
          "--set",       "trainer.sft_batch_size=8",
          "--set",       "data.train_batch_size=4",
          "--set",       "actor_rollout_ref.rollout.n=4",
          "--set",       "actor_rollout_ref.actor.ppo_mini_batch_size=2",
          "--set",       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
          "--set",       "actor_rollout_ref.actor.ppo_epochs=2",
          "--set",       "data.val_size=8",
          "--set",       "data.train_size=256",
          "--set",       "trainer.test_freq=-1",
          "--set",       "trainer.threads=1",
          "--log-level", "warn"};
}

// Starts `world` ranks of grpo-trainer with `args` (plus --run-dir); returns their pids. Their
// output goes to run_dir; `rank_run_dirs`, when given, is each rank's own --run-dir (a run
// directory not shared by the ranks).
inline std::vector<pid_t> start_ranks(int world, const fs::path& run_dir,
                                      std::vector<std::string> args,
                                      const std::map<std::string, std::string>& env = {},
                                      const std::vector<fs::path>& rank_run_dirs = {}) {
  const int port = free_port();
  fs::create_directories(run_dir);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const fs::path out = run_dir / ("rank" + std::to_string(r) + ".stdout");
    const fs::path err = run_dir / ("rank" + std::to_string(r) + ".stderr");
    std::vector<std::string> rank_args = args;
    rank_args.push_back("--run-dir");
    rank_args.push_back(
        (rank_run_dirs.empty() ? run_dir : rank_run_dirs.at(static_cast<std::size_t>(r))).string());
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int ofd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int efd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(ofd, 1);
      ::dup2(efd, 2);
      if (world > 1) {
        ::setenv("RANK", std::to_string(r).c_str(), 1);
        ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
        ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
        ::setenv("LOCAL_WORLD_SIZE", std::to_string(world).c_str(), 1);
        ::setenv("MASTER_ADDR", "127.0.0.1", 1);
        ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      } else {
        for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                              "MASTER_PORT", "PMIX_NAMESPACE"}) {
          ::unsetenv(v);
        }
      }
      ::unsetenv("GRPO_FAULT");
      ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      std::string exe = GRPO_TRAINER_EXE;
      argv.push_back(exe.data());
      for (auto& a : rank_args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  return pids;
}

// Waits for the ranks started by start_ranks and reads their output.
inline std::vector<RankResult> wait_ranks(const std::vector<pid_t>& pids, const fs::path& run_dir) {
  const int world = static_cast<int>(pids.size());
  std::vector<RankResult> results(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    int status = 0;
    ::waitpid(pids[static_cast<std::size_t>(r)], &status, 0);
    RankResult& res = results[static_cast<std::size_t>(r)];
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(run_dir / ("rank" + std::to_string(r) + ".stdout"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      res.events.push_back(nlohmann::json::parse(line, nullptr, false));
    }
    std::ifstream e(run_dir / ("rank" + std::to_string(r) + ".stderr"));
    res.stderr_text.assign(std::istreambuf_iterator<char>(e), {});
  }
  return results;
}

inline std::vector<std::string> with(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Every rank exited with `code` (gtest expectations; each failure shows the rank's stderr).
inline void expect_all_exit(const std::vector<RankResult>& rs, int code) {
  for (std::size_t r = 0; r < rs.size(); ++r) {
    EXPECT_EQ(rs[r].exit_code, code) << "rank " << r << ":\n" << rs[r].stderr_text;
  }
}

// Runs `world` ranks of grpo-trainer with `args` (plus --run-dir) and waits for all of them.
inline std::vector<RankResult> run_ranks(int world, const fs::path& run_dir,
                                         std::vector<std::string> args,
                                         const std::map<std::string, std::string>& env = {}) {
  return wait_ranks(start_ranks(world, run_dir, std::move(args), env), run_dir);
}

// Waits (up to timeout_s) until rank `rank`'s stdout contains `needle`.
inline bool wait_for_output(const fs::path& run_dir, int rank, const std::string& needle,
                            double timeout_s) {
  for (int i = 0; i < static_cast<int>(timeout_s * 20); ++i) {
    std::ifstream in(run_dir / ("rank" + std::to_string(rank) + ".stdout"));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    if (text.find(needle) != std::string::npos) return true;
    ::usleep(50000);
  }
  return false;
}

inline fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("grpo-trainer-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  return d;
}

}  // namespace grpo::trainer::testing
