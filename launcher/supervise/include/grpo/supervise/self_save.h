// Trainers that save by themselves before a time they are given (verl: the ESI expiration time,
// verl/utils/checkpoint/checkpoint_manager.py should_save_ckpt_esi), pure. docs/verl.md, "The
// save before the end". With E the job's end and R the reserve (--end-margin, default 180 s):
//   save_by   = E - R             the time exported to the trainer, and when the supervisor
//                                 yields: the trainer saves after each step that ends within its
//                                 own estimate (60 s + its longest step + esi_redundant_time)
//                                 before it, never after it. At save_by the supervisor stops the
//                                 trainer at once unless a save is in progress or the newest
//                                 checkpoint is older than the newest step line (a save begun
//                                 just before save_by whose line is still on its way);
//   grace_end = save_by + min(10 s, R / 4)
//                                 how long it waits for such a save to announce itself (Ray
//                                 forwards a line within a second);
//   deadline  = E - min(30 s, R / 3)
//                                 the latest it waits for a save in progress before it stops the
//                                 attempt (teardown and Slurm's KillWait after it).
#pragma once

#include <algorithm>
#include <optional>

namespace grpo::supervise {

inline constexpr double kDefaultSelfSaveReserveS = 180;

struct SelfSavePlan {
  double save_by = 0;
  double grace_end = 0;
  double deadline = 0;
};

inline SelfSavePlan self_save_plan(double job_end, double reserve_s) {
  const double r = reserve_s > 0 ? reserve_s : kDefaultSelfSaveReserveS;
  SelfSavePlan p;
  p.save_by = job_end - r;
  p.grace_end = p.save_by + std::min(10.0, r / 4);
  p.deadline = job_end - std::min(30.0, r / 3);
  return p;
}

// While the supervisor yields (from save_by on): wait for a save in progress until the deadline,
// or within the grace for a save of the newest step whose line is late (`newest_step_unsaved`:
// the newest checkpoint is older than the newest step line); else stop. Without a plan (the end
// is not known: a TERM or a preemption) only a save in progress is waited for, bounded by the
// caller's checkpoint timeout.
enum class SelfSaveWait { kWait, kStop, kPastDeadline };

inline SelfSaveWait self_save_wait(const std::optional<SelfSavePlan>& plan, double wall,
                                   bool saving, bool newest_step_unsaved) {
  if (plan && wall >= plan->deadline) {
    return saving || newest_step_unsaved ? SelfSaveWait::kPastDeadline : SelfSaveWait::kStop;
  }
  if (saving) return SelfSaveWait::kWait;
  if (newest_step_unsaved && plan && wall < plan->grace_end) return SelfSaveWait::kWait;
  return SelfSaveWait::kStop;
}

}  // namespace grpo::supervise
