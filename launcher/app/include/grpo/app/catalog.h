// Where the use cases find cluster profiles and models by name (docs/profile-format.md).
#pragma once

#include <string>
#include <vector>

#include "grpo/io/profile_store.h"

namespace grpo::app {

// The catalog of cluster profiles and models: `profile_dirs` (--profile-dir), then the profile
// search path (io::profile_search_path: $GRPO_LAUNCH_PROFILE_PATH, the user's, the installed).
io::DirectorySourceProvider catalog(const std::vector<std::string>& profile_dirs);

}  // namespace grpo::app
