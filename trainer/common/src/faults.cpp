#include "grpo/trainer/faults.h"
#include "grpo/core/text.h"
#include "grpo/io/files.h"

#include <charconv>
#include <cstdlib>

#include "grpo/trainer/checkpoint_store.h"
#include "grpo/trainer/sha256.h"

namespace grpo::trainer {
namespace {

struct KindName {
  FaultKind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {
    {FaultKind::kCrash, "crash"},
    {FaultKind::kSigkill, "sigkill"},
    {FaultKind::kSigstop, "sigstop"},
    {FaultKind::kAbort, "abort"},
    {FaultKind::kHang, "hang"},
    {FaultKind::kOom, "oom"},
    {FaultKind::kBadAlloc, "bad_alloc"},
    {FaultKind::kSlow, "slow"},
    {FaultKind::kCorruptCkpt, "corrupt_ckpt"},
    {FaultKind::kTornCkpt, "torn_ckpt"},
    {FaultKind::kImbalance, "imbalance"},
    {FaultKind::kExit, "exit"},
    {FaultKind::kHold, "hold"},
};

bool to_int(std::string_view s, std::int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

core::Result<Fault> parse_one(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return core::make_error(core::ErrorKind::kInvalidValue, "fault '" + text + "': " + why);
  };
  Fault f;
  f.text = text;
  const auto at = text.find('@');
  const std::string kind(core::trim(std::string_view(text).substr(0, at)));
  bool known = false;
  for (const auto& k : kKinds) {
    if (k.name == kind) {
      f.kind = k.kind;
      known = true;
    }
  }
  if (!known) {
    std::string names;
    for (const auto& k : kKinds) names += (names.empty() ? "" : ", ") + std::string(k.name);
    return bad("unknown kind '" + kind + "' (" + names + ")");
  }
  if (at == std::string::npos) return f;
  std::string_view rest = std::string_view(text).substr(at + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string item(core::trim(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string::npos) return bad("expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    std::int64_t n = 0;
    if (key == "phase") {
      f.phase = value;
      continue;
    }
    if (key == "s") {
      char* end = nullptr;
      f.seconds = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || f.seconds < 0) return bad("bad s=" + value);
      continue;
    }
    if (!to_int(value, n)) return bad(key + " must be an integer, got '" + value + "'");
    if (key == "step") {
      f.step = n;
    } else if (key == "rank") {
      f.rank = static_cast<int>(n);
    } else if (key == "ms") {
      f.ms = n;
    } else if (key == "code") {
      f.code = static_cast<int>(n);
    } else if (key == "repeat") {
      f.repeat = n != 0;
    } else {
      return bad("unknown key '" + key + "' (step, rank, phase, ms, s, code, repeat)");
    }
  }
  if (f.phase != "start" && f.phase != "rollout" && f.phase != "update" &&
      f.phase != "checkpoint" && f.phase != "sft") {
    return bad("phase must be start, rollout, update, sft or checkpoint");
  }
  if (f.kind == FaultKind::kSlow && f.ms <= 0) return bad("slow needs ms=N > 0");
  if ((f.kind == FaultKind::kCorruptCkpt || f.kind == FaultKind::kTornCkpt)) f.phase = "checkpoint";
  return f;
}

}  // namespace

std::string_view to_string(FaultKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

core::Result<std::vector<Fault>> parse_faults(std::string_view spec) {
  std::vector<Fault> out;
  for (const std::string_view part : core::split(spec, ';')) {
    const std::string one(core::trim(part));
    if (one.empty()) continue;
    GRPO_TRY(Fault f, parse_one(one));
    out.push_back(std::move(f));
  }
  return out;
}

core::Result<std::vector<Fault>> parse_fault_specs(const std::vector<std::string>& specs) {
  std::vector<Fault> out;
  for (const std::string& spec : specs) {
    GRPO_TRY(std::vector<Fault> parsed, parse_faults(spec));
    out.insert(out.end(), parsed.begin(), parsed.end());
  }
  return out;
}

std::optional<std::string> ignored_fault_environment() {
  const char* env = std::getenv("GRPO_FAULT");
  if (env == nullptr || *env == '\0') return std::nullopt;
  return std::string("GRPO_FAULT=") + env +
         " is ignored: faults are injected only with --fault (grpo-launch run --fault)";
}

FaultInjector::FaultInjector(std::vector<Fault> faults, int rank, std::filesystem::path marker_dir)
    : faults_(std::move(faults)), rank_(rank), marker_dir_(std::move(marker_dir)) {}

bool FaultInjector::fired(const Fault& f) const {
  if (f.repeat || marker_dir_.empty()) return false;
  std::error_code ec;
  return std::filesystem::exists(
      marker_dir_ / ("fired-" + sha256_hex(f.text).substr(0, 16) + "-rank" + std::to_string(rank_)),
      ec);
}

void FaultInjector::mark(const Fault& f) const {
  if (f.repeat || marker_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(marker_dir_, ec);
  (void)io::write_file_synced(
      marker_dir_ / ("fired-" + sha256_hex(f.text).substr(0, 16) + "-rank" + std::to_string(rank_)),
      f.text + "\n");
}

std::optional<Fault> FaultInjector::take(FaultKind kind, std::int64_t step,
                                         std::string_view phase) {
  for (const Fault& f : faults_) {
    if (f.kind != kind || f.phase != phase) continue;
    if (f.rank && *f.rank != rank_) continue;
    if (f.step >= 0 && f.step != step) continue;
    if (fired(f)) continue;
    mark(f);
    return f;
  }
  return std::nullopt;
}

bool FaultInjector::ends_process_at(std::int64_t step, std::string_view phase) const {
  for (const Fault& f : faults_) {
    switch (f.kind) {
      case FaultKind::kCrash:
      case FaultKind::kSigkill:
      case FaultKind::kSigstop:
      case FaultKind::kAbort:
      case FaultKind::kExit:
      case FaultKind::kOom:
      case FaultKind::kBadAlloc:
        break;
      default:
        continue;
    }
    if (f.phase != phase || (f.rank && *f.rank != rank_) || (f.step >= 0 && f.step != step)) {
      continue;
    }
    if (!fired(f)) return true;
  }
  return false;
}

bool FaultInjector::released() const {
  std::error_code ec;
  return !marker_dir_.empty() && std::filesystem::exists(marker_dir_ / "release", ec);
}

std::int64_t FaultInjector::slow_ms(std::int64_t step) const {
  std::int64_t ms = 0;
  for (const Fault& f : faults_) {
    if (f.kind != FaultKind::kSlow) continue;
    if (f.rank && *f.rank != rank_) continue;
    if (f.step >= 0 && step < f.step) continue;
    ms += f.ms;
  }
  return ms;
}

}  // namespace grpo::trainer
