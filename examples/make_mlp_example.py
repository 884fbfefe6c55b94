#!/usr/bin/env python3
"""Writes examples/mlp_training.json: the training graph of a 4-layer MLP.

Batch 512, width 8192, fp32, Adam. Forward MatMul/BiasAdd/Relu per layer, a
softmax cross-entropy loss, the matching gradient ops, and one ApplyAdam per
parameter (weights plus two Adam slots as persistent bytes), colocated with
its parameter. FLOPs count 2 per multiply-add; bytes accessed are inputs plus
outputs. Run from the repository root: python3 examples/make_mlp_example.py
"""
import json

BATCH, WIDTH, LAYERS, CLASSES = 512, 8192, 4, 1000
F32 = 4


def tensor(*shape):
    n = 1
    for d in shape:
        n *= d
    return {"shape": list(shape), "bytes": n * F32}


ops = []


def op(name, type_, phase, scope, inputs, outputs, flops=0, persistent=0,
       group=""):
    read = sum(o["outputs"][0]["bytes"] for o in ops
               if o["name"] in [i.split(":")[0] for i in inputs])
    written = sum(t["bytes"] for t in outputs)
    o = {"name": name, "type": type_, "phase": phase, "scope": scope,
         "flops": flops, "bytes_accessed": read + written,
         "outputs": outputs, "inputs": inputs}
    if persistent:
        o["persistent_bytes"] = persistent
    if group:
        o["colocation_group"] = group
    ops.append(o)


op("input", "IteratorGetNext", "forward", "input", [],
   [tensor(BATCH, WIDTH), tensor(BATCH)])
ops[-1]["devices"] = ["cpu"]
x = "input"
widths = [WIDTH] * LAYERS + [CLASSES]
for l in range(LAYERS):
    s = f"layer_{l}"
    n_in, n_out = widths[l], widths[l + 1]
    op(f"{s}/weights", "VariableV2", "forward", s, [], [tensor(n_in, n_out)],
       persistent=n_in * n_out * F32, group=f"{s}/weights")
    op(f"{s}/bias", "VariableV2", "forward", s, [], [tensor(n_out)],
       persistent=n_out * F32, group=f"{s}/bias")
    op(f"{s}/matmul", "MatMul", "forward", s, [x, f"{s}/weights"],
       [tensor(BATCH, n_out)], flops=2 * BATCH * n_in * n_out)
    op(f"{s}/bias_add", "BiasAdd", "forward", s, [f"{s}/matmul", f"{s}/bias"],
       [tensor(BATCH, n_out)], flops=BATCH * n_out)
    if l < LAYERS - 1:
        op(f"{s}/relu", "Relu", "forward", s, [f"{s}/bias_add"],
           [tensor(BATCH, n_out)], flops=BATCH * n_out)
        x = f"{s}/relu"
    else:
        x = f"{s}/bias_add"
op("loss", "SoftmaxCrossEntropyWithLogits", "forward", "loss",
   [x, "input:1"], [tensor(BATCH), tensor(BATCH, CLASSES)],
   flops=5 * BATCH * CLASSES)
grad = "loss:1"
for l in reversed(range(LAYERS)):
    s = f"layer_{l}"
    g = f"gradients/{s}"
    n_in, n_out = widths[l], widths[l + 1]
    if l < LAYERS - 1:
        op(f"{g}/relu_grad", "ReluGrad", "backward", s, [grad, f"{s}/relu"],
           [tensor(BATCH, n_out)], flops=BATCH * n_out)
        grad = f"{g}/relu_grad"
    op(f"{g}/bias_add_grad", "BiasAddGrad", "backward", s, [grad],
       [tensor(n_out)], flops=BATCH * n_out)
    layer_in = "input" if l == 0 else f"layer_{l - 1}/relu"
    op(f"{g}/matmul_grad_weights", "MatMul", "backward", s, [layer_in, grad],
       [tensor(n_in, n_out)], flops=2 * BATCH * n_in * n_out)
    if l > 0:
        op(f"{g}/matmul_grad_input", "MatMul", "backward", s,
           [grad, f"{s}/weights"], [tensor(BATCH, n_in)],
           flops=2 * BATCH * n_in * n_out)
    for param, grad_op, size in [
            ("weights", "matmul_grad_weights", n_in * n_out),
            ("bias", "bias_add_grad", n_out)]:
        # Adam: the parameter's two slots (m, v) live with it.
        op(f"{s}/{param}/adam", "ApplyAdam", "update", s,
           [f"{s}/{param}", f"{g}/{grad_op}"], [tensor(size)],
           flops=10 * size, persistent=2 * size * F32,
           group=f"{s}/{param}")
    if l > 0:
        grad = f"{g}/matmul_grad_input"

with open("examples/mlp_training.json", "w") as f:
    json.dump({"format": "dplace.graph", "version": 1,
               "name": "mlp_training", "ops": ops}, f, indent=1)
    f.write("\n")
print(f"examples/mlp_training.json: {len(ops)} ops")
