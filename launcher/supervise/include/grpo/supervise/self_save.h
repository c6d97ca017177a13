// Trainers that save by themselves before a time they are given (verl: the ESI expiration time,
// verl/utils/checkpoint/checkpoint_manager.py should_save_ckpt_esi), pure. docs/verl.md, "The
// save before the end". With E the job's end and R the reserve (--end-margin, default 180 s):
//   save_by   = E - R             the time exported to the trainer: it saves after each step that
//                                 ends within its own estimate (60 s + its longest step + its
//                                 esi_redundant_time) before it, never after it;
//   decide_at = save_by + min(10 s, R / 4)
//                                 when the supervisor yields: a save begun before save_by has
//                                 announced itself by then (Ray forwards the line within a
//                                 second);
//   deadline  = E - min(30 s, R / 3)
//                                 the latest the supervisor waits for a save in progress before
//                                 it stops the attempt (teardown and Slurm's KillWait after it).
#pragma once

#include <algorithm>

namespace grpo::supervise {

inline constexpr double kDefaultSelfSaveReserveS = 180;

struct SelfSavePlan {
  double save_by = 0;
  double decide_at = 0;
  double deadline = 0;
};

inline SelfSavePlan self_save_plan(double job_end, double reserve_s) {
  const double r = reserve_s > 0 ? reserve_s : kDefaultSelfSaveReserveS;
  SelfSavePlan p;
  p.save_by = job_end - r;
  p.decide_at = p.save_by + std::min(10.0, r / 4);
  p.deadline = job_end - std::min(30.0, r / 3);
  return p;
}

}  // namespace grpo::supervise
