#include "dplace/search/search_log.h"

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "dplace/io/file.h"
#include "dplace/io/json_parse.h"

namespace dplace {
namespace {

using nlohmann::json;

// The last line of `text` when a write cut it short: it has no newline
// and does not parse. Empty otherwise.
std::string TornLastLine(const std::string& text) {
  if (text.empty() || text.back() == '\n') return "";
  const size_t start = text.rfind('\n') + 1;  // 0 when there is no newline.
  const std::string line = text.substr(start);
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? line : "";
}

// Keeps the lines of `path` that record samples before `samples`. A torn
// last line is dropped: it comes after the checkpoint, whose batch was
// logged whole before it was written.
Status TruncateLog(const std::string& path, int64_t samples) {
  if (!std::ifstream(path)) return Status::Ok();  // No log yet: start one.
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  text.resize(text.size() - TornLastLine(text).size());
  std::string kept;
  size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    DPLACE_ASSIGN_OR_RETURN(
        const json j,
        ParseJson(line, "log " + path + ":" + std::to_string(line_number)));
    if (!j.is_object() || !j.contains("sample") ||
        !j["sample"].is_number_integer()) {
      return InvalidArgumentError(
          "log " + path +
          ": a line that is not a sample record: " + line.substr(0, 80));
    }
    if (j["sample"].get<int64_t>() < samples) kept += line + "\n";
  }
  return WriteTextFile(path, kept);
}

// `value` as json::dump() writes it: the shortest text that reads back
// to it (nlohmann's Grisu2), null when it is not finite.
void AppendNumber(double value, std::string* out) {
  if (!std::isfinite(value)) {
    *out += "null";
    return;
  }
  std::array<char, 64> buffer;
  char* end = nlohmann::detail::to_chars(buffer.data(),
                                         buffer.data() + buffer.size(), value);
  out->append(buffer.data(), end);
}

}  // namespace

std::string TornLastLogLine(const std::string& path) {
  StatusOr<std::string> text = ReadTextFile(path);
  return text.ok() ? TornLastLine(*text) : "";
}

std::string SampleRecordLine(
    const SampleRecord& r,
    const std::vector<std::pair<std::string, double>>& extra) {
  if (extra.empty()) {
    // A search of millions of samples writes one line each (mcmc, auto):
    // written directly, the line costs a tenth of building the JSON object
    // and dumping it, with the same text (keys in the object's order).
    std::string line = "{\"best_step_time\":";
    line.reserve(160);
    if (r.best_step_time > 0) {
      AppendNumber(r.best_step_time, &line);
    } else {
      line += "null";
    }
    line += r.feasible ? ",\"feasible\":true" : ",\"feasible\":false";
    line += ",\"reward\":";
    AppendNumber(r.reward, &line);
    line += ",\"sample\":";
    line += std::to_string(r.index);
    line += ",\"step_time\":";
    AppendNumber(r.step_time, &line);
    line += ",\"wall_s\":";
    AppendNumber(r.wall_seconds, &line);
    line += '}';
    return line;
  }
  json line{{"sample", r.index},
            {"wall_s", r.wall_seconds},
            {"step_time", r.step_time},
            {"feasible", r.feasible},
            {"reward", r.reward}};
  line["best_step_time"] =
      r.best_step_time > 0 ? json(r.best_step_time) : json(nullptr);
  for (const auto& [key, value] : extra) line[key] = value;
  return line.dump();
}

StatusOr<std::vector<SampleRecord>> ReadSearchLog(const std::string& path) {
  DPLACE_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  std::vector<SampleRecord> records;
  size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    DPLACE_ASSIGN_OR_RETURN(
        const json j,
        ParseJson(line, "log " + path + ":" + std::to_string(line_number)));
    const auto number = [&j](const char* key) {
      return j.is_object() && j.contains(key) && j[key].is_number();
    };
    if (!number("sample") || !number("wall_s") || !number("step_time") ||
        !number("reward") || !j.contains("feasible") ||
        !j["feasible"].is_boolean() || !j.contains("best_step_time") ||
        !(j["best_step_time"].is_null() || number("best_step_time"))) {
      return InvalidArgumentError(
          "log " + path + ":" + std::to_string(line_number) +
          ": expected a sample record (sample, wall_s, step_time, feasible, "
          "reward, best_step_time), got: " +
          line.substr(0, 80));
    }
    SampleRecord r;
    r.index = j["sample"].get<int64_t>();
    r.wall_seconds = j["wall_s"].get<double>();
    r.step_time = j["step_time"].get<double>();
    r.feasible = j["feasible"].get<bool>();
    r.reward = j["reward"].get<double>();
    r.best_step_time =
        j["best_step_time"].is_null() ? 0 : j["best_step_time"].get<double>();
    records.push_back(r);
  }
  return records;
}

Status SearchLog::Open(const std::string& path, int64_t resume_at_sample) {
  path_ = path;
  const bool resuming = resume_at_sample >= 0;
  if (resuming) DPLACE_RETURN_IF_ERROR(TruncateLog(path, resume_at_sample));
  out_.open(path, resuming ? std::ios::app : std::ios::trunc);
  if (!out_) {
    return InvalidArgumentError("log " + path + ": cannot open for writing");
  }
  return Status::Ok();
}

Status SearchLog::Append(
    const SampleRecord& record,
    const std::vector<std::pair<std::string, double>>& extra) {
  out_ << SampleRecordLine(record, extra) << "\n";
  if (!out_) return InvalidArgumentError("log " + path_ + ": write failed");
  return Status::Ok();
}

Status SearchLog::Flush() {
  if (!out_.is_open()) return Status::Ok();
  out_.flush();
  if (!out_) return InvalidArgumentError("log " + path_ + ": write failed");
  return Status::Ok();
}

}  // namespace dplace
