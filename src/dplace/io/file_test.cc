// Whole-file writes that leave the old file or the new one, checksummed
// checkpoint files, and the lock that keeps a second writer off an output.
#include "dplace/io/file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "dplace/testing/temp_dir.h"

namespace dplace {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDir("dplace_file_test"); }
  void TearDown() override { RemoveTree(dir_); }

  std::string dir_;
};

// Makes every write past `bytes` of a file fail (EFBIG) while it lives: a
// disk that fills up, without needing one.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_;
  void (*old_handler_)(int);
};

TEST_F(FileTest, WriteReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = dir_ + "/out.json";
  ASSERT_TRUE(WriteTextFile(path, "old").ok());
  ASSERT_TRUE(WriteTextFile(path, "new contents").ok());
  EXPECT_EQ(*ReadTextFile(path), "new contents");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// A disk that fills up while writing: the old file is intact, the
// temporary is gone, and the error names the file and the reason.
TEST_F(FileTest, FailedWriteKeepsTheOldFileAndRemovesTheTemporary) {
  const std::string path = dir_ + "/out.json";
  ASSERT_TRUE(WriteTextFile(path, "old").ok());
  Status s;
  {
    FileSizeLimit limit(4096);
    s = WriteTextFile(path, std::string(10000, 'x'));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), AllOf(HasSubstr(path + ": cannot write: "),
                                 HasSubstr("File too large")));
  EXPECT_EQ(*ReadTextFile(path), "old");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(FileTest, WriteIntoAMissingFolderNamesThePath) {
  const std::string path = dir_ + "/no/such/folder/p.json";
  Status s = WriteTextFile(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), AllOf(HasSubstr(path + ": cannot write: "),
                                 HasSubstr("No such file or directory")));
}

// A device is written in place, never replaced by a regular file.
TEST_F(FileTest, DevNullIsWrittenInPlace) {
  ASSERT_TRUE(WriteTextFile("/dev/null", "discarded").ok());
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(OutputLock::Acquire("/dev/null").ok());
  EXPECT_FALSE(fs::exists("/dev/null.lock"));
}

TEST_F(FileTest, ChecksummedFileRoundTrips) {
  const std::string path = dir_ + "/c.ckpt";
  const std::string contents("binary\0\n\xff contents", 19);
  ASSERT_TRUE(WriteChecksummedFile(path, contents).ok());
  StatusOr<std::string> read = ReadChecksummedFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, contents);
  EXPECT_THAT(*ReadTextFile(path), HasSubstr("\ndplace-crc32 "));
}

// Every byte of the file matters: one changed anywhere (contents or
// checksum line) is refused, as is a file cut short or never checksummed.
TEST_F(FileTest, EveryChangedByteAndCutAreRefused) {
  const std::string file =
      WithChecksum("{\"samples\": 24, \"rng\": \"5 7\"}\n");
  for (size_t i = 0; i < file.size(); ++i) {
    for (int bit : {0x01, 0x20, 0x80}) {
      std::string bad = file;
      bad[i] = static_cast<char>(bad[i] ^ bit);
      StatusOr<std::string> read = VerifyChecksum("c.ckpt", bad);
      ASSERT_FALSE(read.ok()) << "byte " << i << " ^ " << bit;
      EXPECT_THAT(read.status().message(), HasSubstr("c.ckpt: "));
    }
  }
  for (size_t size = 0; size < file.size(); ++size) {
    EXPECT_FALSE(VerifyChecksum("c.ckpt", file.substr(0, size)).ok()) << size;
  }
  std::string other = file;
  other[other.size() - 2] = other[other.size() - 2] == '0' ? '1' : '0';
  EXPECT_THAT(VerifyChecksum("c.ckpt", other).status().message(),
              HasSubstr("c.ckpt: checksum mismatch: the file is corrupt"));
  EXPECT_THAT(
      VerifyChecksum("c.ckpt", "{\"samples\": 24}\n").status().message(),
      HasSubstr("c.ckpt: no dplace checksum line at its end"));
}

TEST_F(FileTest, ASecondWriterIsRefusedUntilTheFirstReleases) {
  const std::string path = dir_ + "/log.jsonl";
  StatusOr<OutputLock> first = OutputLock::Acquire(path);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->held());
  EXPECT_TRUE(fs::exists(path + ".lock"));
  StatusOr<OutputLock> second = OutputLock::Acquire(path);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(),
              AllOf(HasSubstr(path + ": another process is writing it"),
                    HasSubstr(path + ".lock")));
  *first = OutputLock();  // Released.
  EXPECT_FALSE(fs::exists(path + ".lock"));
  EXPECT_TRUE(OutputLock::Acquire(path).ok());
  EXPECT_FALSE(fs::exists(path + ".lock"));
}

// A lock file left behind (a killed process) does not block a writer.
TEST_F(FileTest, AStaleLockFileIsTakenOver) {
  const std::string path = dir_ + "/p.json";
  ASSERT_TRUE(WriteTextFile(path + ".lock", "").ok());
  EXPECT_TRUE(OutputLock::Acquire(path).ok());
}

TEST_F(FileTest, OutputsThatCannotBeWrittenAreRefusedBeforehand) {
  StatusOr<OutputLock> missing = OutputLock::Acquire(dir_ + "/no/p.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              AllOf(HasSubstr(dir_ + "/no/p.json: cannot write there: "),
                    HasSubstr("No such file or directory")));
  StatusOr<OutputLock> folder = OutputLock::Acquire(dir_);
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(folder.status().message(), HasSubstr("it is a folder"));
}

}  // namespace
}  // namespace dplace
