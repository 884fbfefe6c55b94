// Markdown tables: the one way dplace writes a table (place --method all,
// zoo list --stats, bench, its claims, fidelity).
//
//   MarkdownTable table({{"method"}, {"step time (s)", Align::kRight}});
//   table.AddRow({"m-etf", "0.9105"});
//   out << table.ToString();
//   // | method | step time (s) |
//   // |---|---:|
//   // | m-etf | 0.9105 |
#ifndef DPLACE_REPORT_MARKDOWN_H_
#define DPLACE_REPORT_MARKDOWN_H_

#include <string>
#include <utility>
#include <vector>

namespace dplace {

enum class Align { kLeft, kRight };

struct MarkdownColumn {
  std::string header;
  Align align = Align::kLeft;
};

class MarkdownTable {
 public:
  explicit MarkdownTable(std::vector<MarkdownColumn> columns)
      : columns_(std::move(columns)) {}

  void AddColumn(MarkdownColumn column) {
    columns_.push_back(std::move(column));
  }
  // One cell per column, as given: pass text through MarkdownCell where it
  // may hold a '|'. REQUIRES: as many cells as columns.
  void AddRow(std::vector<std::string> cells);

  // The header, the alignment rule and the rows, each line ending in '\n'.
  std::string ToString() const;

 private:
  std::vector<MarkdownColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` safe in a cell: each '|' becomes '/'.
std::string MarkdownCell(std::string text);

}  // namespace dplace

#endif  // DPLACE_REPORT_MARKDOWN_H_
