// The records of a search checkpoint's ZIP archive, listed by minizip
// before LibTorch reads it. LibTorch 1.13's PyTorchStreamReader allocates
// the size a record's directory entry claims before it reads the record: a
// 50 kB checkpoint claiming a 4 GB record made it allocate 4 GB (found by
// the checkpoint fuzzer). No torch include: the listing reads bytes only.
#ifndef DPLACE_IO_ZIP_RECORDS_H_
#define DPLACE_IO_ZIP_RECORDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/util/status.h"

namespace dplace {

struct ZipRecord {
  std::string name;  // As stored, with the archive's folder: "a.ckpt/data.pkl".
  uint64_t size = 0;
};

// The records of `archive` in the order of its central directory. An error
// says the bytes are not a ZIP archive, or names the first record that is
// not as torch::save writes it: stored or deflated; its compressed bytes
// within what the records before it left of the archive; a size no larger
// than those bytes hold (stored: their count; deflated: 1032 times it,
// deflate's largest ratio); a name no record before it has. So reading
// every record allocates at most 1032 times the archive's size.
StatusOr<std::vector<ZipRecord>> ListZipRecords(std::string_view archive);

}  // namespace dplace

#endif  // DPLACE_IO_ZIP_RECORDS_H_
