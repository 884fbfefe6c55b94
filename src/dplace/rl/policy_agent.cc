#include "dplace/rl/policy_agent.h"

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace dplace {
namespace {

[[noreturn]] void Fail(const std::string& what, const std::string& why) {
  throw std::runtime_error(what + ": " + why);
}

std::string Sizes(c10::IntArrayRef sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    out += (i ? "," : "") + std::to_string(sizes[i]);
  }
  return out + "]";
}

// `loaded` must be what `like` is: its shape and type, finite. Both from the
// checkpoint's point of view: `like` is the tensor the agent built.
void CheckLike(const torch::Tensor& loaded, const std::vector<int64_t>& sizes,
               caffe2::TypeMeta dtype, const std::string& what) {
  CheckLoadedTensor(loaded, what);
  if (loaded.sizes() != c10::IntArrayRef(sizes)) {
    Fail(what, "shape " + Sizes(loaded.sizes()) + ", expected " + Sizes(sizes));
  }
  if (loaded.dtype() != dtype) {
    Fail(what, std::string("type ") + loaded.dtype().name().data() +
                   ", expected " + dtype.name().data());
  }
  if (loaded.is_floating_point() &&
      !torch::isfinite(loaded).all().item<bool>()) {
    Fail(what, "not finite");
  }
}

struct NamedShape {
  std::string name;
  std::vector<int64_t> sizes;
  caffe2::TypeMeta dtype;
  torch::Tensor buffer;  // A copy of a buffer's value; none for parameters.
};

std::vector<std::pair<std::string, torch::Tensor>> NamedTensors(
    const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    out.emplace_back("parameter " + p.key(), p.value());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    out.emplace_back("buffer " + b.key(), b.value());
  }
  return out;
}

// The key of a parameter's optimizer state: LibTorch 1.13 keys it by the
// printed address of its TensorImpl, later versions by the address itself.
template <typename Map>
typename Map::key_type StateKey(const Map&, c10::TensorImpl* impl) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;
    key << impl;
    return key.str();
  } else {
    return static_cast<Key>(impl);
  }
}

void CheckOptimizerState(torch::optim::Optimizer* optimizer) {
  auto& state = optimizer->state();
  for (const torch::optim::OptimizerParamGroup& group :
       optimizer->param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      auto it = state.find(StateKey(state, p.unsafeGetTensorImpl()));
      if (it == state.end()) continue;  // No step taken yet.
      const std::string what = "optimizer state";
      // LibTorch 1.13 moves the saved state of a key listed twice twice,
      // leaving a null state that its next step dereferences.
      if (!it->second) Fail(what, "a parameter without state");
      const std::vector<int64_t> sizes = p.sizes().vec();
      if (auto* adam =
              dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
        if (adam->step() < 0 || adam->step() > (int64_t{1} << 53)) {
          Fail(what, "step " + std::to_string(adam->step()));
        }
        CheckLike(adam->exp_avg(), sizes, p.dtype(), what + " exp_avg");
        CheckLike(adam->exp_avg_sq(), sizes, p.dtype(), what + " exp_avg_sq");
        if (adam->max_exp_avg_sq().defined()) {
          CheckLike(adam->max_exp_avg_sq(), sizes, p.dtype(),
                    what + " max_exp_avg_sq");
        }
      } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(
                     it->second.get())) {
        if (sgd->momentum_buffer().defined()) {
          CheckLike(sgd->momentum_buffer(), sizes, p.dtype(),
                    what + " momentum_buffer");
        }
      } else {
        Fail(what, "of an optimizer checkpoints do not support");
      }
    }
  }
}

}  // namespace

void CheckLoadedTensor(const torch::Tensor& t, const std::string& what) {
  if (!t.defined()) Fail(what, "missing");
  if (t.layout() != torch::kStrided || !t.device().is_cpu() ||
      t.is_quantized() || !t.has_storage()) {
    Fail(what, "not a dense CPU tensor");
  }
  if (!t.is_contiguous()) Fail(what, "not contiguous");
  // Elements, without trusting numel() (it may have wrapped).
  int64_t count = 1;
  for (const int64_t n : t.sizes()) {
    if (n < 0 || __builtin_mul_overflow(count, n, &count)) {
      Fail(what, "shape " + Sizes(t.sizes()));
    }
  }
  int64_t end = 0, bytes = 0;
  if (t.storage_offset() < 0 ||
      __builtin_add_overflow(t.storage_offset(), count, &end) ||
      __builtin_mul_overflow(end, static_cast<int64_t>(t.element_size()),
                             &bytes) ||
      (count > 0 && bytes > static_cast<int64_t>(t.storage().nbytes()))) {
    Fail(what, "shape " + Sizes(t.sizes()) + " at offset " +
                   std::to_string(t.storage_offset()) +
                   " does not fit its data (" +
                   std::to_string(t.storage().nbytes()) + " bytes)");
  }
}

int64_t LoadedCount(const torch::Tensor& t, const std::string& what) {
  CheckLoadedTensor(t, what);
  if (t.numel() != 1 || t.scalar_type() != torch::kInt64) {
    Fail(what, "not one int64");
  }
  const int64_t n = t.item<int64_t>();
  if (n < 0) Fail(what, std::to_string(n) + " < 0");
  return n;
}

void LoadPolicy(torch::nn::Module* policy, torch::optim::Optimizer* optimizer,
                torch::serialize::InputArchive* archive) {
  torch::serialize::InputArchive p, o;
  archive->read("policy", p);
  archive->read("optimizer", o);
  std::vector<NamedShape> expected;
  for (const auto& [name, t] : NamedTensors(*policy)) {
    const bool buffer = name.rfind("buffer ", 0) == 0;
    expected.push_back({name, t.sizes().vec(), t.dtype(),
                        buffer ? t.clone() : torch::Tensor()});
  }
  policy->load(p);
  const auto loaded = NamedTensors(*policy);
  if (loaded.size() != expected.size()) {
    Fail("policy", "the tensors changed");  // Not reached: load keeps names.
  }
  for (size_t i = 0; i < loaded.size(); ++i) {
    CheckLike(loaded[i].second, expected[i].sizes, expected[i].dtype,
              "policy " + expected[i].name);
    // Buffers (masks, orders of groups) come from the problem, not from
    // learning: they must be the ones the agent built (an order out of
    // range failed sampling; found by the fuzzer).
    if (expected[i].buffer.defined() &&
        !torch::equal(loaded[i].second, expected[i].buffer)) {
      Fail("policy " + expected[i].name, "not the one this problem gives");
    }
  }
  // Archives without a version take LibTorch's pre-1.5 path, which warns on
  // stderr and indexes parameters by position.
  c10::IValue version;
  if (!o.try_read("pytorch_version", version) || !version.isString() ||
      version.toStringRef() != "1.5.0") {
    Fail("optimizer", "not the format of LibTorch 1.5 or later");
  }
  optimizer->load(o);
  CheckOptimizerState(optimizer);
}

int LearnPlacement(const std::vector<torch::Tensor>& parameters,
                   double learning_rate, double confidence,
                   const std::function<bool()>& budget_left,
                   const std::function<double()>& backward) {
  constexpr int kMaxSteps = 1000;
  torch::optim::Adam adam(parameters, torch::optim::AdamOptions(learning_rate));
  for (int step = 0; step < kMaxSteps; ++step) {
    adam.zero_grad();
    if (backward() >= confidence || !budget_left()) return step;
    adam.step();
  }
  return kMaxSteps;
}

StatusOr<int> PolicyAgent::DoWarmStart(
    const std::vector<DeviceId>& group_devices, double confidence,
    const std::function<bool()>& budget_left) {
  PlacementPolicyImpl& p = policy();
  const torch::Tensor target = PlacementRow(group_devices);
  const double rate = settings().WarmStartRate(1e-3);
  return LearnPlacement(p.parameters(), rate, confidence, budget_left, [&] {
    double reached = 0;
    p.BackwardRows(
        target, [&](const torch::Tensor& log_probs, const torch::Tensor& rows) {
          const torch::Tensor chosen = target.index_select(0, rows);
          reached = log_probs.detach()
                        .gather(2, chosen.unsqueeze(2))
                        .exp()
                        .mean()
                        .item<double>();
          return EliteLikelihoodLoss(log_probs, chosen);
        });
    return reached;
  });
}

Status PolicyAgent::DoImitate(const std::vector<DeviceId>& group_devices) {
  const torch::Tensor target = PlacementRow(group_devices);
  GradientStepRows(
      &policy(), target,
      [&](const torch::Tensor& log_probs, const torch::Tensor& rows) {
        return EliteLikelihoodLoss(log_probs, target.index_select(0, rows));
      },
      &optimizer(), grad_clip(), gradient_averaging());
  return Status::Ok();
}

}  // namespace dplace
