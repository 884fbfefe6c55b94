// For tests: a strict well-formedness check of XML (and of the XHTML-style
// HTML the reports write), counting the elements by name. Not a general
// parser: no DTDs, CDATA or processing instructions beyond a leading
// <!DOCTYPE ...>.
#ifndef DPLACE_TESTING_XML_CHECK_H_
#define DPLACE_TESTING_XML_CHECK_H_

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dplace {
namespace testing_xml {

struct XmlCheck {
  std::string error;  // Empty when well-formed: "line 12: ...".
  std::map<std::string, int> elements;  // Count of each element name.
  bool ok() const { return error.empty(); }
};

inline XmlCheck CheckXml(const std::string& text) {
  XmlCheck result;
  std::vector<std::string> stack;
  size_t i = 0;
  int roots = 0;
  auto line = [&](size_t pos) {
    int n = 1;
    for (size_t k = 0; k < pos && k < text.size(); ++k) n += text[k] == '\n';
    return n;
  };
  auto fail = [&](size_t pos, const std::string& message) {
    result.error = "line " + std::to_string(line(pos)) + ": " + message;
    return result;
  };
  auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
           c == '_' || c == ':' || c == '.';
  };
  // An entity at text[pos] == '&'; returns its length or 0.
  auto entity = [&](size_t pos) -> size_t {
    const size_t end = text.find(';', pos);
    if (end == std::string::npos || end - pos > 10) return 0;
    const std::string name = text.substr(pos + 1, end - pos - 1);
    static const std::set<std::string> known = {"amp", "lt", "gt", "quot",
                                                "apos"};
    if (known.count(name)) return end - pos + 1;
    if (name.size() > 1 && name[0] == '#') {
      const bool hex = name[1] == 'x';
      for (size_t k = hex ? 2 : 1; k < name.size(); ++k) {
        if (hex ? !std::isxdigit(static_cast<unsigned char>(name[k]))
                : !std::isdigit(static_cast<unsigned char>(name[k]))) {
          return 0;
        }
      }
      return name.size() > (hex ? 2u : 1u) ? end - pos + 1 : 0;
    }
    return 0;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '&') {
      const size_t n = entity(i);
      if (n == 0) return fail(i, "bad entity or bare '&'");
      i += n;
      continue;
    }
    if (c != '<') {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(c))) {
        return fail(i, "text outside the root element");
      }
      ++i;
      continue;
    }
    if (text.compare(i, 4, "<!--") == 0) {
      const size_t end = text.find("-->", i + 4);
      if (end == std::string::npos) return fail(i, "unterminated comment");
      i = end + 3;
      continue;
    }
    if (text.compare(i, 9, "<!DOCTYPE") == 0) {
      if (roots > 0 || !stack.empty()) return fail(i, "misplaced DOCTYPE");
      const size_t end = text.find('>', i);
      if (end == std::string::npos) return fail(i, "unterminated DOCTYPE");
      i = end + 1;
      continue;
    }
    const bool closing = i + 1 < text.size() && text[i + 1] == '/';
    size_t k = i + (closing ? 2 : 1);
    const size_t name_start = k;
    while (k < text.size() && is_name(text[k])) ++k;
    const std::string name = text.substr(name_start, k - name_start);
    if (name.empty()) return fail(i, "'<' not starting a tag");
    if (closing) {
      while (k < text.size() &&
             std::isspace(static_cast<unsigned char>(text[k])))
        ++k;
      if (k >= text.size() || text[k] != '>') return fail(i, "bad end tag");
      if (stack.empty() || stack.back() != name) {
        return fail(i, "</" + name + "> closes " +
                           (stack.empty() ? std::string("nothing")
                                          : "<" + stack.back() + ">"));
      }
      stack.pop_back();
      i = k + 1;
      continue;
    }
    std::set<std::string> attributes;
    bool self_closing = false;
    while (true) {
      while (k < text.size() &&
             std::isspace(static_cast<unsigned char>(text[k])))
        ++k;
      if (k >= text.size()) return fail(i, "unterminated tag <" + name + ">");
      if (text[k] == '>') break;
      if (text.compare(k, 2, "/>") == 0) {
        self_closing = true;
        ++k;
        break;
      }
      const size_t a = k;
      while (k < text.size() && is_name(text[k])) ++k;
      const std::string attribute = text.substr(a, k - a);
      if (attribute.empty()) return fail(k, "bad attribute in <" + name + ">");
      if (!attributes.insert(attribute).second) {
        return fail(k, "attribute " + attribute + " twice in <" + name + ">");
      }
      if (k >= text.size() || text[k] != '=') {
        return fail(k, "attribute " + attribute + " without a value");
      }
      ++k;
      const char quote = k < text.size() ? text[k] : 0;
      if (quote != '"' && quote != '\'') {
        return fail(k, "unquoted value of " + attribute);
      }
      const size_t end = text.find(quote, k + 1);
      if (end == std::string::npos) return fail(k, "unterminated value");
      for (size_t v = k + 1; v < end; ++v) {
        if (text[v] == '<') return fail(v, "'<' in an attribute value");
        if (text[v] == '&' && entity(v) == 0) {
          return fail(v, "bad entity in an attribute value");
        }
      }
      k = end + 1;
    }
    if (stack.empty()) {
      if (++roots > 1) return fail(i, "a second root element <" + name + ">");
    }
    ++result.elements[name];
    if (!self_closing) stack.push_back(name);
    i = k + 1;
  }
  if (!stack.empty())
    return fail(text.size(), "<" + stack.back() + "> not closed");
  if (roots == 0) return fail(0, "no root element");
  return result;
}

}  // namespace testing_xml
}  // namespace dplace

#endif  // DPLACE_TESTING_XML_CHECK_H_
