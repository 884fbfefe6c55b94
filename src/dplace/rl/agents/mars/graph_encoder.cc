#include "dplace/rl/agents/mars/graph_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "dplace/io/file.h"
#include "dplace/io/json_parse.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

using nlohmann::json;

constexpr const char* kEncoderFormat = "dplace-graph-encoder";
constexpr int kEncoderVersion = 1;
constexpr int kPhases = 3;
constexpr int kSizeColumns = 6;  // FLOPs, bytes, persistent, output, memory,
                                 // op count.
constexpr int kShapeDims = 4;    // Of the largest output, innermost first.
constexpr int kDegreeColumns = 2;
constexpr int kPositionFrequencies = 4;
constexpr double kPi = 3.14159265358979323846;

// Divides every column of `m` by its largest absolute value.
void NormalizeColumns(std::vector<std::vector<double>>* m) {
  if (m->empty()) return;
  for (size_t c = 0; c < (*m)[0].size(); ++c) {
    double top = 0;
    for (const auto& row : *m) top = std::max(top, std::abs(row[c]));
    if (top <= 0) continue;
    for (auto& row : *m) row[c] /= top;
  }
}

// Slot of every op type: the kEncoderTypeSlots most frequent types (ties by
// type id) get their own, the rest share the last.
std::vector<int> TypeSlots(const Graph& graph) {
  const std::vector<int> by_count = OpTypesByFrequency(graph);
  const int num_types = static_cast<int>(by_count.size());
  std::vector<int> slot(num_types, kEncoderTypeSlots);
  for (int i = 0; i < num_types && i < kEncoderTypeSlots; ++i) {
    slot[by_count[i]] = i;
  }
  return slot;
}

torch::Tensor NormalizedAdjacency(const GroupGraph& groups) {
  const int64_t n = groups.num_groups;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(2 * groups.edges.size() + n);
  for (int64_t g = 0; g < n; ++g) pairs.push_back({g, g});
  for (const GroupEdge& e : groups.edges) {
    pairs.push_back({e.src, e.dst});
    pairs.push_back({e.dst, e.src});
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<double> degree(n, 0);
  for (const auto& [a, b] : pairs) degree[a] += 1;
  const int64_t nnz = static_cast<int64_t>(pairs.size());
  torch::Tensor indices = torch::empty({2, nnz}, torch::kInt64);
  torch::Tensor values = torch::empty({nnz}, torch::kFloat32);
  auto ia = indices.accessor<int64_t, 2>();
  auto va = values.accessor<float, 1>();
  for (int64_t i = 0; i < nnz; ++i) {
    const auto [a, b] = pairs[i];
    ia[0][i] = a;
    ia[1][i] = b;
    va[i] = static_cast<float>(1.0 / std::sqrt(degree[a] * degree[b]));
  }
  return torch::sparse_coo_tensor(indices, values, {n, n}).coalesce();
}

// A row permutation of n rows drawn from `rng` (Fisher-Yates).
torch::Tensor Permutation(int64_t n, std::mt19937_64* rng) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    std::uniform_int_distribution<int64_t> pick(0, i);
    std::swap(p[i], p[pick(*rng)]);
  }
  return torch::tensor(p, torch::kInt64);
}

std::string StringOf(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kUInt8).contiguous();
  const uint8_t* p = c.data_ptr<uint8_t>();
  return std::string(p, p + c.numel());
}

torch::Tensor TensorOf(const std::string& text) {
  torch::Tensor t =
      torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::copy(text.begin(), text.end(), t.data_ptr<uint8_t>());
  return t;
}

json InfoJson(const EncoderFileInfo& i) {
  return json{{"format", kEncoderFormat},
              {"version", kEncoderVersion},
              {"graph_name", i.graph_name},
              {"graph_hash", i.graph_hash},
              {"grouping", i.grouping},
              {"grouping_hash", i.grouping_hash},
              {"num_groups", i.num_groups},
              {"input_width", i.input_width},
              {"hidden", i.hidden},
              {"layers", i.layers},
              {"pretrain_steps", i.pretrain_steps},
              {"final_loss", i.final_loss},
              {"accuracy", i.accuracy}};
}

// The discriminator of Deep Graph Infomax: logits h_i^T W s + b, [N].
class InfomaxDiscriminatorImpl : public torch::nn::Module {
 public:
  explicit InfomaxDiscriminatorImpl(int hidden)
      : bilinear_(register_module("bilinear",
                                  torch::nn::Bilinear(hidden, hidden, 1))) {}

  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& summary) {
    return bilinear_(h, summary.unsqueeze(0).expand_as(h)).squeeze(1);
  }

 private:
  torch::nn::Bilinear bilinear_;
};
TORCH_MODULE(InfomaxDiscriminator);

struct InfomaxLogits {
  torch::Tensor real;       // [N]
  torch::Tensor corrupted;  // [N]
};

InfomaxLogits Discriminate(GraphEncoder& encoder,
                           InfomaxDiscriminator& discriminator,
                           const EncoderInput& input,
                           const torch::Tensor& permutation) {
  const torch::Tensor h = encoder(input.features, input.adjacency);
  const torch::Tensor h_corrupted =
      encoder(input.features.index_select(0, permutation), input.adjacency);
  const torch::Tensor summary = torch::sigmoid(h.mean(0));
  return {discriminator(h, summary), discriminator(h_corrupted, summary)};
}

torch::Tensor InfomaxLoss(const InfomaxLogits& logits) {
  const torch::Tensor all = torch::cat({logits.real, logits.corrupted});
  const torch::Tensor labels = torch::cat(
      {torch::ones_like(logits.real), torch::zeros_like(logits.corrupted)});
  return torch::binary_cross_entropy_with_logits(all, labels);
}

}  // namespace

int EncoderInputWidth() {
  return kEncoderTypeSlots + 1 + kPhases + kSizeColumns + kShapeDims +
         kDegreeColumns + 1 + 2 * kPositionFrequencies;
}

EncoderInput MakeEncoderInput(const Graph& graph, const Grouping& grouping,
                              const GroupGraph& groups) {
  const int n = groups.num_groups;
  const std::vector<int> slot = TypeSlots(graph);
  const int type_columns = kEncoderTypeSlots + 1;
  std::vector<std::vector<double>> fractions(
      n, std::vector<double>(type_columns + kPhases, 0));
  std::vector<std::vector<double>> sizes(
      n, std::vector<double>(kSizeColumns + kShapeDims + kDegreeColumns, 0));
  std::vector<int64_t> largest(n, -1);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const GroupId g = grouping.group[op];
    const double share = 1.0 / groups.num_ops[g];
    fractions[g][slot[graph.op_type_id(op)]] += share;
    fractions[g][type_columns + static_cast<int>(graph.phase(op))] += share;
    for (int o = 0; o < graph.num_outputs(op); ++o) {
      const TensorInfo& t = graph.tensor(graph.output(op, o));
      if (t.bytes <= largest[g]) continue;
      largest[g] = t.bytes;
      for (int d = 0; d < kShapeDims; ++d) {
        const size_t rank = t.shape.size();
        sizes[g][kSizeColumns + d] =
            d < static_cast<int>(rank)
                ? std::log1p(static_cast<double>(
                      std::max<int64_t>(t.shape[rank - 1 - d], 0)))
                : 0;
      }
    }
  }
  std::vector<int> in_degree(n, 0), out_degree(n, 0);
  for (const GroupEdge& e : groups.edges) {
    ++out_degree[e.src];
    ++in_degree[e.dst];
  }
  for (GroupId g = 0; g < n; ++g) {
    std::vector<double>& s = sizes[g];
    s[0] = std::log1p(groups.flops[g]);
    s[1] = std::log1p(static_cast<double>(groups.bytes_accessed[g]));
    s[2] = std::log1p(static_cast<double>(groups.persistent_bytes[g]));
    s[3] = std::log1p(static_cast<double>(groups.output_bytes[g]));
    s[4] = std::log1p(static_cast<double>(groups.memory_estimate[g]));
    s[5] = std::log1p(static_cast<double>(groups.num_ops[g]));
    s[kSizeColumns + kShapeDims] = std::log1p(in_degree[g]);
    s[kSizeColumns + kShapeDims + 1] = std::log1p(out_degree[g]);
  }
  NormalizeColumns(&sizes);

  EncoderInput input;
  input.features = torch::zeros({n, EncoderInputWidth()});
  auto f = input.features.accessor<float, 2>();
  for (int position = 0; position < n; ++position) {
    const GroupId g = groups.order[position];
    int c = 0;
    for (double v : fractions[g]) f[g][c++] = static_cast<float>(v);
    for (double v : sizes[g]) f[g][c++] = static_cast<float>(v);
    const double p = n > 1 ? static_cast<double>(position) / (n - 1) : 0;
    f[g][c++] = static_cast<float>(p);
    for (int k = 0; k < kPositionFrequencies; ++k) {
      const double angle = kPi * p * (1 << k);
      f[g][c++] = static_cast<float>(std::sin(angle));
      f[g][c++] = static_cast<float>(std::cos(angle));
    }
  }
  input.adjacency = NormalizedAdjacency(groups);
  return input;
}

GraphEncoderImpl::GraphEncoderImpl(int input_size,
                                   const GraphEncoderConfig& config)
    : config_(config) {
  int in = input_size;
  for (int l = 0; l < config.layers; ++l) {
    const std::string id = std::to_string(l);
    weights_.push_back(register_module(
        "weight_" + id,
        torch::nn::Linear(
            torch::nn::LinearOptions(in, config.hidden).bias(false))));
    biases_.push_back(
        register_parameter("bias_" + id, torch::zeros({config.hidden})));
    activations_.push_back(register_module("prelu_" + id, torch::nn::PReLU()));
    in = config.hidden;
  }
}

torch::Tensor GraphEncoderImpl::forward(const torch::Tensor& features,
                                        const torch::Tensor& adjacency) {
  torch::Tensor h = features;
  for (size_t l = 0; l < weights_.size(); ++l) {
    h = activations_[l](torch::mm(adjacency, weights_[l](h)) + biases_[l]);
  }
  return h;
}

PretrainReport PretrainEncoder(GraphEncoder encoder, const EncoderInput& input,
                               const PretrainSettings& settings) {
  const int64_t n = input.features.size(0);
  InfomaxDiscriminator discriminator(encoder->config().hidden);
  std::vector<torch::Tensor> parameters = encoder->parameters();
  for (const torch::Tensor& p : discriminator->parameters()) {
    parameters.push_back(p);
  }
  torch::optim::Adam optimizer(
      parameters, torch::optim::AdamOptions(settings.learning_rate));
  std::mt19937_64 rng(settings.seed);
  PretrainReport report;
  for (int step = 0; step < settings.steps; ++step) {
    optimizer.zero_grad();
    const torch::Tensor loss = InfomaxLoss(
        Discriminate(encoder, discriminator, input, Permutation(n, &rng)));
    report.losses.push_back(loss.item<double>());
    loss.backward();
    optimizer.step();
  }
  torch::NoGradGuard no_grad;
  const InfomaxLogits logits =
      Discriminate(encoder, discriminator, input, Permutation(n, &rng));
  report.final_loss = InfomaxLoss(logits).item<double>();
  const int64_t right = (logits.real > 0).sum().item<int64_t>() +
                        (logits.corrupted < 0).sum().item<int64_t>();
  report.accuracy = static_cast<double>(right) / (2 * n);
  return report;
}

std::string GroupingHash(const Grouping& grouping) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits.
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint64_t>(grouping.num_groups));
  for (GroupId g : grouping.group) mix(static_cast<uint64_t>(g));
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(h));
  return buf;
}

Status SaveEncoder(const std::string& path, GraphEncoder encoder,
                   const EncoderFileInfo& info) {
  // In memory: LibTorch's writer reports a failed write from its
  // destructor, where an exception ends the process.
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", TensorOf(InfoJson(info).dump()));
    torch::serialize::OutputArchive weights;
    encoder->save(weights);
    archive.write("encoder", weights);
    archive.save_to(bytes);
  } catch (const std::exception& e) {
    return InvalidArgumentError("encoder " + path +
                                ": cannot write: " + FirstLine(e.what()));
  }
  return WriteTextFile(path, bytes.str()).WithPrefix("encoder");
}

StatusOr<EncoderFileInfo> LoadEncoder(const std::string& path,
                                      const EncoderFileInfo& expected,
                                      GraphEncoder encoder) {
  const std::string where = "encoder " + path + ": ";
  torch::serialize::InputArchive archive;
  json meta;
  try {
    archive.load_from(path);
    torch::Tensor meta_tensor;
    if (!archive.try_read("meta", meta_tensor)) {
      return InvalidArgumentError(where +
                                  "not a dplace encoder file (no metadata)");
    }
    StatusOr<json> parsed = ParseJson(StringOf(meta_tensor), where + "meta");
    if (!parsed.ok()) return parsed.status();
    meta = std::move(parsed).value();
  } catch (const std::exception& e) {
    return InvalidArgumentError(
        where +
        "cannot read a dplace encoder file from it (missing, corrupt or not "
        "an encoder): " +
        FirstLine(e.what()));
  }
  if (!meta.is_object() || meta.value("format", "") != kEncoderFormat) {
    return InvalidArgumentError(where + "not a dplace encoder file");
  }
  if (meta.value("version", 0) != kEncoderVersion) {
    return InvalidArgumentError(
        where + "version " + meta.value("version", json()).dump() +
        ", expected " + std::to_string(kEncoderVersion));
  }
  const json want = InfoJson(expected);
  const std::string redo =
      " (pre-train one for this model and these options with `dplace "
      "pretrain`)";
  for (const char* key : {"graph_hash", "grouping", "num_groups",
                          "grouping_hash", "input_width", "hidden", "layers"}) {
    if (!meta.contains(key)) {
      return InvalidArgumentError(where + "no field \"" + key + "\"");
    }
    if (meta[key] != want[key]) {
      std::string what = std::string(key) + " is " + meta[key].dump() +
                         ", but this search needs " + want[key].dump();
      if (std::string(key) == "graph_hash") {
        what = "pre-trained on graph " + meta.value("graph_name", "?") +
               " (hash " + meta[key].get<std::string>() +
               "), but this search places graph " + expected.graph_name +
               " (hash " + expected.graph_hash + ")";
      }
      return InvalidArgumentError(where + what + redo);
    }
  }
  try {
    torch::serialize::InputArchive weights;
    archive.read("encoder", weights);
    encoder->load(weights);
  } catch (const std::exception& e) {
    return InvalidArgumentError(where +
                                "corrupt weights: " + FirstLine(e.what()));
  }
  EncoderFileInfo info = expected;
  info.graph_name = meta.value("graph_name", "");
  info.pretrain_steps = meta.value("pretrain_steps", 0);
  info.final_loss = meta.value("final_loss", 0.0);
  info.accuracy = meta.value("accuracy", 0.0);
  return info;
}

}  // namespace dplace
