#include "allocation_peak.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <optional>

namespace grpo::trainer {

// Not in an anonymous namespace: AllocationPeak::Impl holds one.
class PeakReporter final : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void*, std::int64_t alloc_size, std::int64_t total_allocated, std::int64_t,
                         c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    // The running total also counts blocks of earlier stretches that are still alive: measure
    // from the total before the first allocation seen here.
    if (!base_) base_ = total_allocated - alloc_size;
    peak_ = std::max(peak_, total_allocated - *base_);
  }
  bool memoryProfilingEnabled() const override { return true; }
  std::int64_t peak() const { return peak_; }

 private:
  std::optional<std::int64_t> base_;
  std::int64_t peak_ = 0;
};

struct AllocationPeak::Impl {
  std::shared_ptr<PeakReporter> reporter = std::make_shared<PeakReporter>();
  c10::DebugInfoGuard guard{c10::DebugInfoKind::PROFILER_STATE, reporter};
};

AllocationPeak::AllocationPeak() : impl_(std::make_unique<Impl>()) {}
AllocationPeak::~AllocationPeak() = default;

std::int64_t AllocationPeak::peak() const {
  return impl_->reporter->peak();
}

}  // namespace grpo::trainer
