// Filesystem helpers with the project's error vocabulary. Writes are atomic: a reader sees the
// old file or the new one, never a half-written one.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::io {

// The project's error for a failed system call on `path`: kNoSpace for ENOSPC/EDQUOT (a full
// disk or quota: the supervisor gives up instead of restarting), kIo otherwise; the message is
// "<what> <path>: <strerror(err)>".
core::Error errno_error(const std::string& what, const std::filesystem::path& path, int err);

// Writes `content` to `path` (created with `mode`, or truncated; with `exclusive`, refused if it
// exists) and fsyncs it. Not atomic by itself: the caller renames or commits. Errors: kIo,
// kNoSpace.
core::Status write_file_synced(const std::filesystem::path& path, std::string_view content,
                               unsigned mode = 0644, bool exclusive = false);

// fsyncs directory `dir` (after creating or renaming entries in it). Errors: kIo.
core::Status sync_dir(const std::filesystem::path& dir);

// Reads a whole file (refuses files over `max_bytes`). Errors: kNotFound, kIo.
core::Result<std::string> read_file(const std::filesystem::path& path,
                                    std::size_t max_bytes = 16u << 20);

// Writes `content` to a temporary file in the same directory, fsyncs it, renames it over `path`
// and fsyncs the directory. `mode` is applied before the rename. Errors: kIo.
core::Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               unsigned mode = 0644);

// Renames `from` to `to` unless `to` exists (renameat2 RENAME_NOREPLACE: atomic, never replaces
// anything; on file systems without it, a directory claims `to` with an exclusive mkdir first).
// Errors: kIo, "already exists: <to>" when `to` exists.
core::Status rename_no_replace(const std::filesystem::path& from, const std::filesystem::path& to);

// Puts directory `from` in place of directory `to`, which exists: one atomic swap (renameat2
// RENAME_EXCHANGE), after which `from` names the old directory; `to` is never missing. On file
// systems without the swap, `to` is renamed aside to `from` + ".old" and `from` into place.
// Returns the path that now holds the old directory (for the caller to remove). Errors: kIo.
core::Result<std::filesystem::path> exchange_dirs(const std::filesystem::path& from,
                                                  const std::filesystem::path& to);

// Creates directory `path` (mode 0700) holding `files` (name -> content) all at once: the files
// are written into a temporary sibling directory, fsync'd, and the directory is renamed into
// place without replacing anything (rename_no_replace). Fails with kIo "run directory already
// exists: <path>" if `path` exists, also when another process created it while this one wrote
// (two launchers racing for one name: exactly one wins). `executable` names files to mark 0700.
core::Status create_dir_atomic(const std::filesystem::path& path,
                               const std::map<std::string, std::string>& files,
                               const std::vector<std::string>& executable = {});

// The name of a run directory's rendezvous secret: 64 hex digits (32 random bytes), 0600. The
// launcher writes it with the run directory; grpo-trainer reads it from --run-dir, and its
// ranks prove it to each other at the rendezvous (docs/security.md).
inline constexpr const char* kRendezvousSecretFile = "rendezvous.secret";

// A fresh secret: 32 bytes from getrandom(2), as 64 lowercase hex digits.
std::string new_secret();

// The secret held by `path`: its first line. Refused when anybody but the owner may read or
// write the file (mode & 077), since then it is no secret. Errors: kNotFound, kIo,
// kInvalidValue (the mode, or not 64 hex digits).
core::Result<std::string> read_secret_file(const std::filesystem::path& path);

}  // namespace grpo::io
