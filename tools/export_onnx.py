#!/usr/bin/python3
"""Exports the ONNX test fixtures of dplace's importer to testdata/onnx/.

Every model is exported with export_params=False: its weights become graph
inputs without data, so the files stay small (the graph and its names only)
and the importer is exercised on the weights-as-inputs case. Models are
exported in training mode, so the graphs keep what a training step runs
(BatchNormalization is not folded into the convolutions, Dropout stays).
Each parameter is first filled with distinct random values: the exporter
merges parameters with equal values (a deep-copied encoder layer, zero
biases) into one input behind Identity nodes, which no trained model has.

Needs Debian's python3-torchvision (it pulls in python3-torch); the dplace
build and tests never do:

    apt-get install python3-torchvision
    /usr/bin/python3 tools/export_onnx.py   # Debian's python3; writes testdata/onnx/

Fixtures:
  resnet18.onnx, resnet50.onnx   torchvision, 1x3x224x224, fixed batch 1
  inception_v3.onnx              torchvision, 1x3x299x299, no aux logits
  transformer_encoder.onnx       nn.TransformerEncoder, 2 layers, d_model 256,
                                 4 heads, ffn 1024, batch_first: input
                                 [batch, seq 64, 256] with a symbolic batch
                                 dim ("batch")
"""
import argparse
import os
import sys

import torch
import torchvision

# LayerNormalization needs opset 17, the newest Debian's libonnx 1.12 knows.
OPSET = 17


def export(model, example, path, input_names, dynamic_axes=None):
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    model.train()
    with torch.no_grad():
        torch.onnx.export(
            model,
            example,
            path,
            export_params=False,
            training=torch.onnx.TrainingMode.TRAINING,
            opset_version=OPSET,
            input_names=input_names,
            output_names=["output"],
            dynamic_axes=dynamic_axes,
            do_constant_folding=False,
        )
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument(
        "--out", default=os.path.join(here, "..", "testdata", "onnx"),
        help="output folder (default: testdata/onnx)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)

    image = torch.randn(1, 3, 224, 224)
    export(torchvision.models.resnet18(), image,
           os.path.join(args.out, "resnet18.onnx"), ["input"])
    export(torchvision.models.resnet50(), image,
           os.path.join(args.out, "resnet50.onnx"), ["input"])
    export(torchvision.models.inception_v3(aux_logits=False,
                                           init_weights=False),
           torch.randn(1, 3, 299, 299),
           os.path.join(args.out, "inception_v3.onnx"), ["input"])

    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4,
                                             dim_feedforward=1024,
                                             dropout=0.1, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                          enable_nested_tensor=False)
    export(encoder, torch.randn(2, 64, 256),
           os.path.join(args.out, "transformer_encoder.onnx"), ["src"],
           dynamic_axes={"src": {0: "batch"}, "output": {0: "batch"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
