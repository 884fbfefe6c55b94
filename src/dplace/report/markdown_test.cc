#include "dplace/report/markdown.h"

#include <gtest/gtest.h>

namespace dplace {
namespace {

TEST(MarkdownTableTest, HeaderRuleAndRowsWithAlignment) {
  MarkdownTable table({{"method"}, {"step time (s)", Align::kRight}});
  table.AddColumn({"note"});
  table.AddRow({"m-etf", "0.9105", ""});
  table.AddRow({"single-gpu", "OOM", "out of memory"});
  EXPECT_EQ(table.ToString(),
            "| method | step time (s) | note |\n"
            "|---|---:|---|\n"
            "| m-etf | 0.9105 |  |\n"
            "| single-gpu | OOM | out of memory |\n");
}

TEST(MarkdownTableTest, WithoutRowsIsTheHeaderAlone) {
  EXPECT_EQ(MarkdownTable({{"a"}, {"b"}}).ToString(), "| a | b |\n|---|---|\n");
}

TEST(MarkdownTableTest, CellTurnsPipesIntoSlashes) {
  EXPECT_EQ(MarkdownCell("a|b||c"), "a/b//c");
}

}  // namespace
}  // namespace dplace
