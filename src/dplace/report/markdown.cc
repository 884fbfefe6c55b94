#include "dplace/report/markdown.h"

#include <algorithm>
#include <cassert>

namespace dplace {
namespace {

std::string Line(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const std::string& cell : cells) line += " " + cell + " |";
  return line + "\n";
}

}  // namespace

void MarkdownTable::AddRow(std::vector<std::string> cells) {
  assert(cells.size() == columns_.size());
  rows_.push_back(std::move(cells));
}

std::string MarkdownTable::ToString() const {
  std::vector<std::string> headers;
  std::string rule = "|";
  for (const MarkdownColumn& c : columns_) {
    headers.push_back(c.header);
    rule += c.align == Align::kRight ? "---:|" : "---|";
  }
  std::string out = Line(headers) + rule + "\n";
  for (const std::vector<std::string>& row : rows_) out += Line(row);
  return out;
}

std::string MarkdownCell(std::string text) {
  std::replace(text.begin(), text.end(), '|', '/');
  return text;
}

}  // namespace dplace
