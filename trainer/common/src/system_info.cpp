#include "grpo/trainer/system_info.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>

#include <thread>

namespace grpo::trainer {

BlasInfo detect_blas() {
  BlasInfo info;
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info dl{};
  if (sgemm != nullptr && dladdr(sgemm, &dl) != 0 && dl.dli_fname != nullptr) {
    info.library = dl.dli_fname;
  }
  using ConfigFn = char* (*)();
  using ThreadsFn = int (*)();
  auto config = reinterpret_cast<ConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  auto threads = reinterpret_cast<ThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (config != nullptr) {
    info.vendor = "OpenBLAS";
    info.config = config();
    if (threads != nullptr) info.threads = threads();
  } else if (dlsym(RTLD_DEFAULT, "mkl_get_max_threads") != nullptr) {
    info.vendor = "MKL";
  } else if (dlsym(RTLD_DEFAULT, "bli_info_get_version_str") != nullptr) {
    info.vendor = "BLIS";
  } else if (!info.library.empty()) {
    info.vendor =
        info.library.find("/blas/") != std::string::npos ? "reference BLAS (netlib)" : "unknown";
  } else {
    info.vendor = "none found";
  }
  return info;
}

std::int64_t peak_rss_bytes() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<std::int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace grpo::trainer
