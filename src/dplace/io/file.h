// Whole-file reads and writes with errors that name the file.
#ifndef DPLACE_IO_FILE_H_
#define DPLACE_IO_FILE_H_

#include <string>

#include "dplace/util/status.h"

namespace dplace {

StatusOr<std::string> ReadTextFile(const std::string& path);
Status WriteTextFile(const std::string& path, const std::string& contents);

}  // namespace dplace

#endif  // DPLACE_IO_FILE_H_
