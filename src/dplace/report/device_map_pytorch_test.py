#!/usr/bin/python3
"""The device-map round trip of docs/onnx.md, with PyTorch (ctest
device_map_pytorch_test).

dplace places an ONNX fixture with whole modules and writes its device map;
the PyTorch snippet of docs/onnx.md, read from the page itself, moves each
module of the original model to its device (CPU devices here) and runs a
training step. Checks: every module the map names is one of the model's,
the modules cover every parameter, the step trains (the loss is finite and
every parameter changed).

Skips (exit 77) with a message where python3-torch is missing: it is a
Debian package (apt-get install python3-torch) that dplace itself never
needs, so scripts/install-deps.sh does not install it.

Usage: device_map_pytorch_test.py DPLACE SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("skipped: python3-torch is not installed, so the device-map round "
          "trip of docs/onnx.md is not checked (apt-get install "
          "python3-torch to run it)")
    sys.exit(77)


def snippet(source):
    """The Python block after the `<!-- tested: device map -->` marker of
    docs/onnx.md."""
    with open(os.path.join(source, "docs", "onnx.md")) as f:
        page = f.read()
    found = re.search(r"<!-- tested: device map -->\s*```python\n(.*?)```",
                      page, re.S)
    if not found:
        raise SystemExit("docs/onnx.md has no block marked "
                         "<!-- tested: device map -->")
    return found.group(1)


def model_of_fixture():
    """transformer_untrained's model (tools/export_onnx.py): the same
    modules, so the same names."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
        batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=4,
                                       enable_nested_tensor=False)


def main():
    dplace, source = sys.argv[1], sys.argv[2]
    onnx = os.path.join(source, "testdata", "onnx",
                        "transformer_untrained.onnx")
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        run = subprocess.run(
            [dplace, "place", "--model", onnx, "--cluster", "k80x2",
             "--method", "m-etf", "--whole-modules", "1", "--device-map",
             "device_map.json"], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        with open("device_map.json") as f:
            device_map = json.load(f)
        model = model_of_fixture()
        before = [p.detach().clone() for p in model.parameters()]
        # What the snippet's training step reads: the model and a batch.
        scope = {"model": model, "src": torch.randn(8, 16, 64),
                 "target": torch.randn(8, 16, 64)}
        exec(snippet(source), scope)
        names = dict(model.named_modules())
        for module in device_map["modules"]:
            assert module in names, f"{module} is no module of the model"
        covered = sum(p.numel() for m in device_map["modules"]
                      for p in model.get_submodule(m).parameters())
        total = sum(p.numel() for p in model.parameters())
        assert covered == total, f"the map's modules hold {covered} of " \
                                 f"{total} parameters"
        assert torch.isfinite(scope["loss"]).item(), scope["loss"]
        changed = sum(not torch.equal(b, p.detach())
                      for b, p in zip(before, model.parameters()))
        assert changed == len(before), \
            f"{changed} of {len(before)} parameters trained"
    print(f"ok: {len(device_map['modules'])} modules placed, {total} "
          "parameters trained")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
