// The "go" a standby rank waits for (docs/supervisor.md, standby ranks): grpo-launch's local
// runner starts `grpo-trainer --standby ARGS` ahead of need and, when the attempt starts, writes
// the rank's environment to its stdin. The one definition of that message, for both sides
// (launcher/supervise/src/local_runner.cpp writes it, trainer/src/main.cpp reads it).
//
// Format: each KEY=VALUE entry ended by a NUL byte, then an empty entry (one more NUL). A value
// may hold any byte but NUL, newlines included (an environment value cannot hold a NUL).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grpo::core {

std::string encode_standby_go(const std::map<std::string, std::string>& env);

// The entries of a message read so far; nullopt until its closing empty entry has arrived.
// Entries without '=' or with an empty name are skipped.
std::optional<std::vector<std::pair<std::string, std::string>>> decode_standby_go(
    std::string_view text);

}  // namespace grpo::core
