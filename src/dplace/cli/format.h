// printf-style formatting of one number, for the commands' output.
#ifndef DPLACE_CLI_FORMAT_H_
#define DPLACE_CLI_FORMAT_H_

#include <cstdio>
#include <string>

namespace dplace {

// `format` takes one double, e.g. "%.3f".
inline std::string Format(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

}  // namespace dplace

#endif  // DPLACE_CLI_FORMAT_H_
