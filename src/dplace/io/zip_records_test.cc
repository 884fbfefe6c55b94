#include "dplace/io/zip_records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "dplace/io/file.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

const std::string kCheckpoints =
    std::string(DPLACE_SOURCE_DIR) + "/fuzz/seeds/checkpoint/";

std::string Checkpoint(const std::string& name) {
  StatusOr<std::string> bytes = ReadTextFile(kCheckpoints + name);
  EXPECT_TRUE(bytes.ok()) << name;
  return bytes.ok() ? *bytes : "";
}

// The offset of `name`'s central directory entry in `zip`.
size_t DirectoryEntry(const std::string& zip, const std::string& name) {
  const std::string signature("PK\x01\x02", 4);
  for (size_t i = zip.find(signature); i != std::string::npos;
       i = zip.find(signature, i + 4)) {
    if (zip.compare(i + 46, name.size(), name) == 0) return i;
  }
  ADD_FAILURE() << "no entry " << name;
  return 0;
}

void Put16(std::string* zip, size_t at, uint16_t value) {
  (*zip)[at] = static_cast<char>(value & 0xff);
  (*zip)[at + 1] = static_cast<char>(value >> 8);
}

void Put32(std::string* zip, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) {
    (*zip)[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

TEST(ZipRecordsTest, ListsWhatTorchSaveWrote) {
  const std::string zip = Checkpoint("post.ckpt");
  StatusOr<std::vector<ZipRecord>> records = ListZipRecords(zip);
  ASSERT_TRUE(records.ok()) << records.status().message();
  ASSERT_EQ(records->size(), 27u);
  EXPECT_EQ((*records)[0].name, "archive/data/0");
  EXPECT_EQ((*records)[0].size, 6777u);  // meta, the JSON of the loop state
  uint64_t total = 0;
  for (const ZipRecord& record : *records) total += record.size;
  EXPECT_EQ(total, 15682u);
}

TEST(ZipRecordsTest, RefusesARecordClaimingMoreThanItsBytes) {
  std::string zip = Checkpoint("post.ckpt");
  const size_t entry = DirectoryEntry(zip, "archive/data/1");
  Put32(&zip, entry + 24, 4000000000u);  // uncompressed size
  StatusOr<std::vector<ZipRecord>> records = ListZipRecords(zip);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().message(),
            "record 2 (archive/data/1) claims 4000000000 bytes from 288 "
            "compressed, more than the archive's 20878 bytes can hold");
}

TEST(ZipRecordsTest, RefusesAStoredRecordPastTheArchive) {
  std::string zip = Checkpoint("post.ckpt");
  const size_t entry = DirectoryEntry(zip, "archive/data/0");
  Put32(&zip, entry + 20, 30000);  // compressed size
  Put32(&zip, entry + 24, 30000);  // uncompressed size
  StatusOr<std::vector<ZipRecord>> records = ListZipRecords(zip);
  ASSERT_FALSE(records.ok());
  EXPECT_THAT(records.status().message(),
              HasSubstr("record 1 (archive/data/0) claims 30000 bytes"));
}

// Deflated code may inflate up to 1032 times (deflate's largest ratio),
// not more: the checkpoint fuzzer's 124 bytes claiming 4 GB.
TEST(ZipRecordsTest, BoundsADeflatedRecordByDeflatesRatio) {
  std::string zip = Checkpoint("post.ckpt");
  const std::string code = "archive/code/__torch__/___torch_mangle_4.py";
  const size_t entry = DirectoryEntry(zip, code);
  Put32(&zip, entry + 24, 123 * 1032);
  EXPECT_TRUE(ListZipRecords(zip).ok());
  Put32(&zip, entry + 24, 123 * 1032 + 1);
  StatusOr<std::vector<ZipRecord>> records = ListZipRecords(zip);
  ASSERT_FALSE(records.ok());
  EXPECT_THAT(records.status().message(),
              HasSubstr("claims 126937 bytes from 123 compressed"));

  const StatusOr<std::string> found = ReadTextFile(
      std::string(DPLACE_SOURCE_DIR) +
      "/testdata/fuzz-regressions/checkpoint/record-claiming-4-gb.ckpt");
  ASSERT_TRUE(found.ok());
  records = ListZipRecords(*found);
  ASSERT_FALSE(records.ok());
  EXPECT_THAT(records.status().message(),
              HasSubstr("(colocrl.ckpt/code/__torch__/___torch_mangle_29.py) "
                        "claims 4093640933 bytes from 124 compressed"));
}

TEST(ZipRecordsTest, RefusesOtherCompressionAndRepeatedNames) {
  std::string zip = Checkpoint("post.ckpt");
  std::string bzip2 = zip;
  Put16(&bzip2, DirectoryEntry(zip, "archive/data/2") + 10, 12);
  EXPECT_EQ(ListZipRecords(bzip2).status().message(),
            "record 3 (archive/data/2) uses compression method 12; "
            "torch::save stores or deflates");

  std::string twice = zip;
  twice[DirectoryEntry(zip, "archive/data/2") + 46 + 13] = '1';
  EXPECT_EQ(ListZipRecords(twice).status().message(),
            "record 3 (archive/data/1) repeats a record's name");
}

TEST(ZipRecordsTest, RefusesWhatIsNotAZipArchive) {
  for (const std::string& bytes :
       {std::string(), std::string("PK\x05\x06", 4), std::string(100, 'x')}) {
    EXPECT_EQ(ListZipRecords(bytes).status().message(), "not a ZIP archive");
  }
  const std::string zip = Checkpoint("post.ckpt");
  EXPECT_FALSE(ListZipRecords(zip.substr(0, zip.size() / 2)).ok());
}

}  // namespace
}  // namespace dplace
