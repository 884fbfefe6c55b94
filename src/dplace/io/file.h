// Whole-file reads and writes with errors that name the file.
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
Status WriteTextFile(const std::string& path, const std::string& contents);
// Writes `contents` to a temporary file beside `path`, flushed to disk, and
// renames it over `path`: a reader, or a process killed at any point,
// sees either the old file or the new one, never a part.
Status WriteTextFileAtomically(const std::string& path,
                               const std::string& contents);

}  // namespace dplace

#endif  // DPLACE_IO_FILE_H_
