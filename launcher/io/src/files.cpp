#include "grpo/io/files.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc >= 2.28, _GNU_SOURCE)
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace grpo::io {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

std::string random_suffix() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> dist(0, 0xffffff);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06x", dist(rd));
  return buf;
}

// errno as the failed call left it.
core::Error last_error(const std::string& what, const fs::path& path) {
  return errno_error(what, path, errno);
}

}  // namespace

core::Error errno_error(const std::string& what, const fs::path& path, int err) {
  return make_error(err == ENOSPC || err == EDQUOT ? ErrorKind::kNoSpace : ErrorKind::kIo,
                    what + " " + path.string() + ": " + std::strerror(err));
}

core::Status write_file_synced(const fs::path& path, std::string_view content, unsigned mode,
                               bool exclusive) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) return last_error("cannot create", path);
  // A file this call created and could not finish is removed: nothing half-written stays behind.
  const auto failed = [&](const char* what) {
    auto e = last_error(what, path);
    ::close(fd);
    if (exclusive) ::unlink(path.c_str());
    return e;
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return failed("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) return failed("cannot sync");
  if (::close(fd) != 0) {
    auto e = last_error("cannot close", path);
    if (exclusive) ::unlink(path.c_str());
    return e;
  }
  return core::ok_status();
}

core::Status sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return last_error("cannot open directory", dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return errno_error("cannot sync directory", dir, err);
  return core::ok_status();
}

core::Result<std::string> read_file(const fs::path& path, std::size_t max_bytes) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(ErrorKind::kNotFound, "no such file: " + path.string());
  if (fs::is_directory(path, ec))
    return make_error(ErrorKind::kIo, path.string() + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return last_error("cannot read", path);
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes) {
      return make_error(ErrorKind::kIo,
                        path.string() + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  if (in.bad()) return last_error("cannot read", path);
  return out;
}

core::Status write_file_atomic(const fs::path& path, std::string_view content, unsigned mode) {
  const fs::path dir = path.parent_path();
  const fs::path tmp = (dir.empty() ? fs::path(".") : dir) /
                       ("." + path.filename().string() + ".tmp-" + random_suffix());
  // The temporary file is 0600 until it is whole: only the rename gives it `mode` (0700 for a
  // script) under its real name; a failed write removes it (write_file_synced, exclusive).
  GRPO_TRY_STATUS(write_file_synced(tmp, content, 0600, /*exclusive=*/true));
  if (::chmod(tmp.c_str(), mode) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    auto e = last_error("cannot rename into", path);
    ::unlink(tmp.c_str());
    return e;
  }
  return sync_dir(dir.empty() ? fs::path(".") : dir);
}

namespace {

// rename(from, to) unless `to` exists: 0, or the errno (EEXIST: `to` exists). File systems
// without RENAME_NOREPLACE (EINVAL, ENOSYS): a directory claims the name with an exclusive mkdir
// and is renamed onto that empty directory of ours (rename may replace an empty directory).
int rename_noreplace_errno(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  const int err = errno;
  std::error_code ec;
  if ((err != EINVAL && err != ENOSYS) || !fs::is_directory(from, ec)) return err;
  if (::mkdir(to.c_str(), 0700) != 0) return errno;
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int e = errno;
    ::rmdir(to.c_str());
    return e;
  }
  return 0;
}

}  // namespace

core::Result<fs::path> exchange_dirs(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) return from;
  const int err = errno;
  if (err != EINVAL && err != ENOSYS) {
    return make_error(ErrorKind::kIo, "cannot swap " + from.string() + " and " + to.string() +
                                          ": " + std::strerror(err));
  }
  const fs::path old = from.string() + ".old";
  std::error_code ec;
  fs::remove_all(old, ec);
  if (::rename(to.c_str(), old.c_str()) != 0) return last_error("cannot rename aside", to);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    auto e = last_error("cannot rename into", to);
    ::rename(old.c_str(), to.c_str());  // put the old one back
    return e;
  }
  return old;
}

core::Status rename_no_replace(const fs::path& from, const fs::path& to) {
  const int err = rename_noreplace_errno(from, to);
  if (err == 0) return core::ok_status();
  if (err == EEXIST) return make_error(ErrorKind::kIo, "already exists: " + to.string());
  return make_error(ErrorKind::kIo, "cannot rename " + from.string() + " to " + to.string() + ": " +
                                        std::strerror(err));
}

core::Status create_dir_atomic(const fs::path& path,
                               const std::map<std::string, std::string>& files,
                               const std::vector<std::string>& executable) {
  std::error_code ec;
  // A cheap early answer; rename_no_replace below is what guarantees that a racing launcher's
  // run directory is never replaced.
  if (fs::exists(path, ec))
    return make_error(ErrorKind::kIo, "run directory already exists: " + path.string());
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  fs::create_directories(parent, ec);
  if (ec)
    return make_error(ErrorKind::kIo, "cannot create " + parent.string() + ": " + ec.message());
  const fs::path tmp = parent / ("." + path.filename().string() + ".tmp-" + random_suffix());
  if (::mkdir(tmp.c_str(), 0700) != 0) return last_error("cannot create", tmp);
  auto cleanup = [&] { fs::remove_all(tmp, ec); };
  for (const auto& [name, content] : files) {
    if (name.find('/') != std::string::npos || name.empty() || name[0] == '.') {
      cleanup();
      return make_error(ErrorKind::kInternal, "bad file name for run directory: " + name);
    }
    const bool exec = std::find(executable.begin(), executable.end(), name) != executable.end();
    auto st = write_file_synced(tmp / name, content, exec ? 0700 : 0600, /*exclusive=*/true);
    if (!st.ok()) {
      cleanup();
      return st;
    }
  }
  auto st = sync_dir(tmp);
  if (!st.ok()) {
    cleanup();
    return st;
  }
  if (const int err = rename_noreplace_errno(tmp, path); err != 0) {
    cleanup();
    if (err == EEXIST) {
      return make_error(ErrorKind::kIo, "run directory already exists: " + path.string());
    }
    return make_error(ErrorKind::kIo,
                      "cannot rename into " + path.string() + ": " + std::strerror(err));
  }
  return sync_dir(parent);
}

std::string new_secret() {
  unsigned char bytes[32];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // the kernel's random source is gone: nothing safe to do
    got += static_cast<std::size_t>(n);
  }
  std::string hex;
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

core::Result<std::string> read_secret_file(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return make_error(ErrorKind::kNotFound, "no such file: " + path.string());
    return last_error("cannot read", path);
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(ErrorKind::kInvalidValue,
                      path.string() + ": mode " + mode +
                          " lets others read the run's secret (chmod 600 it, or start a new run)");
  }
  GRPO_TRY(std::string text, read_file(path, 4096));
  const std::string secret = text.substr(0, text.find('\n'));
  if (secret.size() != 64 || secret.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return make_error(ErrorKind::kInvalidValue, path.string() + ": not a secret (64 hex digits)");
  }
  return secret;
}

}  // namespace grpo::io
