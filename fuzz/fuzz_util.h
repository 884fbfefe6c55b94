// What the fuzz targets and their regression tests share: reporting a
// broken property, and reading a corpus directory.
#ifndef DPLACE_FUZZ_FUZZ_UTIL_H_
#define DPLACE_FUZZ_FUZZ_UTIL_H_

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace dplace {
namespace fuzz {

// A broken property is a bug: report it and abort, which libFuzzer and the
// regression tests both see as a crash.
inline void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", what.c_str());
  std::abort();
}

// The regular files of `dir` (none when it does not exist), hidden files
// left out, sorted.
inline std::vector<std::filesystem::path> FilesIn(
    const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace fuzz
}  // namespace dplace

#endif  // DPLACE_FUZZ_FUZZ_UTIL_H_
