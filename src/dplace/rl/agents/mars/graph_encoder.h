// Mars's graph encoder (Lan, Chen, Li, ICPP 2021): graph-convolution layers
// over the group graph, pre-trained self-supervised in the style of Deep
// Graph Infomax (Velickovic et al., ICLR 2019), then fine-tuned with the
// placer during the search.
//
//   EncoderInput input = MakeEncoderInput(graph, grouping, groups);
//   torch::manual_seed(seed);
//   GraphEncoder encoder(EncoderInputWidth(), GraphEncoderConfig{});
//   PretrainReport report = PretrainEncoder(encoder, input, {});
//   torch::Tensor h = encoder(input.features, input.adjacency);  // [G, H]
//
// Features of a group (one row per group, in group-id order): the fraction
// of its ops of each of the graph's most frequent op types (one slot for
// the rest), of each phase (forward, backward, update), log-scaled FLOPs,
// bytes accessed, persistent bytes, output bytes, memory estimate and op
// count, the log-scaled dims of its largest output, its log-scaled in- and
// out-degree in the group graph, and its position in the reading order
// (GroupGraph::order) as a fraction and sinusoids of it. Size columns are
// divided by their largest value, so every feature lies in [-1, 1].
//
// An encoder file (SaveEncoder) holds the weights and the metadata of the
// graph and grouping it was pre-trained on; LoadEncoder refuses a file of
// another graph, grouping or architecture with an error that says which.
#ifndef DPLACE_RL_AGENTS_MARS_GRAPH_ENCODER_H_
#define DPLACE_RL_AGENTS_MARS_GRAPH_ENCODER_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/grouping/grouping.h"
#include "dplace/util/status.h"

namespace dplace {

struct EncoderInput {
  torch::Tensor features;  // [G, EncoderInputWidth()] float.
  // [G, G] sparse COO float: D^-1/2 (A + I) D^-1/2 of the undirected group
  // graph A (an edge either way joins two groups) with self loops.
  torch::Tensor adjacency;
};

// Op types with a slot of their own (the graph's most frequent); the rest
// share one more slot.
constexpr int kEncoderTypeSlots = 24;

// Columns of EncoderInput::features; the same for every graph.
int EncoderInputWidth();

EncoderInput MakeEncoderInput(const Graph& graph, const Grouping& grouping,
                              const GroupGraph& groups);

struct GraphEncoderConfig {
  // Width of every graph-convolution layer (and of the embeddings).
  // Default: 128.
  int hidden = 128;
  // Graph-convolution layers. Default: 2.
  int layers = 2;
};

// H_{l+1} = PReLU(Â H_l W_l + b_l), H_0 = the features (Kipf & Welling's
// layer with DGI's PReLU).
class GraphEncoderImpl : public torch::nn::Module {
 public:
  GraphEncoderImpl(int input_size, const GraphEncoderConfig& config);

  // Node embeddings [G, hidden] of `features` [G, input_size] on
  // `adjacency` [G, G] (sparse or dense).
  torch::Tensor forward(const torch::Tensor& features,
                        const torch::Tensor& adjacency);

  const GraphEncoderConfig& config() const { return config_; }

 private:
  GraphEncoderConfig config_;
  std::vector<torch::nn::Linear> weights_;
  std::vector<torch::Tensor> biases_;
  std::vector<torch::nn::PReLU> activations_;
};
TORCH_MODULE(GraphEncoder);

struct PretrainSettings {
  // Adam steps on the Deep-Graph-Infomax objective. Default: 200.
  int steps = 200;
  // Adam's learning rate. Default: 0.001 (DGI's).
  double learning_rate = 0.001;
  // Seed of the corruptions (row permutations of the features).
  // Default: 1.
  uint64_t seed = 1;
};

struct PretrainReport {
  std::vector<double> losses;  // Binary cross entropy before each step.
  // Of a fresh real/corrupted pair after training, the fraction of nodes
  // the discriminator classifies right (real: D > 1/2, corrupted: < 1/2).
  double accuracy = 0;
  double final_loss = 0;  // Of that pair.
};

// Deep Graph Infomax: the corruption C shuffles the rows of the features
// (the graph stays), H = E(X, A) and H~ = E(C(X), A), the readout s =
// sigmoid(mean_i h_i), the discriminator D(h, s) = sigmoid(h^T W s + b),
// and the loss is the binary cross entropy of D on the N real (label 1)
// and N corrupted (label 0) nodes. Trains `encoder` in place (and a
// discriminator it then discards); weights are initialised from LibTorch's
// global generator, corruptions drawn from settings.seed only.
PretrainReport PretrainEncoder(GraphEncoder encoder, const EncoderInput& input,
                               const PretrainSettings& settings);

// What an encoder file says about itself.
struct EncoderFileInfo {
  std::string graph_name;
  std::string graph_hash;
  std::string grouping;  // The search's grouping setting, e.g. "colocation".
  std::string grouping_hash;  // GroupingHash of the groups.
  int num_groups = 0;
  int input_width = 0;
  int hidden = 0;
  int layers = 0;
  int pretrain_steps = 0;
  double final_loss = 0;
  double accuracy = 0;
};

// A stable hex digest of grouping.group.
std::string GroupingHash(const Grouping& grouping);

Status SaveEncoder(const std::string& path, GraphEncoder encoder,
                   const EncoderFileInfo& info);

// Loads `path` into `encoder`, whose architecture and graph are described
// by `expected` (its pretrain_steps, final_loss and accuracy are ignored).
// Errors: a missing or corrupt file, or one pre-trained on another graph,
// grouping or architecture. Returns the file's info.
StatusOr<EncoderFileInfo> LoadEncoder(const std::string& path,
                                      const EncoderFileInfo& expected,
                                      GraphEncoder encoder);

}  // namespace dplace

#endif  // DPLACE_RL_AGENTS_MARS_GRAPH_ENCODER_H_
