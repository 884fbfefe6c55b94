// Placement policies: LibTorch modules that give a distribution over the
// device of every group, sampled a batch at a time.
//
//   - PlacementPolicyImpl: their abstract base, and the row blocks that
//     let a policy's workers share a batch;
//   - SoftmaxPolicy: an independent softmax per group (Post), parameters
//     u[g][d] starting at zero;
//   - GroupFeatures, the inputs of the sequence policies (ColocRL's
//     Seq2SeqPolicy in rl/agents/colocrl/, Mars's), and the attention step
//     their decoders share.
//
// Each is a FooImpl module with a TORCH_MODULE(Foo) holder, as LibTorch's
// own modules. Devices a group may not run on get probability 0 in every
// policy.
// Sampling draws from a caller's std::mt19937_64 only, so a search's
// randomness is one generator that a checkpoint can hold.
#ifndef DPLACE_RL_NETS_POLICY_H_
#define DPLACE_RL_NETS_POLICY_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/grouping/grouping.h"
#include "dplace/rl/nets/lstm.h"

namespace dplace {

class PlacementPolicyImpl : public torch::nn::Module {
 public:
  // allowed[g * num_devices + d]: group g may go to device d; every group
  // allows at least one device.
  PlacementPolicyImpl(int num_groups, int num_devices,
                      const std::vector<uint8_t>& allowed);

  int num_groups() const { return num_groups_; }
  int num_devices() const { return num_devices_; }

  // k placements decoded as one batch, without gradient: [k, G] int64, the
  // device of every group (groups by id).
  virtual torch::Tensor Sample(int k, std::mt19937_64* rng) = 0;

  // Log-probabilities of every device for every group, [k, G, D], given
  // the placements `actions` [k, G] (an autoregressive policy conditions
  // group g on the devices of the groups before it). Differentiable.
  // Disallowed devices get a log-probability of about -1e9 (probability 0).
  virtual torch::Tensor LogProbs(const torch::Tensor& actions) = 0;

  // LogProbs of the placements the last Sample drew, [k, G, D], kept from
  // sampling (the same weights and inputs, so the same values up to
  // rounding); undefined when the policy keeps none. For the update that
  // follows the sampling (PPO's old log-probabilities), not recomputed.
  virtual torch::Tensor SampledLogProbs() const { return {}; }

  // The part of a batch's loss that the placements `rows` ([n] int64,
  // indices into the batch) make, given their LogProbs [n, G, D].
  using RowsLoss = std::function<torch::Tensor(const torch::Tensor& log_probs,
                                               const torch::Tensor& rows)>;
  // Adds to the parameters' gradients those of the batch's loss: the sum
  // of `loss` over blocks of the rows of `actions` [k, G]. A policy that
  // splits its work between workers() threads overrides it; by default
  // one block, loss(LogProbs(actions), all rows).backward().
  virtual void BackwardRows(const torch::Tensor& actions, const RowsLoss& loss);

  // Threads that share a batch's k placements (Sample, BackwardRows) where
  // the policy splits them; each runs LibTorch's ops as the caller does.
  // Default: 1.
  void set_workers(int workers) { workers_ = workers < 1 ? 1 : workers; }
  int workers() const { return workers_; }

 protected:
  // [G, D]: 0 where allowed, -1e9 where not; added to logits.
  const torch::Tensor& mask_bias() const { return mask_bias_; }

 private:
  int num_groups_;
  int num_devices_;
  int workers_ = 1;
  torch::Tensor mask_bias_;
};

// `mean_loss` (a loss averaged over the rows it is given) weighted by its
// rows' share of the batch's k, so that the blocks' losses sum to the
// batch's mean; unweighted for the whole batch.
PlacementPolicyImpl::RowsLoss RowShare(PlacementPolicyImpl::RowsLoss mean_loss,
                                       int64_t k);

// Sum of the version counters of `module`'s parameters (bumped by in-place
// writes such as an optimizer step or a checkpoint load): what a pass
// kept for later compares to know the weights did not change.
int64_t ParameterVersion(const torch::nn::Module& module);

// How many blocks RunRowBlocks splits k rows into: min(workers, k), at
// least 1.
int RowBlocks(int64_t k, int workers);

// Runs block(index, begin, end) on min(workers, k) contiguous blocks of
// [0, k), the first on the calling thread and each other on its own
// thread with the caller's LibTorch thread count, grad mode and inference
// mode; rethrows a block's exception after all have ended.
void RunRowBlocks(
    int64_t k, int workers,
    const std::function<void(int index, int64_t begin, int64_t end)>& block);

// The split backward pass of a policy whose decoders read an encoding
// (`encoding`: its tensors, with the graph of the encoder): each block of
// rows [begin, end) of a batch of k runs block_loss(leaves, begin, end)
// and its backward pass on its own thread (RunRowBlocks), where `leaves`
// are the encoding's tensors detached; the blocks' gradients are summed in
// block order, added to the parameters of `module`, and passed back
// through the encoding, with `extra` (a scalar loss, or undefined), in
// one backward pass. The gradients are those of (extra + the blocks'
// losses).backward(), to rounding. `extra_apart`: extra's graph shares no
// node and no parameter with the encoding's, so with workers > 1 its
// backward pass runs on a second thread beside the encoder's.
void BackwardInBlocks(
    torch::nn::Module& module, const std::vector<torch::Tensor>& encoding,
    int64_t k, int workers,
    const std::function<torch::Tensor(const std::vector<torch::Tensor>& leaves,
                                      int64_t begin, int64_t end)>& block_loss,
    const torch::Tensor& extra = {}, bool extra_apart = false);

// The inverse-CDF draw of one row of `num_devices` probabilities (summed in
// double) for the uniform `u` in [0, 1); a device of probability 0 is
// never drawn.
int64_t DrawRow(const float* probs, int64_t num_devices, double u);

// One draw per row of `probs` [n, D] (rows sum to 1) by the inverse CDF of
// a uniform from `rng`; a device of probability 0 is never drawn. [n] int64.
torch::Tensor SampleRows(const torch::Tensor& probs, std::mt19937_64* rng);
// The same with row i's uniform given as uniforms[i] (in [0, 1)).
torch::Tensor SampleRows(const torch::Tensor& probs, const double* uniforms);
// The next `n` uniforms of `rng`, as SampleRows(probs, rng) draws them
// (one per row, in order).
std::vector<double> DrawUniforms(int64_t n, std::mt19937_64* rng);

class SoftmaxPolicyImpl : public PlacementPolicyImpl {
 public:
  SoftmaxPolicyImpl(int num_groups, int num_devices,
                    const std::vector<uint8_t>& allowed);

  torch::Tensor Sample(int k, std::mt19937_64* rng) override;
  torch::Tensor LogProbs(const torch::Tensor& actions) override;

  // The per-group distributions, [G, D].
  torch::Tensor Probabilities();
  // Sets u = log(probs) (probabilities below 1e-12 count as 1e-12), so the
  // policy's distributions become `probs` [G, D].
  void SetProbabilities(const torch::Tensor& probs);
  // The parameters u, [G, D].
  torch::Tensor& logits() { return logits_; }

 private:
  torch::Tensor logits_;
};
TORCH_MODULE(SoftmaxPolicy);

// The inputs of a sequence policy: one row per group, in group-id order.
struct GroupFeatures {
  // [G, T] float: the fraction of the group's ops of each op type.
  torch::Tensor type_fractions;
  // [G, F] float: log-scaled FLOPs, bytes, memory, op count, and the dims
  // of the group's largest output tensor (zero-padded), each column divided
  // by its largest value.
  torch::Tensor sizes;
  // [G, 2G] float: one-hot of the groups feeding the group, then of those
  // it feeds.
  torch::Tensor adjacency;
  // The order the encoder reads groups in (GroupGraph::order).
  std::vector<int64_t> order;
};

GroupFeatures MakeGroupFeatures(const Graph& graph, const Grouping& grouping,
                                const GroupGraph& groups);

// One decoding position of the content-based attention that ColocRL's and
// Mars's decoders share, without gradient, for sampling: logits [k, D] =
// output(tanh(combine([h, softmax(h keys^T) states]))) + `mask_bias` [D],
// for decoder states `h` [k, H] over encoder `states` and their attention
// `keys` [G, H]. Runs its products row by row (RowLinear).
torch::Tensor AttentionStepLogits(const torch::Tensor& h,
                                  const torch::Tensor& keys,
                                  const torch::Tensor& states,
                                  torch::nn::Linear& combine,
                                  torch::nn::Linear& output,
                                  const torch::Tensor& mask_bias);

}  // namespace dplace

#endif  // DPLACE_RL_NETS_POLICY_H_
