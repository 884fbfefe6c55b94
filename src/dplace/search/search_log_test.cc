// A search's JSONL log: a resumed search keeps the lines before its
// checkpoint, and drops a last line that a crash or a full disk cut short.
#include "dplace/search/search_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "dplace/io/file.h"

namespace dplace {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

std::string Line(int64_t sample) {
  SampleRecord r;
  r.index = sample;
  r.step_time = 0.5;
  r.feasible = true;
  r.reward = -0.7;
  return SampleRecordLine(r) + "\n";
}

// A line without extra fields is written directly, not through a JSON
// object: the same text as the object's dump, for numbers of every
// magnitude, whole numbers, zero, negatives, a missing best (null) and
// values that are not finite (null, as the object writes them).
TEST(SampleRecordLineTest, IsTheTextOfTheJsonObject) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-320, 308);
  std::vector<double> values = {0.0,
                                -0.0,
                                1.0,
                                100000.0,
                                1e15,
                                1e16,
                                1e-5,
                                0.1,
                                1.0390811061940397,
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::infinity(),
                                std::nan("")};
  for (int i = 0; i < 2000; ++i) {
    values.push_back(mantissa(rng) * std::pow(10.0, exponent(rng)));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    SampleRecord r;
    r.index = static_cast<int64_t>(i) * 1000003;
    r.wall_seconds = values[i];
    r.step_time = values[(i + 1) % values.size()];
    r.reward = values[(i + 2) % values.size()];
    r.feasible = i % 2 == 0;
    r.best_step_time = values[(i + 3) % values.size()];
    nlohmann::json object{{"sample", r.index},
                          {"wall_s", r.wall_seconds},
                          {"step_time", r.step_time},
                          {"feasible", r.feasible},
                          {"reward", r.reward}};
    object["best_step_time"] = r.best_step_time > 0
                                   ? nlohmann::json(r.best_step_time)
                                   : nlohmann::json(nullptr);
    ASSERT_EQ(SampleRecordLine(r), object.dump()) << "values " << i;
  }
}

class SearchLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "dplace_search_log_test_" +
            std::to_string(::getpid()) + ".jsonl";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
};

TEST_F(SearchLogTest, AResumeDropsATornLastLine) {
  const std::string whole = Line(0) + Line(1) + Line(2) + Line(3);
  const std::string torn = Line(4).substr(0, 20);
  ASSERT_TRUE(WriteTextFile(path_, whole + torn).ok());
  EXPECT_EQ(TornLastLogLine(path_), torn);
  SearchLog log;
  Status opened = log.Open(path_, /*resume_at_sample=*/3);
  ASSERT_TRUE(opened.ok()) << opened.message();
  ASSERT_TRUE(log.Append(SampleRecord{3, 0, 0.25, true, -0.5, 0.25}).ok());
  ASSERT_TRUE(log.Flush().ok());
  StatusOr<std::vector<SampleRecord>> read = ReadSearchLog(path_);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 4u);
  EXPECT_EQ((*read)[3].step_time, 0.25);
  EXPECT_EQ(TornLastLogLine(path_), "");
}

// A whole last line, or a bad line before the last, is not a torn write:
// the log is not one this search wrote.
TEST_F(SearchLogTest, OtherBadLinesStillBlockAResume) {
  for (const std::string& text :
       {Line(0) + "{\"bes\n" + Line(1), Line(0) + "not a record\n",
        Line(0) + "[1, 2]"}) {
    SCOPED_TRACE(text);
    ASSERT_TRUE(WriteTextFile(path_, text).ok());
    SearchLog log;
    Status opened = log.Open(path_, /*resume_at_sample=*/1);
    ASSERT_FALSE(opened.ok());
    EXPECT_THAT(opened.message(),
                AnyOf(HasSubstr("a line that is not a sample record"),
                      HasSubstr(":2: malformed JSON")));
  }
  EXPECT_EQ(TornLastLogLine(path_), "");
  EXPECT_EQ(TornLastLogLine(path_ + ".missing"), "");
}

TEST_F(SearchLogTest, ALineThatNamesAKeyTwiceIsRefused) {
  ASSERT_TRUE(WriteTextFile(path_, Line(0) + "{\"sample\": 1, \"sample\": 0, "
                                             "\"wall_s\": 0}\n")
                  .ok());
  const std::string message = ReadSearchLog(path_).status().message();
  EXPECT_THAT(message, HasSubstr(path_ + ":2: top level: the key \"sample\" "
                                         "appears twice"));
  SearchLog log;
  EXPECT_THAT(log.Open(path_, 1).message(),
              HasSubstr("the key \"sample\" appears twice"));
}

}  // namespace
}  // namespace dplace
