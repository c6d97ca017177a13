#include "run_context.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "grpo/core/telemetry_events.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/stack_report.h"

namespace grpo::trainer {
using core::ErrorKind;

int exit_code_for(const core::Error& e) {
  switch (e.kind) {
    case ErrorKind::kUnavailable:
      return kExitComm;
    case ErrorKind::kIo:
    case ErrorKind::kNoSpace:
      return kExitIo;
    case ErrorKind::kParse:
    case ErrorKind::kInvalidValue:
    case ErrorKind::kWrongType:
    case ErrorKind::kUnknownKey:
    case ErrorKind::kMissingKey:
    case ErrorKind::kNotFound:
    case ErrorKind::kCycle:
      return kExitUsage;
    default:
      return kExitInternal;
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::uint64_t sampling_seed(std::int64_t seed, int rank) {
  return static_cast<std::uint64_t>(seed) * 1000003ULL + static_cast<std::uint64_t>(rank) + 1;
}

RunContext::RunContext(TrainerConfig config, core::ModelSpec model_spec,
                       std::unique_ptr<Communicator> communicator, Telemetry& telemetry,
                       FaultInjector injector)
    : cfg(std::move(config)),
      spec(std::move(model_spec)),
      tel(telemetry),
      faults(std::move(injector)),
      rank(communicator->rank()),
      world(communicator->world_size()) {
  comm = std::make_unique<TimedCommunicator>(std::move(communicator));
}

void RunContext::enter_phase(std::int64_t s, const std::string& name) {
  phase = name;
  StackReporter::note_phase(s, name);  // for the `stack` event (stack_report.h)
  tel.heartbeat(s, name);
}

void RunContext::fire_step_faults(std::int64_t s, const std::string& name, QwenModel& model) {
  if (faults.empty()) return;
  if (before_fatal_fault && faults.ends_process_at(s, name)) before_fatal_fault();
  auto announce = [&](const Fault& f) {
    tel.emit(core::telemetry::event::kFaultInjected,
             {{"fault", f.text}, {"step", s}, {"phase", name}});
    spdlog::warn("fault injection: {} at step {} ({})", f.text, s, name);
  };
  if (auto f = faults.take(FaultKind::kCrash, s, name)) {
    announce(*f);
    std::fflush(nullptr);
    _exit(kExitInjectedCrash);
  }
  if (auto f = faults.take(FaultKind::kSigkill, s, name)) {
    announce(*f);
    std::fflush(nullptr);
    ::raise(SIGKILL);
  }
  if (auto f = faults.take(FaultKind::kSigstop, s, name)) {
    announce(*f);
    std::fflush(nullptr);
    ::raise(SIGSTOP);  // until SIGCONT or SIGKILL (the supervisor's, after the hang timeout)
  }
  if (auto f = faults.take(FaultKind::kAbort, s, name)) {
    announce(*f);
    std::fflush(nullptr);
    std::abort();
  }
  if (auto f = faults.take(FaultKind::kExit, s, name)) {
    announce(*f);
    std::fflush(nullptr);
    throw ExitRequest{f->code, "fault injection: exit"};
  }
  if (auto f = faults.take(FaultKind::kHang, s, name)) {
    announce(*f);
    tel.set_muted(true);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(f->seconds > 0 ? f->seconds : 1e9);
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    tel.set_muted(false);
  }
  if (auto f = faults.take(FaultKind::kHold, s, name)) {
    // A test acts on the run at a known step (kills a node, signals the job) and then releases
    // it: the run cannot finish before the action, however slow the test's reaction.
    announce(*f);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(f->seconds > 0 ? f->seconds : 120.0);
    while (!faults.released() && std::chrono::steady_clock::now() < until) {
      tel.maybe_heartbeat(s, name);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (auto f = faults.take(FaultKind::kOom, s, name)) {
    announce(*f);
    // A real allocation through LibTorch's allocator: 2^42 floats (16 TiB) fails in
    // posix_memalign and surfaces as c10::Error, exactly as a genuine OOM does.
    at::Tensor huge = at::empty({std::int64_t{1} << 42}, at::kFloat);
    huge.fill_(0);
  }
  if (auto f = faults.take(FaultKind::kBadAlloc, s, name)) {
    announce(*f);
    std::vector<char> huge;
    huge.reserve(std::size_t{1} << 46);  // throws std::bad_alloc (or length_error)
  }
  if (auto f = faults.take(FaultKind::kImbalance, s, name)) {
    announce(*f);
    model.set_router_bias_fault(50.0);
  }
}

std::vector<const Example*> take_examples(const RunContext& ctx, TrainState& st,
                                          std::int64_t global_count) {
  std::vector<const Example*> out = ctx.data->train_batch(
      st.data_cursor, global_count, ctx.par.data_rank(), ctx.par.data_ranks());
  st.data_cursor += global_count;
  return out;
}

core::Result<std::map<std::string, double>> MeanAccumulator::reduce(Communicator& comm) const {
  std::vector<double> flat;
  for (const auto& [k, vw] : sums_) {
    flat.push_back(vw.first);
    flat.push_back(vw.second);
  }
  at::Tensor t = at::tensor(flat, at::kDouble);
  if (!flat.empty()) GRPO_TRY_STATUS(comm.allreduce_sum(t));
  std::map<std::string, double> out;
  std::size_t i = 0;
  for (const auto& [k, vw] : sums_) {
    const double v = t[static_cast<std::int64_t>(i)].item<double>();
    const double w = t[static_cast<std::int64_t>(i + 1)].item<double>();
    out[k] = w > 0 ? v / w : 0.0;
    i += 2;
  }
  return out;
}

NamedTensors model_weights(const TrainState& st) {
  NamedTensors out = st.model->named_params();
  if (!st.optim->mixed_precision()) return out;
  std::map<std::string, at::Tensor> masters;
  for (const auto& [name, w] : st.optim->weights()) masters.emplace(name, w);
  for (auto& [name, t] : out) {
    if (auto it = masters.find(name); it != masters.end()) t = it->second;
  }
  return out;
}

}  // namespace grpo::trainer
