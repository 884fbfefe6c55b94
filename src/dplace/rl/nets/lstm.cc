#include "dplace/rl/nets/lstm.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dplace {
namespace {

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Gates [B, 4H] (pre-activations in, activations i, f, g, o out), the cell
// before `c_prev` and after `c`, tanh of the new cell and the new hidden
// state, all [B, H] and contiguous.
void PointwiseForward(int64_t batch, int64_t hidden, float* gates,
                      const float* c_prev, float* c, float* tanh_c, float* h) {
  for (int64_t b = 0; b < batch; ++b) {
    float* g = gates + b * 4 * hidden;
    const int64_t row = b * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const float i = Sigmoid(g[j]);
      const float f = Sigmoid(g[hidden + j]);
      const float u = std::tanh(g[2 * hidden + j]);
      const float o = Sigmoid(g[3 * hidden + j]);
      g[j] = i;
      g[hidden + j] = f;
      g[2 * hidden + j] = u;
      g[3 * hidden + j] = o;
      const float cell = f * c_prev[row + j] + i * u;
      const float t = std::tanh(cell);
      c[row + j] = cell;
      if (tanh_c != nullptr) tanh_c[row + j] = t;
      h[row + j] = o * t;
    }
  }
}

// One step backwards: given the gradient of h_t (`dh`, the output's plus
// the next step's) and of c_t (`dc`, updated in place to that of c_{t-1}),
// writes the gradient of the gates' pre-activations to `dgates`.
void PointwiseBackward(int64_t batch, int64_t hidden, const float* gates,
                       const float* c_prev, const float* tanh_c,
                       const float* dh, float* dc, float* dgates) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* g = gates + b * 4 * hidden;
    float* dg = dgates + b * 4 * hidden;
    const int64_t row = b * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const float i = g[j], f = g[hidden + j], u = g[2 * hidden + j],
                  o = g[3 * hidden + j];
      const float t = tanh_c[row + j];
      const float d_h = dh[row + j];
      const float d_c = dc[row + j] + d_h * o * (1 - t * t);
      dg[j] = d_c * u * i * (1 - i);
      dg[hidden + j] = d_c * c_prev[row + j] * f * (1 - f);
      dg[2 * hidden + j] = d_c * i * (1 - u * u);
      dg[3 * hidden + j] = d_h * t * o * (1 - o);
      dc[row + j] = d_c * f;
    }
  }
}

void CheckFloat(const torch::Tensor& t, const char* what) {
  if (t.scalar_type() != torch::kFloat32 || !t.device().is_cpu()) {
    throw std::invalid_argument(std::string("LstmRecurrence: ") + what +
                                " must be a float32 CPU tensor");
  }
}

class LstmRecurrenceFunction
    : public torch::autograd::Function<LstmRecurrenceFunction> {
 public:
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, torch::Tensor x_gates,
      torch::Tensor h0, torch::Tensor c0, torch::Tensor w_hh) {
    const int64_t steps = x_gates.size(0), batch = x_gates.size(1),
                  hidden = w_hh.size(1);
    if (steps < 1 || x_gates.size(2) != 4 * hidden ||
        w_hh.size(0) != 4 * hidden || h0.sizes() != c0.sizes() ||
        h0.size(0) != batch || h0.size(1) != hidden) {
      throw std::invalid_argument("LstmRecurrence: inconsistent shapes");
    }
    CheckFloat(x_gates, "x_gates");
    CheckFloat(h0, "h0");
    CheckFloat(w_hh, "w_hh");
    x_gates = x_gates.contiguous();
    h0 = h0.contiguous();
    torch::Tensor gates = torch::empty({steps, batch, 4 * hidden});
    torch::Tensor cells = torch::empty({steps + 1, batch, hidden});
    torch::Tensor tanh_c = torch::empty({steps, batch, hidden});
    torch::Tensor outputs = torch::empty({steps, batch, hidden});
    cells[0].copy_(c0);
    const torch::Tensor w_t = w_hh.t();
    torch::Tensor h = h0;
    for (int64_t t = 0; t < steps; ++t) {
      torch::Tensor g = gates[t];
      at::addmm_out(g, x_gates[t], h, w_t);
      PointwiseForward(
          batch, hidden, g.data_ptr<float>(), cells[t].data_ptr<float>(),
          cells[t + 1].data_ptr<float>(), tanh_c[t].data_ptr<float>(),
          outputs[t].data_ptr<float>());
      h = outputs[t];
    }
    ctx->save_for_backward({gates, cells, tanh_c, outputs, h0, w_hh});
    return {outputs, outputs[steps - 1].clone(), cells[steps].clone()};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &gates = saved[0], &cells = saved[1],
                        &tanh_c = saved[2], &outputs = saved[3], &h0 = saved[4],
                        &w_hh = saved[5];
    const int64_t steps = gates.size(0), batch = gates.size(1),
                  hidden = w_hh.size(1);
    const torch::Tensor d_outputs =
        grads[0].defined() ? grads[0].contiguous() : torch::Tensor();
    torch::Tensor dh = grads[1].defined() ? grads[1].contiguous().clone()
                                          : torch::zeros({batch, hidden});
    torch::Tensor dc = grads[2].defined() ? grads[2].contiguous().clone()
                                          : torch::zeros({batch, hidden});
    torch::Tensor d_gates = torch::empty({steps, batch, 4 * hidden});
    for (int64_t t = steps - 1; t >= 0; --t) {
      if (d_outputs.defined()) dh.add_(d_outputs[t]);
      torch::Tensor dg = d_gates[t];
      PointwiseBackward(batch, hidden, gates[t].data_ptr<float>(),
                        cells[t].data_ptr<float>(), tanh_c[t].data_ptr<float>(),
                        dh.data_ptr<float>(), dc.data_ptr<float>(),
                        dg.data_ptr<float>());
      at::mm_out(dh, dg, w_hh);  // Gradient of h_{t-1}.
    }
    const torch::Tensor h_before =
        torch::cat({h0.unsqueeze(0), outputs.slice(0, 0, steps - 1)}, 0);
    const torch::Tensor d_w_hh =
        d_gates.view({steps * batch, 4 * hidden})
            .t()
            .mm(h_before.view({steps * batch, hidden}));
    return {d_gates, dh, dc, d_w_hh};
  }
};

class RecurrentProductFunction
    : public torch::autograd::Function<RecurrentProductFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               torch::Tensor x, torch::Tensor weight,
                               torch::Tensor inputs, torch::Tensor gradients,
                               torch::Tensor count, int64_t t) {
    inputs[t].copy_(x);
    ctx->save_for_backward({weight});
    // Shared buffers that every step writes: kept outside the saved
    // variables, whose version checks they would fail.
    ctx->saved_data["inputs"] = inputs;
    ctx->saved_data["gradients"] = gradients;
    ctx->saved_data["count"] = count;
    ctx->saved_data["t"] = t;
    return x.mm(weight.t());
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const torch::Tensor weight = ctx->get_saved_variables()[0];
    const torch::Tensor inputs = ctx->saved_data["inputs"].toTensor();
    const torch::Tensor gradients = ctx->saved_data["gradients"].toTensor();
    const torch::Tensor count = ctx->saved_data["count"].toTensor();
    const int64_t t = ctx->saved_data["t"].toInt();
    const torch::Tensor& dy = grads[0];
    gradients[t].copy_(dy);
    count.add_(1);
    torch::Tensor d_weight;
    if (t == 0) {
      const int64_t steps = inputs.size(0), rows = steps * inputs.size(1);
      if (count.item<int64_t>() != steps) {
        throw std::logic_error(
            "RecurrentProducts: a step's product did not reach the loss");
      }
      d_weight = gradients.view({rows, gradients.size(2)})
                     .t()
                     .mm(inputs.view({rows, inputs.size(2)}));
    }
    return {dy.mm(weight),   d_weight,        torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

RecurrentProducts::RecurrentProducts(torch::Tensor weight, int64_t steps,
                                     int64_t batch)
    : weight_(std::move(weight)),
      inputs_(torch::empty({steps, batch, weight_.size(1)})),
      gradients_(torch::zeros({steps, batch, weight_.size(0)})),
      count_(torch::zeros({1}, torch::kInt64)) {}

torch::Tensor RecurrentProducts::operator()(int64_t t, const torch::Tensor& x) {
  if (!torch::GradMode::is_enabled() || !weight_.requires_grad()) {
    return x.mm(weight_.t());
  }
  return RecurrentProductFunction::apply(x, weight_, inputs_, gradients_,
                                         count_, t);
}

LstmSequence LstmRecurrence(const torch::Tensor& x_gates,
                            const torch::Tensor& h0, const torch::Tensor& c0,
                            const torch::Tensor& w_hh) {
  const torch::autograd::variable_list out =
      LstmRecurrenceFunction::apply(x_gates, h0, c0, w_hh);
  return {out[0], out[1], out[2]};
}

LstmWeights LayerWeights(torch::nn::LSTM& lstm, bool reverse) {
  const std::string suffix = reverse ? "_l0_reverse" : "_l0";
  const auto params = lstm->named_parameters(/*recurse=*/false);
  auto get = [&](const std::string& name) {
    const torch::Tensor* t = params.find(name + suffix);
    if (t == nullptr) {
      throw std::invalid_argument("LSTM without parameter " + name + suffix);
    }
    return *t;
  };
  return {get("weight_ih"), get("weight_hh"), get("bias_ih") + get("bias_hh")};
}

LstmWeights CellWeights(torch::nn::LSTMCell& cell) {
  return {cell->weight_ih, cell->weight_hh, cell->bias_ih + cell->bias_hh};
}

LstmSequence RunLstm(torch::nn::LSTM& lstm, const torch::Tensor& input,
                     torch::Tensor h0, torch::Tensor c0, bool reverse) {
  const LstmWeights w = LayerWeights(lstm, reverse);
  const int64_t batch = input.size(1), hidden = w.w_hh.size(1);
  if (!h0.defined()) h0 = torch::zeros({batch, hidden});
  if (!c0.defined()) c0 = torch::zeros({batch, hidden});
  const torch::Tensor ordered = reverse ? input.flip(0) : input;
  LstmSequence s =
      LstmRecurrence(torch::linear(ordered, w.w_ih, w.bias), h0, c0, w.w_hh);
  if (reverse) s.outputs = s.outputs.flip(0);
  return s;
}

void LstmStep(const torch::Tensor& x_gates, const torch::Tensor& w_hh,
              torch::Tensor* h, torch::Tensor* c) {
  torch::NoGradGuard no_grad;
  const int64_t batch = x_gates.size(0), hidden = w_hh.size(1);
  torch::Tensor gates = torch::addmm(x_gates, *h, w_hh.t());
  torch::Tensor c_prev = c->contiguous();
  torch::Tensor c_next = torch::empty({batch, hidden});
  torch::Tensor h_next = torch::empty({batch, hidden});
  PointwiseForward(batch, hidden, gates.data_ptr<float>(),
                   c_prev.data_ptr<float>(), c_next.data_ptr<float>(),
                   /*tanh_c=*/nullptr, h_next.data_ptr<float>());
  *h = h_next;
  *c = c_next;
}

}  // namespace dplace
