// The two Bootstrap implementations, constructed only by Bootstrap::create(). Internal header:
// it must not include <pmix.h> (only pmix_bootstrap.cpp does).
#pragma once

#include <memory>

#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap::detail {

// The env-mode backend over an already validated WorldInfo.
std::unique_ptr<Bootstrap> make_env_bootstrap(WorldInfo world);

// PMIx_Init and the job-level keys. kUnavailable when PMIx_Init fails (PMIx_Finalize is then never
// called), kInternal when a key is missing or has an unexpected type.
core::Result<std::unique_ptr<Bootstrap>> make_pmix_bootstrap();

}  // namespace grpo::bootstrap::detail
