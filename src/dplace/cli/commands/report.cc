#include <CLI/CLI.hpp>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/io/file.h"
#include "dplace/report/html_report.h"

namespace dplace {
namespace {

// dplace report results.json -o report.html
int Report(const std::string& input, const std::string& output,
           std::ostream& out, std::ostream& err) {
  StatusOr<std::vector<OutputLock>> claims = ClaimOutputs({{"-o", output}});
  if (!claims.ok()) return Fail(err, claims.status());
  StatusOr<std::string> text = ReadTextFile(input);
  if (!text.ok()) return Fail(err, text.status());
  StatusOr<std::string> html = BenchReportHtml(*text, input);
  if (!html.ok()) return Fail(err, html.status());
  Status s = WriteTextFile(output, *html);
  if (!s.ok()) return Fail(err, s);
  out << "report: " << output << "\n";
  return kExitOk;
}

}  // namespace

CLI::App* AddReportCommand(CLI::App* parent, ReportFlags* flags) {
  auto* report = parent->add_subcommand(
      "report", "render a bench results JSON as a self-contained HTML page");
  report->add_option("results", flags->input, "results JSON of dplace bench")
      ->required();
  report->add_option("-o,--output", flags->output, "HTML page to write")
      ->required();
  return report;
}

int RunReport(const ReportFlags& flags, std::ostream& out, std::ostream& err) {
  return Report(flags.input, flags.output, out, err);
}

}  // namespace dplace
