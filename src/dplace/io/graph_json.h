// The graph JSON format (docs/formats.md): read and write.
#ifndef DPLACE_IO_GRAPH_JSON_H_
#define DPLACE_IO_GRAPH_JSON_H_

#include <string>

#include "dplace/graph/graph.h"
#include "dplace/io/file.h"

namespace dplace {

// Errors name `source` and the JSON path of the bad field, e.g.
// "g.json: ops[3].outputs[0].bytes: expected an integer >= 0, got -5".
// The document is read op by op, never held as a whole JSON tree; `limits`
// bounds its ops and edges (and, for a file, its size).
StatusOr<Graph> ParseGraphJson(const std::string& text,
                               const std::string& source,
                               const FileLimits& limits = {});
StatusOr<Graph> ReadGraphJson(const std::string& path,
                              const FileLimits& limits = {});

std::string GraphToJson(const Graph& graph);
Status WriteGraphJson(const Graph& graph, const std::string& path);

}  // namespace dplace

#endif  // DPLACE_IO_GRAPH_JSON_H_
