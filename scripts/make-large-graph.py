#!/usr/bin/env python3
"""Writes a large graph JSON file, for measuring how dplace scales with ops.

  scripts/make-large-graph.py OPS OUT.json

The graph is a chain in which op i reads ops i-1 and i-2: OPS ops, about
2 x OPS edges and about 95 bytes of JSON per op (10 million ops: 0.95 GB,
under FileLimits' 1 GiB). It streams the file, so it needs no memory to
speak of. docs/performance.md ("Reading large graphs") uses it.
"""
import sys

TYPES = ["MatMul", "Add", "Relu", "Mul"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    num_ops, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "w") as out:
        out.write('{"format":"dplace.graph","version":1,"name":"chain%d",'
                  '"ops":[\n' % num_ops)
        for i in range(num_ops):
            inputs = ",".join('"o%d"' % j for j in (i - 1, i - 2) if j >= 0)
            kind = TYPES[i % len(TYPES)]
            flops = ',"flops":%d' % (1000 * (1 + i % 7)) if kind == "MatMul" else ""
            out.write('%s{"name":"o%d","type":"%s"%s,"outputs":[{"bytes":%d}],'
                      '"inputs":[%s]}' % ("," if i else "", i, kind, flops,
                                          256 * (1 + i % 5), inputs))
        out.write("]}\n")


if __name__ == "__main__":
    main()
