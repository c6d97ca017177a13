#include "grpo/io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

namespace grpo::io {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

core::Error errno_error(const std::string& what, const fs::path& path) {
  return make_error(ErrorKind::kIo, what + " " + path.string() + ": " + std::strerror(errno));
}

std::string random_suffix() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> dist(0, 0xffffff);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06x", dist(rd));
  return buf;
}

core::Status write_and_sync(const fs::path& path, std::string_view content, unsigned mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return errno_error("cannot create", path);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto e = errno_error("cannot write", path);
      ::close(fd);
      return e;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) {
    auto e = errno_error("cannot sync", path);
    ::close(fd);
    return e;
  }
  if (::close(fd) != 0) return errno_error("cannot close", path);
  return core::ok_status();
}

core::Status sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open directory", dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return errno_error("cannot sync directory", dir);
  return core::ok_status();
}

}  // namespace

core::Result<std::string> read_file(const fs::path& path, std::size_t max_bytes) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(ErrorKind::kNotFound, "no such file: " + path.string());
  if (fs::is_directory(path, ec))
    return make_error(ErrorKind::kIo, path.string() + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error("cannot read", path);
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes) {
      return make_error(ErrorKind::kIo,
                        path.string() + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  if (in.bad()) return errno_error("cannot read", path);
  return out;
}

core::Status write_file_atomic(const fs::path& path, std::string_view content, unsigned mode) {
  const fs::path dir = path.parent_path();
  const fs::path tmp = (dir.empty() ? fs::path(".") : dir) /
                       ("." + path.filename().string() + ".tmp-" + random_suffix());
  GRPO_TRY_STATUS(write_and_sync(tmp, content, mode));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto e = errno_error("cannot rename into", path);
    ::unlink(tmp.c_str());
    return e;
  }
  return sync_dir(dir.empty() ? fs::path(".") : dir);
}

core::Status create_dir_atomic(const fs::path& path,
                               const std::map<std::string, std::string>& files,
                               const std::vector<std::string>& executable) {
  std::error_code ec;
  if (fs::exists(path, ec))
    return make_error(ErrorKind::kIo, "run directory already exists: " + path.string());
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  fs::create_directories(parent, ec);
  if (ec)
    return make_error(ErrorKind::kIo, "cannot create " + parent.string() + ": " + ec.message());
  const fs::path tmp = parent / ("." + path.filename().string() + ".tmp-" + random_suffix());
  if (::mkdir(tmp.c_str(), 0700) != 0) return errno_error("cannot create", tmp);
  auto cleanup = [&] { fs::remove_all(tmp, ec); };
  for (const auto& [name, content] : files) {
    if (name.find('/') != std::string::npos || name.empty() || name[0] == '.') {
      cleanup();
      return make_error(ErrorKind::kInternal, "bad file name for run directory: " + name);
    }
    const bool exec = std::find(executable.begin(), executable.end(), name) != executable.end();
    auto st = write_and_sync(tmp / name, content, exec ? 0700 : 0600);
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
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto e = errno_error("cannot rename into", path);
    cleanup();
    return e;
  }
  return sync_dir(parent);
}

}  // namespace grpo::io
