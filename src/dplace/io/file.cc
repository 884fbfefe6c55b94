#include "dplace/io/file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

namespace dplace {
namespace {

std::string Reason(int error) { return std::strerror(error); }

// Whether `path` exists and is something other than a regular file (a
// device, a pipe): such a file is written in place and not locked.
bool IsSpecialFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
         !S_ISDIR(st.st_mode);
}

// The folder of `path`, for fsync after a rename.
std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all of `contents` to `fd`; returns 0 or the errno of the failure.
int WriteAll(int fd, const std::string& contents) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

Status CannotWrite(const std::string& path, int error) {
  return InvalidArgumentError(path + ": cannot write: " + Reason(error));
}

// `contents` into the existing special file `path` (see WriteTextFile).
Status WriteInPlace(const std::string& path, const std::string& contents) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return CannotWrite(path, errno);
  int error = WriteAll(fd, contents);
  if (close(fd) != 0 && error == 0) error = errno;
  return error == 0 ? Status::Ok() : CannotWrite(path, error);
}

constexpr char kChecksumPrefix[] = "\ndplace-crc32 ";
constexpr size_t kChecksumLineSize = sizeof(kChecksumPrefix) - 1 + 8 + 1;

uint32_t Crc32(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes a uInt length: feed large contents in pieces.
  constexpr size_t kPiece = size_t{1} << 30;
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const size_t n = std::min(kPiece, bytes.size() - at);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at),
                static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

// The checksum as its line spells it: eight lowercase hex digits.
std::string Hex(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", static_cast<unsigned>(value));
  return text;
}

}  // namespace

StatusOr<std::string> ReadTextFile(const std::string& path,
                                   const FileLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError(path + ": cannot open: " + std::strerror(errno));
  }
  // Read in chunks rather than trusting a size from stat: pipes have none.
  std::string contents;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    contents.append(chunk, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(contents.size()) > limits.max_file_bytes) {
      return InvalidArgumentError(path + ": file is larger than the limit of " +
                                  std::to_string(limits.max_file_bytes) +
                                  " bytes (FileLimits::max_file_bytes)");
    }
  }
  if (in.bad()) {
    return InvalidArgumentError(path + ": cannot read: " + Reason(errno));
  }
  return contents;
}

Status WriteTextFile(const std::string& path, const std::string& contents) {
  if (IsSpecialFile(path)) return WriteInPlace(path, contents);
  const std::string tmp = path + ".tmp";
  const int fd =
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return CannotWrite(path, errno);
  // The data reaches the disk before the rename makes it the file, so a
  // crash of the machine does not leave an empty file under `path` either.
  int error = WriteAll(fd, contents);
  if (error == 0 && fsync(fd) != 0) error = errno;
  if (close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    std::remove(tmp.c_str());  // Ignoring errors on purpose: best effort.
    return CannotWrite(path, error);
  }
  // The rename itself reaches the disk with the folder.
  const int folder = open(FolderOf(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (folder >= 0) {
    fsync(folder);  // Ignoring errors on purpose: the file is complete.
    close(folder);
  }
  return Status::Ok();
}

std::string WithChecksum(std::string contents) {
  const uint32_t crc = Crc32(contents);
  contents += kChecksumPrefix;
  contents += Hex(crc);
  contents += '\n';
  return contents;
}

Status WriteChecksummedFile(const std::string& path,
                            const std::string& contents) {
  return WriteTextFile(path, WithChecksum(contents));
}

StatusOr<std::string> VerifyChecksum(const std::string& path,
                                     std::string bytes) {
  const size_t n = bytes.size();
  const size_t line = n - std::min(n, kChecksumLineSize);
  if (n < kChecksumLineSize ||
      bytes.compare(line, sizeof(kChecksumPrefix) - 1, kChecksumPrefix) != 0 ||
      bytes.back() != '\n') {
    return InvalidArgumentError(
        path +
        ": no dplace checksum line at its end: the file was cut short, or "
        "was not written by this version of dplace");
  }
  // Compared as text: Hex writes one spelling of each value.
  const std::string hex = bytes.substr(n - 9, 8);
  bytes.resize(line);
  if (hex != Hex(Crc32(bytes))) {
    return InvalidArgumentError(
        path +
        ": checksum mismatch: the file is corrupt (it changed after "
        "dplace wrote it)");
  }
  return bytes;
}

StatusOr<std::string> ReadChecksummedFile(const std::string& path,
                                          const FileLimits& limits) {
  DPLACE_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile(path, limits));
  return VerifyChecksum(path, std::move(bytes));
}

StatusOr<OutputLock> OutputLock::Acquire(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(path + ": cannot write: it is a folder");
  }
  OutputLock lock;
  if (IsSpecialFile(path)) return lock;
  const std::string lock_path = path + ".lock";
  // A holder removes its lock file before it unlocks it: a lock taken on a
  // file that was removed meanwhile is no lock, so take it again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return InvalidArgumentError(path +
                                  ": cannot write there: " + Reason(errno));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      close(fd);
      if (error == EWOULDBLOCK) {
        return InvalidArgumentError(
            path + ": another process is writing it (it holds the lock on " +
            lock_path + "); wait for it to finish, or choose another file");
      }
      return InvalidArgumentError(path + ": cannot lock " + lock_path + ": " +
                                  Reason(error));
    }
    struct stat held, named;
    if (fstat(fd, &held) == 0 && stat(lock_path.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      lock.lock_path_ = lock_path;
      lock.fd_ = fd;
      return lock;
    }
    close(fd);
  }
  return InvalidArgumentError(path + ": cannot lock " + lock_path +
                              ": it keeps being replaced");
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : lock_path_(std::move(other.lock_path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    Release();
    lock_path_ = std::move(other.lock_path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutputLock::~OutputLock() { Release(); }

void OutputLock::Release() {
  if (fd_ < 0) return;
  // Removed while still locked, so no other process locks this file after
  // it is gone (Acquire checks that the file it locked is still there).
  unlink(lock_path_.c_str());  // Ignoring errors on purpose: harmless.
  close(fd_);
  fd_ = -1;
}

}  // namespace dplace
