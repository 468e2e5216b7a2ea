"""Reads an `embed export --format npy` folder with NumPy alone, as a user would, and
prints what it found as one JSON object, for pkg/export's tests to compare with the Go
model. It checks on its own that every .npy file has the dtype and shape manifest.json
gives, and recomputes from the exported arrays, with NumPy, the angle map and the cones
of 1p queries.

Usage: python3 check_npy.py DIR PAIRS    (PAIRS: JSON [[entity, relation], ...])
"""

import json
import os
import sys

import numpy as np

out_dir, pairs = sys.argv[1], json.loads(sys.argv[2])
with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as f:
    man = json.load(f)

arrays, report = {}, {"files": {}, "errors": []}
for entry in man["files"]:
    name = entry["file"]
    if not name.endswith(".npy"):
        continue
    a = np.load(os.path.join(out_dir, name), allow_pickle=False)
    arrays[name] = a
    if str(a.dtype) != entry["dtype"] or list(a.shape) != entry["shape"]:
        report["errors"].append(f"{name}: {a.dtype} {a.shape}, manifest {entry['dtype']} {entry['shape']}")
    # The values, exactly: float32 as their bit patterns, integers as they are.
    flat = a.reshape(-1)
    vals = flat.view(np.uint32) if a.dtype == np.float32 else flat
    report["files"][name] = {"dtype": str(a.dtype), "shape": list(a.shape), "values": [int(v) for v in vals]}

# Every id and name table: a list of its lines' fields.
report["tsv"] = {}
for entry in man["files"]:
    if entry["file"].endswith(".tsv"):
        with open(os.path.join(out_dir, entry["file"]), encoding="utf-8") as f:
            report["tsv"][entry["file"]] = [line.split("\t") for line in f.read().split("\n")[:-1]]

ck = man.get("checkpoint")
if ck:
    R, d = ck["embedding_range"], ck["dim"]
    # The angle map, in float64 from the raw values: the float32 angles the model uses
    # are within its rounding and its tanh's approximation.
    err = 0.0
    for ang, raw in [("entity_axis.npy", "entity_axis_raw.npy"), ("relation_axis.npy", "relation_axis_raw.npy"),
                     ("relation_aperture.npy", "relation_aperture_raw.npy")]:
        if ang in arrays:
            want = np.pi * np.tanh(arrays[raw].astype(np.float64) / R)
            err = max(err, float(np.max(np.abs(arrays[ang] - want))))
    report["max_angle_error"] = err

    # The 1p cone (e, (r,)) of each pair: the anchor's point cone, projected by r.
    e = np.array([p[0] for p in pairs])
    r = np.array([p[1] for p in pairs])
    a = arrays["entity_axis.npy"][e].astype(np.float64)
    h = np.zeros_like(a)
    ra = arrays["relation_axis.npy"][r].astype(np.float64)
    wrap = lambda x: np.mod(x + np.pi, 2 * np.pi) - np.pi
    model = ck["model"]
    if model == "cone":
        p = lambda n: arrays[f"params/projection.{n}.npy"].astype(np.float64)
        rap = arrays["relation_aperture.npy"][r].astype(np.float64)
        x = np.concatenate([a + ra, h + rap], axis=1)
        h1 = np.maximum(x @ p("w1").T + p("b1")[0], 0)
        h2 = np.maximum(h1 @ p("w2").T + p("b2")[0], 0)
        y = h2 @ p("w3").T + p("b3")[0]
        axis, half = np.pi * np.tanh(y[:, :d]), np.pi / 2 * np.tanh(2 * y[:, d:]) + np.pi / 2
    else:
        axis = wrap(a + ra)
        if model == "rocone":
            half = np.abs(wrap(h + arrays["relation_aperture.npy"][r]))
        elif model == "rocone-trunc":
            half = np.clip(h + arrays["relation_aperture.npy"][r], 0, np.pi)
        elif model == "rocone-se":
            q = np.clip(h / np.pi, 1e-6, 1 - 1e-6)
            s = arrays["relation_shift.npy"][r].astype(np.float64)
            half = np.pi / (1 + np.exp(-(np.log(q / (1 - q)) + s)))
        else:
            raise SystemExit(f"unknown model {model}")
    report["cones"] = {"axis": axis.tolist(), "half": half.tolist()}

json.dump(report, sys.stdout)
