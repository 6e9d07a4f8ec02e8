"""Reads a CUBE4 archive with the PyPI package pycubexr and prints what it holds as JSON, for
tests/profile.rs to compare with isim's own aggregated profile. Independent of isim's writer:
everything comes through pycubexr's parser.

Usage: read_cubex.py FILE.cubex

Output: {"metrics": [{"id", "name", "dtype"}], "cnodes": [{"id", "parent", "region", "file",
"begin", "end"}] (pre-order), "locations": [name, ...], "values": {metric name: per cnode (in
"cnodes" order) a list with one value per location; for TAU_ATOMIC metrics one
{"n", "min", "max", "sum", "sum2"} object per location}}.
"""

import json
import sys

from pycubexr import CubexParser


def main(path):
    out = {"metrics": [], "cnodes": [], "locations": [], "values": {}}
    with CubexParser(path) as cube:
        roots = cube.get_root_cnodes()
        order = []
        stack = [(r, None) for r in reversed(roots)]
        while stack:
            node, parent = stack.pop()
            order.append(node)
            region = cube.get_region(node)
            out["cnodes"].append(
                {
                    "id": node.id,
                    "parent": parent,
                    "region": region.name,
                    "file": region.mod,
                    "begin": region.begin,
                    "end": region.end,
                }
            )
            for child in reversed(node.get_children()):
                stack.append((child, node.id))
        out["locations"] = [loc.name for loc in cube.get_locations()]
        for metric in cube.get_metrics():
            out["metrics"].append(
                {"id": metric.id, "name": metric.name, "dtype": metric.data_type}
            )
            values = cube.get_metric_values(metric)
            rows = []
            for node in order:
                vals = values.cnode_values(node)
                if metric.data_type == "TAU_ATOMIC":
                    # pycubexr keeps TAU_ATOMIC tuples as a numpy structured array.
                    arr = vals._values
                    rows.append(
                        [
                            {
                                "n": int(v["n"]),
                                "min": float(v["min"]),
                                "max": float(v["max"]),
                                "sum": float(v["sum"]),
                                "sum2": float(v["sum2"]),
                            }
                            for v in arr
                        ]
                    )
                elif metric.data_type in ("MINDOUBLE", "MAXDOUBLE"):
                    # pycubexr wraps these in MinValues/MaxValues; astype gives the numbers.
                    rows.append([float(v) for v in vals.astype(float)])
                else:
                    rows.append([float(v) for v in vals])
            out["values"][metric.name] = rows
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
