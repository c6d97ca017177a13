#include "grpo/trainer/stack_report.h"
#include "grpo/core/json_text.h"

#include <cxxabi.h>
#include <dirent.h>
#include <elfutils/libdwfl.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "grpo/core/telemetry_events.h"
#include "grpo/trainer/telemetry.h"

namespace grpo::trainer {

static_assert(kStackRequestSignal == SIGUSR1, "the stack request is SIGUSR1");

namespace {

using nlohmann::json;

// The per-thread capture signal: a real-time signal nothing else in the process uses.
int capture_signal() {
  return SIGRTMIN + 4;
}

enum SlotState : int { kIdle = 0, kRequested = 1, kWriting = 2, kDone = 3 };

struct Slot {
  std::atomic<pid_t> tid{0};
  std::atomic<int> state{kIdle};
  int depth = 0;
  std::array<void*, kMaxFrames + 4> frames{};
};

// What the event says besides the stacks (set_world, note_phase); not used in signal context.
struct Context {
  std::mutex mu;
  int rank = 0;
  int world_size = 1;
  std::int64_t step = 0;
  std::string phase = "setup";
};
Context& context() {
  static Context c;
  return c;
}

// Preallocated: the capture handler only touches these.
std::array<Slot, kMaxThreads> g_slots;
std::atomic<int> g_request_fd{-1};

pid_t this_tid() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

extern "C" void on_stack_request(int) {
  const int saved = errno;
  const int fd = g_request_fd.load();
  if (fd >= 0) {
    const char c = 'x';
    (void)!::write(fd, &c, 1);
  }
  errno = saved;
}

extern "C" void on_capture(int) {
  const int saved = errno;
  const pid_t me = this_tid();
  for (Slot& s : g_slots) {
    if (s.tid.load() != me) continue;
    int expected = kRequested;
    if (!s.state.compare_exchange_strong(expected, kWriting)) break;
    s.depth = ::backtrace(s.frames.data(), static_cast<int>(s.frames.size()));
    s.state.store(kDone);
    break;
  }
  errno = saved;
}

std::string cut(std::string s) {
  if (s.size() > kMaxNameBytes) s = s.substr(0, kMaxNameBytes - 3) + "...";
  return s;
}

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && out != nullptr ? out : name;
  std::free(out);
  return s;
}

std::string thread_name(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

std::vector<pid_t> list_threads() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
    if (tid > 0) out.push_back(tid);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Symbolizes addresses of this process with libdw (the modules as mapped now).
class Symbolizer {
 public:
  Symbolizer() {
    callbacks_.find_elf = dwfl_linux_proc_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.debuginfo_path = &debuginfo_path_;
    dwfl_ = dwfl_begin(&callbacks_);
    if (dwfl_ == nullptr) return;
    dwfl_report_begin(dwfl_);
    if (dwfl_linux_proc_report(dwfl_, ::getpid()) != 0 ||
        dwfl_report_end(dwfl_, nullptr, nullptr) != 0) {
      dwfl_end(dwfl_);
      dwfl_ = nullptr;
    }
  }
  ~Symbolizer() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  json frame(std::uintptr_t pc) const {
    json f = {{"function", ""}};
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(pc));
    f["address"] = hex;
    if (dwfl_ == nullptr) return f;
    const auto addr = static_cast<Dwarf_Addr>(pc);
    Dwfl_Module* m = dwfl_addrmodule(dwfl_, addr);
    if (m == nullptr) return f;
    const char* module =
        dwfl_module_info(m, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (module != nullptr) {
      const char* slash = std::strrchr(module, '/');
      f["module"] = slash != nullptr ? slash + 1 : module;
    }
    f["function"] = cut(demangle(dwfl_module_addrname(m, addr)));
    if (Dwfl_Line* line = dwfl_module_getsrc(m, addr)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        f["file"] = cut(file);
        f["line"] = lineno;
      }
    }
    return f;
  }

 private:
  Dwfl_Callbacks callbacks_{};
  char* debuginfo_path_ = nullptr;
  Dwfl* dwfl_ = nullptr;
};

// The frames of one captured slot: the handlers and the signal trampolines dropped; the
// interrupted instruction exact, return addresses moved back into their call instruction.
json frames_of(const Slot& s, const Symbolizer& sym, bool& truncated) {
  json out = json::array();
  std::vector<json> all;
  for (int i = 0; i < s.depth; ++i) {
    all.push_back(
        sym.frame(reinterpret_cast<std::uintptr_t>(s.frames[static_cast<std::size_t>(i)])));
  }
  // Frame 0 is on_capture; the kernel's return into __restore_rt follows it. The thread that took
  // the stack request may still be in on_stack_request (in its write(), under another trampoline)
  // below that: start after the last handler or trampoline frame near the top, so that every
  // thread shows where it was, whichever thread the request reached.
  std::size_t first = all.empty() ? 0 : 1;
  for (std::size_t i = 0; i < std::min<std::size_t>(all.size(), 8); ++i) {
    const auto f = all[i].value("function", std::string());
    if (f == "on_capture" || f == "on_stack_request" || f == "__restore_rt") first = i + 1;
  }
  for (std::size_t i = first; i < all.size(); ++i) {
    if (static_cast<int>(out.size()) == kMaxFrames) {
      truncated = true;
      break;
    }
    if (i > first) {
      // a return address: symbolize the call instruction before it
      const auto pc = reinterpret_cast<std::uintptr_t>(s.frames[i]);
      out.push_back(sym.frame(pc - 1));
      out.back()["address"] = all[i]["address"];
    } else {
      out.push_back(all[i]);
    }
  }
  return out;
}

}  // namespace

void StackReporter::set_world(int rank, int world_size) {
  Context& c = context();
  std::lock_guard lock(c.mu);
  c.rank = rank;
  c.world_size = world_size;
}

void StackReporter::note_phase(std::int64_t step, std::string_view phase) {
  Context& c = context();
  std::lock_guard lock(c.mu);
  c.step = step;
  c.phase = std::string(phase);
}

json StackReporter::capture() {
  using clock = std::chrono::steady_clock;
  const pid_t self = this_tid();
  const pid_t pid = ::getpid();
  std::vector<pid_t> tids;
  for (pid_t t : list_threads()) {
    if (t != self) tids.push_back(t);
  }
  const int listed = static_cast<int>(tids.size());
  if (tids.size() > g_slots.size()) tids.resize(g_slots.size());
  for (std::size_t i = 0; i < tids.size(); ++i) {
    g_slots[i].depth = 0;
    g_slots[i].tid.store(tids[i]);
    g_slots[i].state.store(kRequested);
    if (::syscall(SYS_tgkill, pid, tids[i], capture_signal()) != 0) {
      g_slots[i].state.store(kIdle);  // the thread ended meanwhile
    }
  }
  const auto deadline = clock::now() + std::chrono::duration<double>(kCaptureWaitS);
  while (clock::now() < deadline) {
    bool pending = false;
    for (std::size_t i = 0; i < tids.size(); ++i) {
      const int st = g_slots[i].state.load();
      pending = pending || st == kRequested || st == kWriting;
    }
    if (!pending) break;
    ::usleep(1000);
  }
  // Slots whose thread did not answer are withdrawn (a late handler finds no slot to write).
  int missing = listed - static_cast<int>(tids.size());
  std::vector<bool> done(tids.size(), false);
  for (std::size_t i = 0; i < tids.size(); ++i) {
    int expected = kRequested;
    if (g_slots[i].state.compare_exchange_strong(expected, kIdle)) {
      ++missing;
      continue;
    }
    while (g_slots[i].state.load() == kWriting) ::usleep(100);
    done[i] = g_slots[i].state.load() == kDone;
    if (!done[i]) ++missing;
  }
  const Symbolizer sym;
  json threads = json::array();
  // The main thread (tid == pid) first.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < tids.size(); ++i) {
      if (!done[i] || (pass == 0) != (tids[i] == pid)) continue;
      bool truncated = false;
      json t = {{"tid", tids[i]}, {"name", thread_name(tids[i])}, {"main", tids[i] == pid}};
      t["frames"] = frames_of(g_slots[i], sym, truncated);
      t["truncated"] = truncated;
      threads.push_back(std::move(t));
    }
  }
  for (std::size_t i = 0; i < tids.size(); ++i) {
    g_slots[i].tid.store(0);
    g_slots[i].state.store(kIdle);
  }
  std::int64_t step = 0;
  std::string phase;
  {
    Context& c = context();
    std::lock_guard lock(c.mu);
    step = c.step;
    phase = c.phase;
  }
  return json{{"step", step},
              {"phase", phase},
              {"threads", threads},
              {"missing_threads", missing},
              {"threads_total", listed},
              {"source", "signal"}};
}

core::Result<std::unique_ptr<StackReporter>> StackReporter::start(std::FILE* out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return core::make_error(core::ErrorKind::kIo,
                            std::string("stack reporter: pipe: ") + std::strerror(errno));
  }
  // glibc's backtrace loads libgcc_s on first use: not in a signal handler.
  void* warm[2];
  (void)::backtrace(warm, 2);
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_capture;
  if (::sigaction(capture_signal(), &sa, nullptr) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return core::make_error(core::ErrorKind::kIo, "stack reporter: sigaction failed");
  }
  g_request_fd.store(fds[1]);
  sa.sa_handler = on_stack_request;
  ::sigaction(SIGUSR1, &sa, nullptr);
  return std::unique_ptr<StackReporter>(new StackReporter(out, fds[0], fds[1]));
}

StackReporter::StackReporter(std::FILE* out, int read_fd, int write_fd)
    : out_(out), read_fd_(read_fd), write_fd_(write_fd) {
  thread_ = std::thread([this] { serve(); });
}

StackReporter::~StackReporter() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = SIG_IGN;
  ::sigaction(SIGUSR1, &sa, nullptr);
  g_request_fd.store(-1);
  const char q = 'q';
  (void)!::write(write_fd_, &q, 1);
  if (thread_.joinable()) thread_.join();
  ::close(read_fd_);
  ::close(write_fd_);
}

void StackReporter::serve() {
  ::pthread_setname_np(::pthread_self(), "grpo-stacks");
  // Only the threads that answer requests take the capture signal; this one never needs to.
  while (true) {
    pollfd p{read_fd_, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return;
    char buf[64];
    const ssize_t n = ::read(read_fd_, buf, sizeof buf);
    if (n <= 0) continue;
    bool quit = false, request = false;
    for (ssize_t i = 0; i < n; ++i) {
      quit = quit || buf[i] == 'q';
      request = request || buf[i] == 'x';
    }
    if (quit) return;
    if (!request) continue;
    // Telemetry's envelope (docs/telemetry.md); the whole line in one fwrite.
    json ev = {{"schema", kTelemetrySchemaVersion},
               {"type", core::telemetry::event::kStack},
               {"time", unix_time_now()}};
    {
      Context& c = context();
      std::lock_guard lock(c.mu);
      ev["rank"] = c.rank;
      ev["world_size"] = c.world_size;
    }
    ev["pid"] = static_cast<long>(::getpid());
    const json fields = capture();
    for (const auto& [k, v] : fields.items()) ev[k] = v;
    const std::string line = core::json_text(ev) + "\n";
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }
}

}  // namespace grpo::trainer
