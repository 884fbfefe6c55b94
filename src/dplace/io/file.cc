#include "dplace/io/file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dplace {

StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError(path + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(path + ": read failed");
  return contents.str();
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

}  // namespace dplace
