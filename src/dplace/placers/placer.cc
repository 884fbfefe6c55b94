#include "dplace/placers/placer.h"

#include <algorithm>
#include <cstdlib>

namespace dplace {
namespace {

std::vector<PlacerEntry>& Registry() {
  static std::vector<PlacerEntry>* registry = new std::vector<PlacerEntry>();
  return *registry;
}

}  // namespace

StatusOr<PlacerOptions> PlacerOptions::Parse(
    const std::vector<std::string>& items) {
  PlacerOptions options;
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

void OptionReader::Int(const std::string& key, int64_t* value) {
  const std::string* text = Find(key);
  if (!text) return;
  char* end = nullptr;
  const long long v = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0') {
    if (first_error_.empty()) {
      first_error_ = key + "=" + *text + ": expected an integer";
    }
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
    if (first_error_.empty()) {
      first_error_ = key + "=" + *text + ": expected a number";
    }
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
  } else if (first_error_.empty()) {
    first_error_ = key + "=" + *text + ": expected true or false";
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

bool RegisterPlacer(PlacerEntry entry) {
  Registry().push_back(std::move(entry));
  return true;
}

std::vector<const PlacerEntry*> Placers() {
  std::vector<const PlacerEntry*> out;
  for (const PlacerEntry& e : Registry()) out.push_back(&e);
  std::sort(out.begin(), out.end(),
            [](const PlacerEntry* a, const PlacerEntry* b) {
              return a->rank != b->rank ? a->rank < b->rank : a->name < b->name;
            });
  return out;
}

const PlacerEntry* FindPlacer(std::string_view name) {
  for (const PlacerEntry& e : Registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

StatusOr<std::unique_ptr<Placer>> MakePlacer(std::string_view name,
                                             const PlacerOptions& options) {
  const PlacerEntry* entry = FindPlacer(name);
  if (!entry) {
    std::string known;
    for (const PlacerEntry* e : Placers()) {
      known += (known.empty() ? "" : ", ") + e->name;
    }
    return NotFoundError("unknown method \"" + std::string(name) +
                         "\" (methods: " + known + ")");
  }
  return entry->make(options);
}

}  // namespace dplace
