// The graph JSON format (docs/formats.md): read and write.
#ifndef DPLACE_IO_GRAPH_JSON_H_
#define DPLACE_IO_GRAPH_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/io/file.h"

namespace dplace {

// What a graph file says of its model beside the graph, so that every
// command that reads the file can say it again (all optional).
struct GraphFileInfo {
  // "warnings": what the importer warned of, one line each.
  std::vector<std::string> warnings;
  // "batch": the batch size the graph was made at; 0: not recorded.
  int64_t batch = 0;
  // "optimizer": the optimizer of its update ops; empty: not recorded.
  std::string optimizer;
};

// Errors name `source` and the JSON path of the bad field, e.g.
// "g.json: ops[3].outputs[0].bytes: expected an integer >= 0, got -5".
// The document is read op by op, never held as a whole JSON tree; `limits`
// bounds its ops and edges (and, for a file, its size). The file's
// GraphFileInfo goes to *info when given.
StatusOr<Graph> ParseGraphJson(const std::string& text,
                               const std::string& source,
                               GraphFileInfo* info = nullptr,
                               const FileLimits& limits = {});
StatusOr<Graph> ReadGraphJson(const std::string& path,
                              const FileLimits& limits = {},
                              GraphFileInfo* info = nullptr);

std::string GraphToJson(const Graph& graph, const GraphFileInfo& info = {});
Status WriteGraphJson(const Graph& graph, const std::string& path,
                      const GraphFileInfo& info = {});

}  // namespace dplace

#endif  // DPLACE_IO_GRAPH_JSON_H_
