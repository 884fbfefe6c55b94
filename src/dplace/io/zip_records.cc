#include "dplace/io/zip_records.h"

#include <unzip.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

namespace dplace {
namespace {

// minizip's file functions over bytes in memory.
struct MemoryFile {
  std::string_view bytes;
  uint64_t position = 0;
};

voidpf Open(voidpf opaque, const void* /*name*/, int /*mode*/) {
  return opaque;
}

uLong Read(voidpf /*opaque*/, voidpf stream, void* buf, uLong size) {
  auto* file = static_cast<MemoryFile*>(stream);
  if (file->position >= file->bytes.size()) return 0;
  const uint64_t n =
      std::min<uint64_t>(size, file->bytes.size() - file->position);
  std::memcpy(buf, file->bytes.data() + file->position, n);
  file->position += n;
  return static_cast<uLong>(n);
}

uLong Write(voidpf, voidpf, const void*, uLong) { return 0; }

ZPOS64_T Tell(voidpf /*opaque*/, voidpf stream) {
  return static_cast<MemoryFile*>(stream)->position;
}

long Seek(voidpf /*opaque*/, voidpf stream, ZPOS64_T offset, int origin) {
  auto* file = static_cast<MemoryFile*>(stream);
  uint64_t base = 0;
  switch (origin) {
    case ZLIB_FILEFUNC_SEEK_SET:
      base = 0;
      break;
    case ZLIB_FILEFUNC_SEEK_CUR:
      base = file->position;
      break;
    case ZLIB_FILEFUNC_SEEK_END:
      base = file->bytes.size();
      break;
    default:
      return -1;
  }
  if (offset > file->bytes.size() || base > file->bytes.size() - offset) {
    return -1;
  }
  file->position = base + offset;
  return 0;
}

int Close(voidpf, voidpf) { return 0; }
int Error(voidpf, voidpf) { return 0; }

// Deflate's largest compression ratio, and a compressed size that cannot
// be part of an archive held in memory (so the product does not overflow).
constexpr uint64_t kDeflateRatio = 1032;
constexpr uint64_t kMostCompressed = uint64_t{1} << 48;

struct UnzCloser {
  void operator()(void* file) const { unzClose(file); }
};

}  // namespace

StatusOr<std::vector<ZipRecord>> ListZipRecords(std::string_view archive) {
  MemoryFile file{archive, 0};
  zlib_filefunc64_def functions{};
  functions.zopen64_file = Open;
  functions.zread_file = Read;
  functions.zwrite_file = Write;
  functions.ztell64_file = Tell;
  functions.zseek64_file = Seek;
  functions.zclose_file = Close;
  functions.zerror_file = Error;
  functions.opaque = &file;
  std::unique_ptr<void, UnzCloser> zip(unzOpen2_64("", &functions));
  if (zip == nullptr) return InvalidArgumentError("not a ZIP archive");

  std::vector<ZipRecord> records;
  std::set<std::string> names;
  uint64_t compressed = 0;  // <= archive.size()
  std::vector<char> name;
  for (int status = unzGoToFirstFile(zip.get());
       status != UNZ_END_OF_LIST_OF_FILE; status = unzGoToNextFile(zip.get())) {
    unz_file_info64 info{};
    if (status == UNZ_OK) {
      status = unzGetCurrentFileInfo64(zip.get(), &info, nullptr, 0, nullptr, 0,
                                       nullptr, 0);
    }
    if (status == UNZ_OK) {
      name.resize(info.size_filename);
      status = unzGetCurrentFileInfo64(zip.get(), &info, name.data(),
                                       name.size(), nullptr, 0, nullptr, 0);
    }
    const std::string where = "record " + std::to_string(records.size() + 1);
    if (status != UNZ_OK) {
      return InvalidArgumentError(where + ": a corrupt ZIP directory entry");
    }
    ZipRecord record{std::string(name.begin(), name.end()),
                     info.uncompressed_size};
    const std::string shown = where + " (" + record.name.substr(0, 80) + ")";
    // What the record's bytes can hold: stored, its size; deflated (as
    // torch::save writes code), at most 1032 times its compressed size,
    // deflate's largest ratio.
    uint64_t most = 0;
    if (info.compression_method == 0) {
      most = info.compressed_size;
    } else if (info.compression_method == Z_DEFLATED) {
      most = info.compressed_size > kMostCompressed
                 ? kMostCompressed * kDeflateRatio
                 : info.compressed_size * kDeflateRatio;
    } else {
      return InvalidArgumentError(shown + " uses compression method " +
                                  std::to_string(info.compression_method) +
                                  "; torch::save stores or deflates");
    }
    if (info.compressed_size > archive.size() - compressed ||
        record.size > most) {
      return InvalidArgumentError(
          shown + " claims " + std::to_string(record.size) + " bytes from " +
          std::to_string(info.compressed_size) +
          " compressed, more than the archive's " +
          std::to_string(archive.size()) + " bytes can hold");
    }
    if (!names.insert(record.name).second) {
      return InvalidArgumentError(shown + " repeats a record's name");
    }
    compressed += info.compressed_size;
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace dplace
