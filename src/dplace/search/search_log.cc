#include "dplace/search/search_log.h"

#include <nlohmann/json.hpp>

#include "dplace/io/file.h"

namespace dplace {
namespace {

using nlohmann::json;

// Keeps the lines of `path` that record samples before `samples`.
Status TruncateLog(const std::string& path, int64_t samples) {
  std::ifstream in(path);
  if (!in) return Status::Ok();  // No log yet: start one.
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("sample") ||
        !j["sample"].is_number_integer()) {
      return InvalidArgumentError(
          "log " + path +
          ": a line that is not a sample record: " + line.substr(0, 80));
    }
    if (j["sample"].get<int64_t>() < samples) kept += line + "\n";
  }
  in.close();
  return WriteTextFile(path, kept);
}

}  // namespace

std::string SampleRecordLine(
    const SampleRecord& r,
    const std::vector<std::pair<std::string, double>>& extra) {
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
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
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
