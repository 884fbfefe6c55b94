// Parsing JSON text the way every file dplace reads is parsed: a key named
// twice in one object is an error (nlohmann's parser keeps the last one
// silently, so a file that says two things would mean the second).
#ifndef DPLACE_IO_JSON_PARSE_H_
#define DPLACE_IO_JSON_PARSE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "dplace/util/status.h"

namespace dplace {

// Parses `text`. Errors name `source` (a file, or "checkpoint x.ckpt:
// meta") and: for a syntax error the line and the column; for a repeated
// key the path of its object and the key (`graph.json: ops[3]: the key
// "name" appears twice`).
StatusOr<nlohmann::json> ParseJson(const std::string& text,
                                   const std::string& source);

}  // namespace dplace

#endif  // DPLACE_IO_JSON_PARSE_H_
