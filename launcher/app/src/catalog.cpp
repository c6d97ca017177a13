#include "grpo/app/catalog.h"

namespace grpo::app {

io::DirectorySourceProvider catalog(const std::vector<std::string>& profile_dirs) {
  return io::DirectorySourceProvider(
      io::profile_search_path(io::search_inputs_from_environment(profile_dirs)));
}

}  // namespace grpo::app
