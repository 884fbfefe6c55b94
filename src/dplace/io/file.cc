#include "dplace/io/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace dplace {

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
  if (in.bad()) return InvalidArgumentError(path + ": read failed");
  return contents;
}

Status WriteTextFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return InvalidArgumentError(path +
                                ": cannot write: " + std::strerror(errno));
  }
  out << contents;
  out.close();
  if (!out) return InvalidArgumentError(path + ": write failed");
  return Status::Ok();
}

Status WriteTextFileAtomically(const std::string& path,
                               const std::string& contents) {
  const std::string tmp = path + ".tmp";
  DPLACE_RETURN_IF_ERROR(WriteTextFile(tmp, contents));
  // The data reaches the disk before the rename makes it the file, so a
  // crash of the machine does not leave an empty file under `path` either.
  const int fd = open(tmp.c_str(), O_RDONLY);
  const bool synced = fd >= 0 && fsync(fd) == 0;
  if (fd >= 0) close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());  // Ignoring errors on purpose: best effort.
    return InvalidArgumentError(path + ": cannot write: " + reason);
  }
  return Status::Ok();
}

}  // namespace dplace
