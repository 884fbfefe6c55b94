// A read-only view of a contiguous range, for C++17 (no std::span yet).
#ifndef DPLACE_UTIL_SPAN_H_
#define DPLACE_UTIL_SPAN_H_

#include <cstddef>
#include <vector>

namespace dplace {

template <typename T>
class Span {
 public:
  Span() = default;
  Span(const T* data, size_t size) : data_(data), size_(size) {}
  Span(const std::vector<T>& v)  // NOLINT: implicit, like std::span.
      : data_(v.data()), size_(v.size()) {}

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dplace

#endif  // DPLACE_UTIL_SPAN_H_
