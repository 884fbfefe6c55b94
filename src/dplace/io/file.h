// Whole-file reads and writes with errors that name the file.
#ifndef DPLACE_IO_FILE_H_
#define DPLACE_IO_FILE_H_

#include <cstdint>
#include <string>

#include "dplace/util/status.h"

namespace dplace {

// Bounds on the files dplace reads, so a wrong or hostile file gives an
// error instead of exhausting memory (a graph file's JSON tree takes about
// ten times the file's size in memory).
struct FileLimits {
  // Largest file read, in bytes. A million-op training graph is about
  // 350 MB of graph JSON. Default: 1 GiB.
  int64_t max_file_bytes = int64_t{1} << 30;
};

// Reads the whole file; a file larger than `limits.max_file_bytes` is an
// error naming the file and the bound (pipes are bounded too).
StatusOr<std::string> ReadTextFile(const std::string& path,
                                   const FileLimits& limits = {});
Status WriteTextFile(const std::string& path, const std::string& contents);
// Writes `contents` to a temporary file beside `path`, flushed to disk, and
// renames it over `path`: a reader, or a process killed at any point,
// sees either the old file or the new one, never a part.
Status WriteTextFileAtomically(const std::string& path,
                               const std::string& contents);

}  // namespace dplace

#endif  // DPLACE_IO_FILE_H_
