#!/usr/bin/python3
"""`dplace place --json` against docs/place.schema.json (ctest
place_json_schema_test).

Runs the dplace binary on an ONNX fixture (one method; a batch at which
nothing fits) and on the example graph with --method all, validates each
document with the JSON Schema (Debian's python3-jsonschema, installed by
scripts/install-deps.sh), and checks what the schema cannot: each row's
gap is its step time over the lower bound, the best method is the fastest
that fits, the warnings of the import are there.

Usage: place_json_schema_test.py DPLACE SOURCE_DIR
"""
import json
import math
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is missing: install it (scripts/install-deps.sh "
          "does, or apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(1)


def place(dplace, *args):
    """The JSON document `dplace place ARGS --json` prints, and its code."""
    run = subprocess.run([dplace, "place", *args, "--json"],
                         capture_output=True, text=True, check=False)
    if run.returncode not in (0, 1):
        raise AssertionError(f"dplace place {' '.join(args)} exited "
                             f"{run.returncode}: {run.stderr}")
    return json.loads(run.stdout), run.returncode, run.stderr


def check_semantics(doc):
    bound = doc["lower_bound"]
    fastest = None
    for row in doc["methods"]:
        # A row's bound is the problem's or the one its method proved; the
        # document's is the largest.
        assert (row["lower_bound"] is None) == (bound is None), row
        assert bound is None or row["lower_bound"] <= bound, row
        if row["feasible"]:
            expected = row["step_time"] / row["lower_bound"]
            assert math.isclose(row["gap"], expected, rel_tol=1e-9), row
            if fastest is None or row["step_time"] < fastest["step_time"]:
                fastest = row
        else:
            assert row["gap"] is None, row
    assert doc["best"] == (fastest["method"] if fastest else None), doc["best"]


def main():
    dplace, source = sys.argv[1], sys.argv[2]
    with open(os.path.join(source, "docs", "place.schema.json")) as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    onnx = os.path.join(source, "testdata", "onnx", "transformer_untrained.onnx")
    example = os.path.join(source, "examples", "mlp_training.json")
    cases = [
        ("one method on an ONNX model",
         [onnx, "--cluster", "k80x2", "--method", "m-etf"], 0),
        ("a search", [example, "--cluster", "k80x2", "--method", "mcmc",
                      "--budget-samples", "50"], 0),
        ("every method", [example, "--cluster", "k80x2", "--method", "all"], 0),
        ("a model that fits nowhere",
         [onnx, "--batch", "400000", "--cluster", "k80x2", "--method",
          "single-gpu"], 1),
    ]
    failures = 0
    for name, args, code in cases:
        model = args[0]
        doc, got, stderr = place(dplace, "--model", model, *args[1:])
        errors = sorted(validator.iter_errors(doc), key=str)
        try:
            assert got == code, f"exit code {got}, expected {code}: {stderr}"
            assert not errors, "; ".join(
                f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)
            check_semantics(doc)
            if model == onnx:
                assert any("merged" in w for w in doc["graph"]["warnings"])
                assert doc["graph"]["parameters"]["trained"]["elements"] == \
                    133888, doc["graph"]["parameters"]
            if code == 1:
                assert any(line.startswith("to fit: --batch")
                           for line in doc["what_next"]), doc["what_next"]
            print(f"ok: {name}")
        except AssertionError as e:
            failures += 1
            print(f"FAILED: {name}: {e}", file=sys.stderr)
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
