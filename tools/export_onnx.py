#!/usr/bin/python3
"""Exports the ONNX test fixtures of dplace's importer to testdata/onnx/.

Every model but one is exported with export_params=False: its weights
become graph inputs without data, so the files stay small (the graph and
its names only) and the importer is exercised on the weights-as-inputs
case. transformer_untrained keeps its weights, as torch.onnx.export does by
default: constant folding then leaves the weight matrices as initializers
the exporter names itself ("onnx::MatMul_409", their transposes). Models are
exported in training mode, so the graphs keep what a training step runs
(BatchNormalization is not folded into the convolutions, Dropout stays).
Each parameter is first filled with distinct random values: the exporter
merges parameters with equal values (a deep-copied encoder layer, zero
biases) into one input behind Identity nodes, which no trained model has.
Two fixtures break these rules on purpose, for the importer's warnings.

Beside each fixture NAME.onnx the script writes NAME.json with what PyTorch
itself says of the model, for the tests to compare against (they never run
Python): the batch it was exported at, and the number and bytes of its
parameters (sum of numel * element size over model.parameters(), which
counts a tied weight once).

Needs Debian's python3-torchvision (it pulls in python3-torch, whose
TorchScript-based exporter this uses); the dplace build and tests never do:

    apt-get install python3-torchvision
    /usr/bin/python3 tools/export_onnx.py   # Debian's python3; writes testdata/onnx/

Fixtures:
  resnet18.onnx, resnet50.onnx   torchvision, 1x3x224x224, fixed batch 1
  inception_v3.onnx              torchvision, 1x3x299x299, no aux logits
  transformer_encoder.onnx       nn.TransformerEncoder, 2 layers, d_model 256,
                                 4 heads, ffn 1024, batch_first: input
                                 [batch, seq 64, 256] with a symbolic batch
                                 dim ("batch")
  transformer_encoder_b2.onnx    the same model exported at a fixed batch
                                 of 2 (no dynamic_axes)
  lstm_seq2seq.onnx              embeddings (vocab 1000, 128) and a 4-layer
                                 LSTM encoder and decoder (hidden 256), a
                                 Linear to the vocabulary; fixed batch 8,
                                 source 12 and target 10 tokens
  gpt2_decoder.onnx              GPT-2-style decoder stack: 2 blocks, d_model
                                 128, 4 heads, causal mask, GELU (tanh form),
                                 LM head tied to the token embedding; fixed
                                 batch 4, 32 tokens
  transformer_encoder_b8.onnx    nn.TransformerEncoder, 2 layers, d_model 128,
                                 4 heads, ffn 512, GELU (erf form),
                                 batch_first; fixed batch 8, 16 tokens
  small_cnn_eval.onnx            a 2-conv CNN with BatchNorm exported in eval
                                 mode with constant folding (BatchNorm
                                 folded into the convs), for the warning
  aliased_mlp.onnx               3 deep-copied (equal) Linear + LayerNorm
                                 blocks exported in eval mode: the exporter
                                 keeps one copy of the weights and aliases
                                 the others through Identity, for the
                                 warning
  transformer_untrained.onnx     an untrained nn.TransformerEncoder (4
                                 layers, d_model 64, 4 heads, ffn 128),
                                 exported as torch.onnx.export does by
                                 default (eval mode, constant folding, the
                                 weights in the file): its
                                 layers are deep copies of one another, so
                                 the exporter merges their equal parameters
                                 into the first layer's behind Identity
                                 nodes; fixed batch 8, 16 tokens
  cnn_eval_bn.onnx               a DenseNet-style CNN (BatchNorm before each
                                 conv, Dropout before the classifier),
                                 untrained, exported in eval mode at opset
                                 13 as a user would: BatchNormalization in
                                 inference form (one output, running
                                 statistics as inputs; opset 13 has no
                                 training_mode), Dropout removed, running
                                 statistics merged with equal weights
  batch_mixing.onnx              view(2, -1) of a [8, 4] batch: a reshape
                                 that mixes the batch with the features,
                                 which --batch must refuse
"""
import argparse
import copy
import json
import math
import os
import sys

import torch
import torchvision

# LayerNormalization needs opset 17, the newest Debian's libonnx 1.12 knows.
OPSET = 17


def randomize(model):
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)


def write_facts(model, path, batch):
    """NAME.json beside NAME.onnx: what PyTorch says of the model."""
    params = list(model.parameters())
    facts = {
        "export_batch": batch,
        "parameters": len(params),
        "parameter_elements": sum(p.numel() for p in params),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
    }
    with open(os.path.splitext(path)[0] + ".json", "w") as f:
        json.dump(facts, f, indent=2)
        f.write("\n")


def export(model, example, path, input_names, dynamic_axes=None,
           randomize_weights=True, training=True, fold=False, opset=OPSET,
           grad=False, params=False):
    if randomize_weights:
        randomize(model)
    model.train(training)
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    # An eval-mode nn.TransformerEncoderLayer takes its fused fast path
    # (no ONNX export) unless gradients are enabled.
    with torch.set_grad_enabled(grad):
        torch.onnx.export(
            model,
            example,
            path,
            export_params=params,
            training=mode,
            opset_version=opset,
            input_names=input_names,
            output_names=["output"],
            dynamic_axes=dynamic_axes,
            do_constant_folding=fold,
        )
    first = example[0] if isinstance(example, tuple) else example
    write_facts(model, path, int(first.shape[0]))
    print(f"{path}: {os.path.getsize(path)} bytes")


class Seq2Seq(torch.nn.Module):
    """Embeddings, a stacked LSTM encoder whose final state starts the
    decoder, and a projection to the vocabulary (as a GNMT without
    attention)."""

    def __init__(self, vocab=1000, embedding=128, hidden=256, layers=4):
        super().__init__()
        self.src_emb = torch.nn.Embedding(vocab, embedding)
        self.tgt_emb = torch.nn.Embedding(vocab, embedding)
        self.enc = torch.nn.LSTM(embedding, hidden, layers, batch_first=True)
        self.dec = torch.nn.LSTM(embedding, hidden, layers, batch_first=True)
        self.proj = torch.nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        _, state = self.enc(self.src_emb(src))
        out, _ = self.dec(self.tgt_emb(tgt), state)
        return self.proj(out)


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, d_model, heads, context):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.proj = torch.nn.Linear(d_model, d_model)
        self.drop = torch.nn.Dropout(0.1)
        self.register_buffer(
            "mask", torch.tril(torch.ones(context, context)).view(
                1, 1, context, context))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = self.drop(torch.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.drop(self.proj(y))


class Block(torch.nn.Module):
    def __init__(self, d_model, heads, context):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, context)
        self.ln_2 = torch.nn.LayerNorm(d_model)
        self.fc = torch.nn.Linear(d_model, 4 * d_model)
        self.gelu = torch.nn.GELU(approximate="tanh")
        self.out = torch.nn.Linear(4 * d_model, d_model)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.out(self.gelu(self.fc(self.ln_2(x)))))


class Gpt2(torch.nn.Module):
    """GPT-2's decoder: token and position embeddings, pre-norm blocks of
    causal self-attention and a GELU MLP, a final LayerNorm and an LM head
    that shares the token embedding's weight."""

    def __init__(self, vocab=1000, context=32, d_model=128, heads=4,
                 layers=2):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d_model)
        self.wpe = torch.nn.Embedding(context, d_model)
        self.blocks = torch.nn.ModuleList(
            [Block(d_model, heads, context) for _ in range(layers)])
        self.ln_f = torch.nn.LayerNorm(d_model)
        self.lm_head = torch.nn.Linear(d_model, vocab, bias=False)

    def tie(self):
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(0, t, dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False),
            torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.features(x))


class DenseLayer(torch.nn.Module):
    """DenseNet's layer: BatchNorm, ReLU, then the conv (pre-activation), so
    an eval-mode export cannot fold the BatchNorm into a conv before it;
    the new features are concatenated to the input."""

    def __init__(self, channels, growth):
        super().__init__()
        self.norm = torch.nn.BatchNorm2d(channels)
        self.relu = torch.nn.ReLU()
        self.conv = torch.nn.Conv2d(channels, growth, 3, padding=1,
                                    bias=False)

    def forward(self, x):
        return torch.cat([x, self.conv(self.relu(self.norm(x)))], 1)


class DenseCnn(torch.nn.Module):
    """A small DenseNet: a stem conv, two dense layers, a transition
    (BatchNorm, conv, pooling), and a classifier behind Dropout."""

    def __init__(self, growth=8, classes=10):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.block = torch.nn.Sequential(DenseLayer(16, growth),
                                         DenseLayer(16 + growth, growth))
        self.transition = torch.nn.Sequential(
            torch.nn.BatchNorm2d(16 + 2 * growth), torch.nn.ReLU(),
            torch.nn.Conv2d(16 + 2 * growth, 16, 1, bias=False),
            torch.nn.AvgPool2d(2))
        self.norm = torch.nn.BatchNorm2d(16)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.drop = torch.nn.Dropout(0.2)
        self.fc = torch.nn.Linear(16, classes)

    def forward(self, x):
        x = torch.relu(self.norm(self.transition(self.block(self.stem(x)))))
        return self.fc(self.drop(torch.flatten(self.pool(x), 1)))


class BatchMixing(torch.nn.Module):
    """Folds the batch into a literal reshape: view(2, -1) of [8, 4] makes
    [2, 16], whose dims mix the batch with the features, so no other batch
    can be derived from the export."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 4)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.fc1(x).view(2, -1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument(
        "--out", default=os.path.join(here, "..", "testdata", "onnx"),
        help="output folder (default: testdata/onnx)")
    parser.add_argument("--only", help="export only this fixture (its stem)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    def wanted(name):
        return args.only is None or args.only == name

    def out(name):
        return os.path.join(args.out, name + ".onnx")

    torch.manual_seed(0)
    image = torch.randn(1, 3, 224, 224)
    if wanted("resnet18"):
        export(torchvision.models.resnet18(), image, out("resnet18"),
               ["input"])
    if wanted("resnet50"):
        export(torchvision.models.resnet50(), image, out("resnet50"),
               ["input"])
    if wanted("inception_v3"):
        export(torchvision.models.inception_v3(aux_logits=False,
                                               init_weights=False),
               torch.randn(1, 3, 299, 299), out("inception_v3"), ["input"])
    if wanted("transformer_encoder"):
        layer = torch.nn.TransformerEncoderLayer(
            d_model=256, nhead=4, dim_feedforward=1024, dropout=0.1,
            batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                              enable_nested_tensor=False)
        export(encoder, torch.randn(2, 64, 256), out("transformer_encoder"),
               ["src"], dynamic_axes={"src": {0: "batch"},
                                      "output": {0: "batch"}})
    if wanted("transformer_encoder_b2"):
        # transformer_encoder's model at a fixed batch of 2: imported at
        # another batch it must cost what the dynamic export does.
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(
            d_model=256, nhead=4, dim_feedforward=1024, dropout=0.1,
            batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                              enable_nested_tensor=False)
        export(encoder, torch.randn(2, 64, 256),
               out("transformer_encoder_b2"), ["src"])
    if wanted("lstm_seq2seq"):
        export(Seq2Seq(), (torch.randint(0, 1000, (8, 12)),
                           torch.randint(0, 1000, (8, 10))),
               out("lstm_seq2seq"), ["src", "tgt"])
    if wanted("gpt2_decoder"):
        gpt2 = Gpt2()
        randomize(gpt2)
        gpt2.tie()
        export(gpt2, torch.randint(0, 1000, (4, 32)), out("gpt2_decoder"),
               ["ids"], randomize_weights=False)
    if wanted("transformer_encoder_b8"):
        layer = torch.nn.TransformerEncoderLayer(
            d_model=128, nhead=4, dim_feedforward=512, dropout=0.1,
            activation="gelu", batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                              enable_nested_tensor=False)
        export(encoder, torch.randn(8, 16, 128), out("transformer_encoder_b8"),
               ["src"])
    if wanted("small_cnn_eval"):
        cnn = SmallCnn()
        randomize(cnn)
        for m in cnn.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_var.uniform_(0.5, 1.5)
        export(cnn, torch.randn(2, 3, 32, 32), out("small_cnn_eval"),
               ["input"], randomize_weights=False, training=False, fold=True)
    if wanted("aliased_mlp"):
        # Equal weights (deep copies, never re-initialised) exported in eval
        # mode: the exporter keeps one copy and aliases the others.
        block = torch.nn.Sequential(torch.nn.Linear(64, 64),
                                    torch.nn.LayerNorm(64), torch.nn.ReLU())
        mlp = torch.nn.Sequential(*[copy.deepcopy(block) for _ in range(3)])
        export(mlp, torch.randn(4, 64), out("aliased_mlp"), ["input"],
               randomize_weights=False, training=False)
    if wanted("transformer_untrained"):
        # As a user would export a model fresh from its constructor: the
        # default eval mode and constant folding, no re-initialisation.
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(
            d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
            batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, num_layers=4,
                                              enable_nested_tensor=False)
        export(encoder, torch.randn(8, 16, 64), out("transformer_untrained"),
               ["src"], randomize_weights=False, training=False, fold=True,
               grad=True, params=True)
    if wanted("cnn_eval_bn"):
        torch.manual_seed(0)
        export(DenseCnn(), torch.randn(4, 3, 32, 32), out("cnn_eval_bn"),
               ["input"], randomize_weights=False, training=False, fold=True,
               opset=13)
    if wanted("batch_mixing"):
        export(BatchMixing(), torch.randn(8, 4), out("batch_mixing"),
               ["input"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
