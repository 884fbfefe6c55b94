// Internal to io: typed reads of JSON fields that report the JSON path of a
// bad field ("ops[3].outputs[0].bytes: expected an integer >= 0, got -5"),
// and reject fields the format does not define, so typos do not pass
// silently.
#ifndef DPLACE_IO_JSON_FIELDS_H_
#define DPLACE_IO_JSON_FIELDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dplace/io/json_parse.h"
#include "dplace/util/status.h"

namespace dplace {
namespace io_internal {

using nlohmann::json;

// Parses `text` as JSON (ParseJson: no key twice) and hands the root to
// `parse` (a function `StatusOr<T>(const json&)`); errors of either step
// name `source`.
template <typename T, typename ParseFn>
StatusOr<T> ParseDocument(const std::string& text, const std::string& source,
                          ParseFn parse) {
  DPLACE_ASSIGN_OR_RETURN(json root, ParseJson(text, source));
  StatusOr<T> value = parse(root);
  if (!value.ok()) return value.status().WithPrefix(source);
  return value;
}

// Describes a JSON value for error messages: `"abc"`, `-5`, `an object`.
std::string DescribeJson(const json& value);

// Reads the fields of one JSON object. The first error sticks; later reads
// return defaults, so callers read everything and check status() once.
class FieldReader {
 public:
  FieldReader(const json& value, std::string path);

  std::string String(const char* key);  // Required.
  std::string String(const char* key, const std::string& fallback);
  double Number(const char* key, double min);  // Required, >= min.
  double Number(const char* key, double fallback, double min);
  int64_t Int(const char* key, int64_t min);  // Required, >= min.
  int64_t Int(const char* key, int64_t fallback, int64_t min);
  bool Bool(const char* key, bool fallback);
  // The array or object under `key`, or null when absent (or on error).
  const json* Array(const char* key, bool required);
  const json* Object(const char* key, bool required);

  // "path.key", for errors found by the caller.
  std::string PathOf(const char* key) const;
  void Fail(const std::string& message);  // Keeps the first error.

  // OK when every read succeeded and the object has no unknown fields.
  Status Finish();
  const Status& status() const { return status_; }

 private:
  const json* Get(const char* key, bool required);

  const json& value_;
  std::string path_;
  std::set<std::string> read_;
  Status status_;
};

// Checks the `format` and `version` fields every dplace file starts with.
void CheckFormat(FieldReader& fields, const std::string& format);

}  // namespace io_internal
}  // namespace dplace

#endif  // DPLACE_IO_JSON_FIELDS_H_
