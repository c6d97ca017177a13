// Peak bytes LibTorch's CPU allocator hands out over a stretch of code on this thread, for
// comparing the activations a micro batch keeps with the planner's estimate (bench/layouts).
// While an AllocationPeak is alive, c10's memory reporting is on for this thread (the hook its
// profiler uses: the CPU allocator then reports every allocation and free with its running total);
// peak() is the highest total reached, relative to the total when the stretch began.
// Diagnostics only (trainer.measure_activation_memory): every allocation takes a lock, and c10
// logs a warning for every 1,000th free of a block allocated before the stretch.
#pragma once

#include <cstdint>
#include <memory>

namespace grpo::trainer {

class AllocationPeak {
 public:
  AllocationPeak();
  ~AllocationPeak();
  AllocationPeak(const AllocationPeak&) = delete;
  AllocationPeak& operator=(const AllocationPeak&) = delete;
  // Highest (allocated - allocated at the start) seen so far, in bytes; 0 before any allocation.
  std::int64_t peak() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grpo::trainer
