// A search's JSONL log: one SampleRecord per line (sample, wall_s,
// step_time, feasible, reward, best_step_time), flushed after every batch.
// No LibTorch here, so any search (an agent, a local search) can write it.
//
//   SearchLog log;
//   DPLACE_RETURN_IF_ERROR(log.Open(path, /*resume_at_sample=*/-1));
//   DPLACE_RETURN_IF_ERROR(log.Append(record));
//   DPLACE_RETURN_IF_ERROR(log.Flush());  // After each batch.
#ifndef DPLACE_SEARCH_SEARCH_LOG_H_
#define DPLACE_SEARCH_SEARCH_LOG_H_

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "dplace/method/search.h"
#include "dplace/util/status.h"

namespace dplace {

// One sample as its log line (no newline); `extra` fields are added after
// the record's own.
std::string SampleRecordLine(
    const SampleRecord& record,
    const std::vector<std::pair<std::string, double>>& extra = {});

// The samples of a log SearchLog wrote, in order (its extra fields are
// ignored). Errors name the file, the line and what it lacks.
StatusOr<std::vector<SampleRecord>> ReadSearchLog(const std::string& path);

class SearchLog {
 public:
  // Opens `path` for writing. A fresh search (`resume_at_sample` < 0)
  // truncates it; a resumed one keeps the lines of samples before
  // `resume_at_sample` (a killed search may have logged samples past its
  // checkpoint) and appends. Errors name the file.
  Status Open(const std::string& path, int64_t resume_at_sample);
  bool is_open() const { return out_.is_open(); }

  // REQUIRES: is_open().
  Status Append(const SampleRecord& record,
                const std::vector<std::pair<std::string, double>>& extra = {});
  // Does nothing when not open.
  Status Flush();

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace dplace

#endif  // DPLACE_SEARCH_SEARCH_LOG_H_
