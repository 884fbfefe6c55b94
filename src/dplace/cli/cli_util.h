// Helpers the dplace commands share: their one-line errors, loading
// --model, the --graph/--model flags, the simulated-step printout, columns.
#ifndef DPLACE_CLI_CLI_UTIL_H_
#define DPLACE_CLI_CLI_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/io/file.h"
#include "dplace/method/search.h"
#include "dplace/model/load_model.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/status.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace dplace {

// Prints `status` as the one line "dplace: error: ..." on `err`; returns
// kExitBadInput.
int Fail(std::ostream& err, const Status& status);

// The files a command writes, as {flag, path}; an empty path is skipped.
using OutputFlags = std::vector<std::pair<std::string, std::string>>;
// Locks every output of a command before its work starts (OutputLock): a
// path that cannot be written, one another dplace is writing, or one named
// by two flags is refused at once, not after a search; the error begins
// with the flag. The locks are held until the returned vector goes.
StatusOr<std::vector<OutputLock>> ClaimOutputs(const OutputFlags& outputs);

// The graph of a --model spec read with `options` (see LoadModel); the
// model's warnings go to *warnings when given.
StatusOr<Graph> LoadGraph(const std::string& spec,
                          const ModelOptions& options = {},
                          std::ostream* warnings = nullptr);

// Adds how --model is read to `cmd`: --batch, --optimizer and
// --keep-merged-parameters (ModelOptions).
void AddModelOptionFlags(CLI::App* cmd, ModelOptions* options);

// One line on the model read: the batch in effect, the optimizer, and its
// parameters in numbers as well as bytes, e.g. "model: batch 8, sgd;
// 133,888 parameters in 48 tensors (535.55 kB)".
std::string DescribeModel(const LoadedModel& model);

// The model's warnings (an ONNX import's), one "dplace: warning: " line
// each.
void PrintWarnings(const std::vector<std::string>& warnings, std::ostream& err);

// Adds --graph and --model to `cmd`, both bound to `spec`; one of them is
// required unless `required` is false.
void AddGraphFlags(CLI::App* cmd, std::string* spec, bool required = true);

// Checks of a numeric flag whose error says in one line what is allowed
// ("--seed: -1 is not allowed: expected a whole number from 0 to
// 18446744073709551615"), where CLI11's own print a 309-digit range.
// WholeNumber: digits only, no sign, in [min, max].
CLI::Validator WholeNumber(uint64_t min, uint64_t max);
// A number above `min` (AtLeast: or equal to it).
CLI::Validator NumberAbove(double min);
CLI::Validator NumberAtLeast(double min);

// `s` padded with spaces to `width` characters, or followed by one space
// when it is as wide or wider, so that columns never run together.
std::string PadRight(std::string s, size_t width);

// Step time, feasibility, per-device load and memory, bytes moved and the
// lower bounds of a simulated step.
void PrintSimResult(const Cluster& c, const SimResult& r, std::ostream& out);

// A search's progress as one line rewritten in place (it starts with a
// carriage return and ends without a newline): a bar when the budget has
// samples, the samples, the wall time and the best step time so far.
void PrintSearchProgress(const SearchProgress& p, std::ostream& err);

// The command line, for the record in reports.
std::string CommandLine(int argc, const char* const* argv);
// "dplace" and `args`, quoted where a shell needs it.
std::string CommandLine(const std::vector<std::string>& args);

}  // namespace dplace

#endif  // DPLACE_CLI_CLI_UTIL_H_
