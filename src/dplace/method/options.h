// A method's settings as the user gives them (`--option key=value`), and
// the reader that turns them into a method's typed settings struct once, at
// the edge: a malformed value or an unknown key is an error naming the
// method and the keys it takes.
#ifndef DPLACE_METHOD_OPTIONS_H_
#define DPLACE_METHOD_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dplace/util/status.h"

namespace dplace {

// Settings of one method as key=value strings, from `--option k=v`. Each
// method reads its settings struct from them with OptionReader.
class MethodOptions {
 public:
  MethodOptions() = default;
  // Each item "key=value"; an item without '=' or a repeated key is an error.
  static StatusOr<MethodOptions> Parse(const std::vector<std::string>& items);
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Reads typed settings out of MethodOptions; Finish() reports malformed
// values and keys that no setting read, naming the method and the keys it
// accepts.
class OptionReader {
 public:
  OptionReader(std::string method, const MethodOptions& options)
      : method_(std::move(method)), options_(&options) {}
  // Each leaves *value unchanged when the key is absent.
  void Int(const std::string& key, int64_t* value);
  void Int(const std::string& key, int* value);
  void Double(const std::string& key, double* value);
  void Bool(const std::string& key, bool* value);  // true/false/1/0.
  void String(const std::string& key, std::string* value);
  // One of `names` (e.g. {{"ppo", Algorithm::kPpo}, ...}); any other text
  // is an error listing them.
  template <typename E>
  void Enum(const std::string& key,
            const std::vector<std::pair<std::string, E>>& names, E* value) {
    const std::string* text = Find(key);
    if (!text) return;
    std::string known;
    for (const auto& [name, e] : names) {
      if (name == *text) {
        *value = e;
        return;
      }
      known += (known.empty() ? "" : ", ") + name;
    }
    SetError(key + "=" + *text + ": expected one of " + known);
  }
  Status Finish() const;

 private:
  const std::string* Find(const std::string& key);
  void SetError(std::string error);  // Keeps the first.
  std::string method_;
  const MethodOptions* options_;
  std::vector<std::string> accepted_;
  std::string first_error_;
};

}  // namespace dplace

#endif  // DPLACE_METHOD_OPTIONS_H_
