// Whole-file reads and writes with errors that name the file: every output
// of dplace is written whole or not at all (WriteTextFile), checkpoints
// carry a checksum that is verified when they are read back
// (WriteChecksummedFile, ReadChecksummedFile), and an output a process is
// writing is locked against a second writer (OutputLock).
#ifndef DPLACE_IO_FILE_H_
#define DPLACE_IO_FILE_H_

#include <cstdint>
#include <string>

#include "dplace/util/status.h"

namespace dplace {

// Bounds on the files dplace reads, so a wrong or hostile file gives an
// error instead of exhausting memory (a JSON tree takes about ten times the
// file's size in memory).
struct FileLimits {
  // Largest file read, in bytes. A million-op training graph is about
  // 350 MB of graph JSON. Default: 1 GiB.
  int64_t max_file_bytes = int64_t{1} << 30;
  // Most ops and edges (inputs) a graph file may hold. Graph files are read
  // op by op, never as a whole tree; the graph then takes about 200 bytes
  // per op and 20 per edge (docs/performance.md), so these bound what a
  // file can make dplace hold before it is refused. Default: 2^24
  // (16,777,216) ops and 2^26 (67,108,864) edges.
  int64_t max_graph_ops = int64_t{1} << 24;
  int64_t max_graph_edges = int64_t{1} << 26;
};

// Reads the whole file; a file larger than `limits.max_file_bytes` is an
// error naming the file and the bound (pipes are bounded too).
StatusOr<std::string> ReadTextFile(const std::string& path,
                                   const FileLimits& limits = {});

// Writes `contents` to `path` through a temporary file beside it
// (`path`.tmp), flushed to disk and renamed over `path`: a reader, or a
// process killed at any point, sees either the old file or the new one,
// never a part. On failure (a full disk included) the temporary is removed,
// `path` is left as it was, and the error names `path` and the system's
// reason ("...: cannot write: No space left on device"). A `path` that
// exists and is not a regular file (/dev/null, a pipe) is written in
// place.
Status WriteTextFile(const std::string& path, const std::string& contents);

// Checkpoints: `contents` followed by a line holding its CRC-32,
// "\ndplace-crc32 89abcdef\n", written by WriteTextFile. The line is
// outside `contents`, so a format inside (a ZIP archive, JSON) is not
// changed by it.
std::string WithChecksum(std::string contents);
Status WriteChecksummedFile(const std::string& path,
                            const std::string& contents);
// The contents of a file WriteChecksummedFile wrote, the checksum line
// removed, after checking it: a file cut short, changed since, or not
// written by dplace is an error naming `path` and which of those it is.
StatusOr<std::string> ReadChecksummedFile(const std::string& path,
                                          const FileLimits& limits = {});
// As ReadChecksummedFile, on `bytes` already read from `path`.
StatusOr<std::string> VerifyChecksum(const std::string& path,
                                     std::string bytes);

// An advisory lock (flock) on an output file, so that two dplace
// processes never write the same file: the second is refused. The lock is
// taken on `path`.lock, created beside `path` and removed when the lock is
// released (the output itself is replaced by renames, which a lock on it
// would not survive). A lock file left by a killed process is harmless: its
// lock went with the process.
//
// Thread safety: not shared between threads; a process must not lock one
// path twice (the second is refused, as another writer's would be).
class OutputLock {
 public:
  // Checks that `path` can be written (it is not a folder, its folder
  // exists and dplace may create files there) and locks it. Errors name
  // `path` and say why: the folder is missing or not writable, or another
  // process holds the lock. A `path` that exists and is not a regular file
  // (/dev/null) is not locked.
  static StatusOr<OutputLock> Acquire(const std::string& path);

  OutputLock() = default;
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  bool held() const { return fd_ >= 0; }

 private:
  void Release();

  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace dplace

#endif  // DPLACE_IO_FILE_H_
