// printf-style formatting of one number, for messages and the commands'
// output.
#ifndef DPLACE_UTIL_FORMAT_H_
#define DPLACE_UTIL_FORMAT_H_

#include <algorithm>
#include <cstdio>
#include <string>

namespace dplace {

// `printf_format` takes one double, e.g. "%.3f".
inline std::string Format(const char* printf_format, double value) {
  // Large enough for most; "%f" of a large value is never cut short.
  std::string text(64, '\0');
  const int size =
      std::snprintf(text.data(), text.size(), printf_format, value);
  if (size >= static_cast<int>(text.size())) {
    text.resize(static_cast<size_t>(size) + 1);
    std::snprintf(text.data(), text.size(), printf_format, value);
  }
  text.resize(static_cast<size_t>(std::max(size, 0)));
  return text;
}

// Gigabytes (1e9 bytes), as memory capacities are stated: "11.81 GB".
inline std::string FormatBytes(double bytes) {
  return Format("%.2f GB", bytes / 1e9);
}

// Decimal units, the largest that keeps the number at 1 or more: "512 B",
// "2.05 kB", "3.10 MB", "11.81 GB".
inline std::string FormatBytesScaled(double bytes) {
  if (bytes < 1e3) return Format("%.0f B", bytes);
  if (bytes < 1e6) return Format("%.2f kB", bytes / 1e3);
  if (bytes < 1e9) return Format("%.2f MB", bytes / 1e6);
  return FormatBytes(bytes);
}

// The first line of `text` that is not blank: an exception's message
// (LibTorch's) goes on with a trace, and some begin with a newline. Never
// empty, so that an error never ends in an empty reason.
inline std::string FirstLine(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (text.find_first_not_of(" \t\r", start) < end) {
      return text.substr(start, end - start);
    }
    start = end + 1;
  }
  return "(no reason given)";
}

// An integer with thousands separators: "85,054,464".
inline std::string FormatCount(long long value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
    digits.insert(static_cast<size_t>(i), ",");
  }
  return (value < 0 ? "-" : "") + digits;
}

}  // namespace dplace

#endif  // DPLACE_UTIL_FORMAT_H_
