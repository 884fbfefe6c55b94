#include "dplace/method/options.h"

#include <algorithm>
#include <cstdlib>

namespace dplace {

StatusOr<MethodOptions> MethodOptions::Parse(
    const std::vector<std::string>& items) {
  MethodOptions options;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("option \"" + item +
                                  "\": expected key=value");
    }
    const std::string key = item.substr(0, eq);
    if (!options.values_.emplace(key, item.substr(eq + 1)).second) {
      return InvalidArgumentError("option \"" + key + "\" given twice");
    }
  }
  return options;
}

const std::string* OptionReader::Find(const std::string& key) {
  accepted_.push_back(key);
  auto it = options_->values().find(key);
  return it == options_->values().end() ? nullptr : &it->second;
}

void OptionReader::SetError(std::string error) {
  if (first_error_.empty()) first_error_ = std::move(error);
}

void OptionReader::Int(const std::string& key, int64_t* value) {
  const std::string* text = Find(key);
  if (!text) return;
  char* end = nullptr;
  const long long v = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0') {
    SetError(key + "=" + *text + ": expected an integer");
    return;
  }
  *value = v;
}

void OptionReader::Int(const std::string& key, int* value) {
  int64_t v = *value;
  Int(key, &v);
  *value = static_cast<int>(v);
}

void OptionReader::Double(const std::string& key, double* value) {
  const std::string* text = Find(key);
  if (!text) return;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0') {
    SetError(key + "=" + *text + ": expected a number");
    return;
  }
  *value = v;
}

void OptionReader::Bool(const std::string& key, bool* value) {
  const std::string* text = Find(key);
  if (!text) return;
  if (*text == "true" || *text == "1") {
    *value = true;
  } else if (*text == "false" || *text == "0") {
    *value = false;
  } else {
    SetError(key + "=" + *text + ": expected true or false");
  }
}

void OptionReader::String(const std::string& key, std::string* value) {
  const std::string* text = Find(key);
  if (text) *value = *text;
}

Status OptionReader::Finish() const {
  if (!first_error_.empty()) {
    return InvalidArgumentError("method " + method_ + ": option " +
                                first_error_);
  }
  for (const auto& [key, value] : options_->values()) {
    if (std::find(accepted_.begin(), accepted_.end(), key) != accepted_.end()) {
      continue;
    }
    std::string known;
    for (const std::string& k : accepted_) {
      known += (known.empty() ? "" : ", ") + k;
    }
    return InvalidArgumentError(
        "method " + method_ + ": unknown option \"" + key + "\" (" +
        (known.empty() ? std::string("it takes no options")
                       : "options: " + known) +
        ")");
  }
  return Status::Ok();
}

}  // namespace dplace
