#include "dplace/io/json_parse.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <utility>
#include <vector>

namespace dplace {
namespace {

using nlohmann::json;

// `key` as a step of a path: ".name" (or "name" first), or `["a/b"]` for
// a key that is not a name (an op's, in a placement).
std::string PathStep(const std::string& key, bool first) {
  const bool name =
      !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
      std::all_of(key.begin(), key.end(),
                  [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  if (name) return (first ? "" : ".") + key;
  // Cut at 80 bytes, a key may end inside a UTF-8 sequence: the cut one is
  // written as U+FFFD rather than thrown over.
  return "[" +
         json(key.substr(0, 80))
             .dump(-1, ' ', false, json::error_handler_t::replace) +
         "]";
}

// Builds the document from nlohmann's SAX events, as its own DOM parser
// does, but refuses a key its object already has.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json* root) : root_(root) {}

  bool null() { return Add(nullptr); }
  bool boolean(bool value) { return Add(value); }
  bool number_integer(json::number_integer_t value) { return Add(value); }
  bool number_unsigned(json::number_unsigned_t value) { return Add(value); }
  bool number_float(json::number_float_t value, const json::string_t&) {
    return Add(value);
  }
  bool string(json::string_t& value) { return Add(std::move(value)); }
  bool binary(json::binary_t& value) { return Add(std::move(value)); }
  bool start_object(std::size_t) {
    stack_.push_back(Place(json::value_t::object));
    return true;
  }
  bool key(json::string_t& key) {
    json::object_t& object = stack_.back()->get_ref<json::object_t&>();
    auto [it, inserted] = object.emplace(key, nullptr);
    if (!inserted) {
      error_ = PathOf(stack_.size() - 1) + ": the key \"" + key.substr(0, 80) +
               "\" appears twice (each key may appear once in an object)";
      return false;
    }
    element_ = &it->second;
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    stack_.push_back(Place(json::value_t::array));
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse
    // error at line 3, column 5: ..."; keep what follows the id.
    error_ = e.what();
    const size_t pos = error_.find("] ");
    if (pos != std::string::npos) error_ = error_.substr(pos + 2);
    error_ = "malformed JSON: " + error_;
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  // Puts `value` where the next value goes (the root, the end of the open
  // array, or the open object's last key); returns where it is.
  template <typename V>
  json* Place(V&& value) {
    if (stack_.empty()) {
      *root_ = json(std::forward<V>(value));
      return root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.get_ref<json::array_t&>().emplace_back(std::forward<V>(value));
      return &top.get_ref<json::array_t&>().back();
    }
    *element_ = json(std::forward<V>(value));
    return element_;
  }
  template <typename V>
  bool Add(V&& value) {
    Place(std::forward<V>(value));
    return true;
  }

  // The path of stack_[depth] from the root ("ops[3].outputs[0]"), found
  // from the addresses of the open values: only when reporting an error.
  std::string PathOf(size_t depth) const {
    std::string path;
    for (size_t i = 1; i <= depth; ++i) {
      const json& parent = *stack_[i - 1];
      if (parent.is_array()) {
        const json::array_t& array = parent.get_ref<const json::array_t&>();
        path += "[" + std::to_string(stack_[i] - array.data()) + "]";
        continue;
      }
      for (const auto& [key, value] : parent.get_ref<const json::object_t&>()) {
        if (&value == stack_[i]) {
          path += PathStep(key, path.empty());
          break;
        }
      }
    }
    return path.empty() ? "top level" : path;
  }

  json* root_;
  std::vector<json*> stack_;  // The open objects and arrays.
  json* element_ = nullptr;   // The value of the open object's last key.
  std::string error_;
};

}  // namespace

StatusOr<json> ParseJson(const std::string& text, const std::string& source) {
  json root;
  StrictDomBuilder builder(&root);
  if (!json::sax_parse(text, &builder)) {
    return InvalidArgumentError(source + ": " + builder.error());
  }
  return root;
}

}  // namespace dplace
