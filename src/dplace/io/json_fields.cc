#include "dplace/io/json_fields.h"

#include <cmath>
#include <cstdint>

namespace dplace {
namespace io_internal {

std::string DescribeJson(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_null()) return "null";
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

FieldReader::FieldReader(const json& value, std::string path)
    : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) {
    Fail((path_.empty() ? std::string("top level") : path_) +
         ": expected an object, got " + DescribeJson(value_));
  }
}

std::string FieldReader::PathOf(const char* key) const {
  return path_.empty() ? std::string(key) : path_ + "." + key;
}

void FieldReader::Fail(const std::string& message) {
  if (status_.ok()) status_ = InvalidArgumentError(message);
}

const json* FieldReader::Get(const char* key, bool required) {
  read_.insert(key);
  if (!status_.ok()) return nullptr;
  auto it = value_.find(key);
  if (it == value_.end()) {
    if (required) Fail(PathOf(key) + ": missing");
    return nullptr;
  }
  return &*it;
}

std::string FieldReader::String(const char* key) {
  const json* v = Get(key, true);
  if (!v) return "";
  if (!v->is_string()) {
    Fail(PathOf(key) + ": expected a string, got " + DescribeJson(*v));
    return "";
  }
  return v->get<std::string>();
}

std::string FieldReader::String(const char* key, const std::string& fallback) {
  if (status_.ok() && !value_.contains(key)) {
    read_.insert(key);
    return fallback;
  }
  return String(key);
}

double FieldReader::Number(const char* key, double min) {
  const json* v = Get(key, true);
  if (!v) return min;
  if (!v->is_number() || !std::isfinite(v->get<double>()) ||
      v->get<double>() < min) {
    Fail(PathOf(key) + ": expected a number >= " + json(min).dump() + ", got " +
         DescribeJson(*v));
    return min;
  }
  return v->get<double>();
}

double FieldReader::Number(const char* key, double fallback, double min) {
  if (status_.ok() && !value_.contains(key)) {
    read_.insert(key);
    return fallback;
  }
  return Number(key, min);
}

int64_t FieldReader::Int(const char* key, int64_t min) {
  const json* v = Get(key, true);
  if (!v) return min;
  // Integers written as 1e9 are accepted when they are whole numbers.
  // Unsigned integers above INT64_MAX would wrap in get<int64_t>().
  bool whole = v->is_number_integer() &&
               !(v->is_number_unsigned() &&
                 v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX));
  if (v->is_number_float()) {
    const double d = v->get<double>();
    whole = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18;
  }
  if (!whole || v->get<double>() < static_cast<double>(min)) {
    Fail(PathOf(key) + ": expected an integer >= " + std::to_string(min) +
         ", got " + DescribeJson(*v));
    return min;
  }
  return v->is_number_integer() ? v->get<int64_t>()
                                : static_cast<int64_t>(v->get<double>());
}

int64_t FieldReader::Int(const char* key, int64_t fallback, int64_t min) {
  if (status_.ok() && !value_.contains(key)) {
    read_.insert(key);
    return fallback;
  }
  return Int(key, min);
}

bool FieldReader::Bool(const char* key, bool fallback) {
  const json* v = Get(key, false);
  if (!v) return fallback;
  if (!v->is_boolean()) {
    Fail(PathOf(key) + ": expected true or false, got " + DescribeJson(*v));
    return fallback;
  }
  return v->get<bool>();
}

const json* FieldReader::Array(const char* key, bool required) {
  const json* v = Get(key, required);
  if (v && !v->is_array()) {
    Fail(PathOf(key) + ": expected an array, got " + DescribeJson(*v));
    return nullptr;
  }
  return v;
}

const json* FieldReader::Object(const char* key, bool required) {
  const json* v = Get(key, required);
  if (v && !v->is_object()) {
    Fail(PathOf(key) + ": expected an object, got " + DescribeJson(*v));
    return nullptr;
  }
  return v;
}

Status FieldReader::Finish() {
  if (status_.ok()) {
    for (auto it = value_.begin(); it != value_.end(); ++it) {
      if (!read_.count(it.key())) {
        Fail(PathOf(it.key().c_str()) + ": unknown field");
        break;
      }
    }
  }
  return status_;
}

void CheckFormat(FieldReader& fields, const std::string& format) {
  const std::string got = fields.String("format", "");
  if (fields.status().ok() && got.empty()) {
    fields.Fail(fields.PathOf("format") + ": missing or empty, expected \"" +
                format + "\"");
  } else if (fields.status().ok() && got != format) {
    fields.Fail(fields.PathOf("format") + ": expected \"" + format +
                "\", got \"" + got + "\"");
  }
  const int64_t version = fields.Int("version", 1);
  if (fields.status().ok() && version != 1) {
    fields.Fail(fields.PathOf("version") +
                ": this dplace reads version 1, got " +
                std::to_string(version));
  }
}

}  // namespace io_internal
}  // namespace dplace
