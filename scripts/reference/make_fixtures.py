#!/usr/bin/env python3
"""Golden fixtures for the `cone` model, made by ConE's own code (QE-ConE, MIT).

How to run it (from the repository root; needs PyTorch 1.x and numpy, e.g. Debian's
python3-torch, and QE-ConE's source, unmodified: a checkout of
github.com/MIRALab-USTC/QE-ConE, the fixtures were made at commit cc45b90; pass its folder as
--reference or set QECONE to it):

    /usr/bin/python3 scripts/reference/make_fixtures.py fixtures \
        --reference QECONE_DIR [--out testdata/reference]
    /usr/bin/python3 scripts/reference/make_fixtures.py checkpoint \
        [--out testdata/reference/qecone-checkpoint]
    go run ./scripts/reference/exportqueries TRAIN.arrow train.json
    /usr/bin/python3 scripts/reference/make_fixtures.py curves --queries train.json \
        --seeds 0,1,2 --steps 300 --hidden 128 --out testdata/reference/curves.json
        (scripts/reference/parity.sh does these two with RERUN_REFERENCE=1)

`fixtures` writes testdata/reference/cone.json: a small ConE model built from QE-ConE's
modules (KGReasoning with its projection MLP, attention intersection, DeepSets aperture,
negation and DNF union; the projection's hidden width is reduced by building QE-ConE's own
ConeProjection class with a smaller width), its parameters, grounded queries of all 16
structures of QE-ConE's query_name_dict plus custom ones, and QE-ConE's outputs:

  - the query cones (per DNF branch) and the full score matrix (every entity);
  - operator cases: QE-ConE's ConeIntersection and ConeNegation on crafted inputs at the
    edges (cosine sums below 1e-3, axes at the +-pi cut, negation at axis 0);
  - one training update's loss and every parameter's gradient, on a batch of all
    structures, with QE-ConE's train_step loss;
  - the parameters after 5 torch.optim.Adam updates on fixed batches (path, other, path,
    other, path as main.py alternates them) with fixed positives and negatives.

Dropout: QE-ConE's ConeIntersection draws torch's Bernoulli mask. To compare gradients,
the script replaces that module's `drop` by one that multiplies by masks made with the Go
project's own rule (model.DropoutKeep: a SplitMix64-style hash of a per-mask seed and the
element index, kept with probability 1-p and scaled by 1/(1-p)); the seeds are stored in
the fixture and the Go test feeds them to the model. Everything else runs unmodified.

`checkpoint` trains a small ConE (300 entities, d 16, MLP width 32) with QE-ConE's
train_step for 150 steps of a path and an other update at lr 0.05 (so that many angles
saturate near +-pi, as in long runs) and writes it with torch.save in main.py's
save_model layout (model_state_dict, optimizer_state_dict, step, current_learning_rate,
warm_up_steps; config.json beside it), with 25 queries of every structure, QE-ConE's
filtered ranks of them and the scores of the first 5 per structure, for
`train import-qecone`'s tests.

`curves` runs QE-ConE's training loop (main.py's three updates per step with its
DataLoader-based TrainDataset and SingledirectionalOneShotIterator) on a train-queries file
exported by the Go test helper (JSON: entities, relations, queries with structure, ids and
answers) for several seeds and writes the loss per update.

Values are float32, stored as base64 of little-endian float32 bytes ({"shape", "f32"}),
so the Go tests read them exactly without Python.
"""

import argparse
import base64
import collections
import copy
import json
import os
import pickle
import zlib
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

QUERY_NAME_DICT = None  # filled from QE-ConE's main.py table (copied below by name only)

# The structures, in QE-ConE's notation, with the names its query_name_dict gives them.
STRUCTURES = [
    ("1p", ('e', ('r',))),
    ("2p", ('e', ('r', 'r'))),
    ("3p", ('e', ('r', 'r', 'r'))),
    ("2i", (('e', ('r',)), ('e', ('r',)))),
    ("3i", (('e', ('r',)), ('e', ('r',)), ('e', ('r',)))),
    ("ip", ((('e', ('r',)), ('e', ('r',))), ('r',))),
    ("pi", (('e', ('r', 'r')), ('e', ('r',)))),
    ("2in", (('e', ('r',)), ('e', ('r', 'n')))),
    ("3in", (('e', ('r',)), ('e', ('r',)), ('e', ('r', 'n')))),
    ("inp", ((('e', ('r',)), ('e', ('r', 'n'))), ('r',))),
    ("pin", (('e', ('r', 'r')), ('e', ('r', 'n')))),
    ("pni", (('e', ('r', 'r', 'n')), ('e', ('r',)))),
    ("2u-DNF", (('e', ('r',)), ('e', ('r',)), ('u',))),
    ("up-DNF", ((('e', ('r',)), ('e', ('r',)), ('u',)), ('r',))),
    ("2u-DM", ((('e', ('r', 'n')), ('e', ('r', 'n'))), ('n',))),
    ("up-DM", ((('e', ('r', 'n')), ('e', ('r', 'n'))), ('n', 'r'))),
    # custom structures (QE-ConE's embed_query_cone recurses over any nesting)
    ("4p", ('e', ('r', 'r', 'r', 'r'))),
    ("3inp", ((('e', ('r',)), ('e', ('r',)), ('e', ('r', 'n'))), ('r',))),
    ("2i-n-p", ((('e', ('r',)), ('e', ('r',))), ('n', 'r'))),
    ("ipi", (((('e', ('r',)), ('e', ('r',))), ('r',)), ('e', ('r', 'r')))),
]

# The Go project's names for the structures (the queries artifact's `type`).
GO_TYPE = {"2u-DNF": "2u", "up-DNF": "up", "4p": "custom", "3inp": "custom",
           "2i-n-p": "custom", "ipi": "custom"}

PATH_TYPES = {"1p", "2p", "3p"}
OTHER_TYPES = {"2i", "3i", "2in", "3in", "inp", "pin", "pni"}


def import_reference(ref):
    if not ref:
        sys.exit("make_fixtures: no QE-ConE: pass --reference DIR, or set QECONE, to a checkout of "
                 "github.com/MIRALab-USTC/QE-ConE (MIT)")
    ref = os.path.abspath(ref)
    if not os.path.isfile(os.path.join(ref, "models.py")):
        sys.exit("make_fixtures: %s has no models.py (pass --reference QE-ConE's folder)" % ref)
    sys.path.insert(0, ref)
    import torch  # noqa: F401
    try:
        import tqdm  # noqa: F401  (models.py imports it for test_step's progress bar)
    except ImportError:
        import types
        stub = types.ModuleType("tqdm")
        stub.tqdm = lambda it, **kw: it
        sys.modules["tqdm"] = stub
    import numpy
    if not hasattr(numpy, "in1d"):
        # NumPy 2.4 removed in1d, which QE-ConE's dataloader calls; isin is its documented
        # replacement (same result for the 1-D arrays it passes).
        numpy.in1d = lambda a, b, assume_unique=False, invert=False: numpy.isin(
            numpy.ravel(a), b, assume_unique=assume_unique, invert=invert)
    import models
    import dataloader
    return models, dataloader


def f32(a):
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    return {"shape": list(a.shape), "f32": base64.b64encode(a.astype("<f4").tobytes()).decode()}


def notation(s):
    """The structure in the Go project's notation (Python's repr of the tuple)."""
    return repr(s)


def ground(s, rng, ne, nr):
    """A random grounding of structure s in QE-ConE's nested form, plus the anchors and
    relations in depth-first order."""
    anchors, relations = [], []

    def walk(x):
        if isinstance(x, tuple):
            return tuple(walk(y) for y in x)
        if x == 'e':
            v = int(rng.integers(ne))
            anchors.append(v)
            return v
        if x == 'r':
            v = int(rng.integers(nr))
            relations.append(v)
            return v
        if x == 'n':
            return -2
        if x == 'u':
            return -1
        raise ValueError(x)
    return walk(s), anchors, relations


def flatten(l):
    return sum(map(flatten, l), []) if isinstance(l, tuple) else [l]


# ---------------------------------------------------------------------------------------
# The Go project's dropout mask (model.DropoutKeep), reproduced so that both sides apply
# the same mask.

M64 = (1 << 64) - 1


def dropout_keep(seed, i, threshold):
    x = (seed + (i + 1) * 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    x ^= x >> 31
    return (x >> 32) >= threshold


def FixedDropout(torch, p, seeds):
    """A module to stand in for ConeIntersection.drop: each call takes the next seed and
    multiplies by the Go project's mask for it (in training mode only, as nn.Dropout).
    Records the seeds used."""

    class Fixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p, self.seeds, self.used = p, list(seeds), []

        def forward(self, x):
            return fixed_mask(torch, self, x)
    return Fixed()


def fixed_mask(torch, self, x):
    if True:
        if not self.training or self.p == 0:
            return x
        seed = self.seeds[len(self.used)]
        self.used.append(seed)
        threshold = min(round(self.p * (1 << 32)), (1 << 32) - 1)
        keep = np.float32(1 / (1 - self.p))
        n = x.numel()
        mask = np.array([keep if dropout_keep(seed, i, threshold) else 0 for i in range(n)],
                        dtype=np.float32).reshape(tuple(x.shape))
        return x * torch.from_numpy(mask)


# ---------------------------------------------------------------------------------------


def build_model(models, torch, ne, nr, d, hidden, gamma, cen, drop, seed):
    names = {s: n for n, s in STRUCTURES}
    torch.manual_seed(seed)
    m = models.KGReasoning(nentity=ne, nrelation=nr, hidden_dim=d, gamma=gamma,
                           query_name_dict=names, center_reg=cen, drop=drop)
    # QE-ConE hard-codes a hidden width of 1600; the same class at a small width keeps the
    # fixture small.
    m.cone_proj = models.ConeProjection(d, hidden, 2)
    return m


def state_tensors(m):
    """Parameters under the Go project's tensor names."""
    p = dict(m.named_parameters())
    out = collections.OrderedDict()
    out["entity"] = p["entity_embedding"]
    out["relation.axis"] = p["axis_embedding"]
    out["relation.aperture"] = p["arg_embedding"]
    out["modulus"] = p["modulus"]
    for go, tn in [("1", "layer_axis1"), ("2", "layer_axis2"), ("3", "layer_arg1"), ("4", "layer_arg2")]:
        out["intersection.w" + go] = p["cone_intersection.%s.weight" % tn]
        out["intersection.b" + go] = p["cone_intersection.%s.bias" % tn]
    for go, tn in [("1", "layer1"), ("2", "layer2"), ("3", "layer0")]:
        out["projection.w" + go] = p["cone_proj.%s.weight" % tn]
        out["projection.b" + go] = p["cone_proj.%s.bias" % tn]
    return out


def dump_params(m, grads=False):
    out = {}
    for name, t in state_tensors(m).items():
        v = t.grad if grads else t
        if v is None:
            v = np.zeros(tuple(t.shape), dtype=np.float32)
        else:
            v = v.detach().cpu().numpy()
        if v.ndim == 1 and name != "modulus" and name.startswith(("intersection.b", "projection.b")):
            v = v.reshape(1, -1)
        if name == "modulus":
            v = v.reshape(1, 1)
        out[name] = f32(v)
    return out


def batch_dicts(torch, qlist):
    """batch_queries_dict and batch_idxs_dict as train_step/test_step build them."""
    bq, bi = collections.defaultdict(list), collections.defaultdict(list)
    for i, (q, s) in enumerate(qlist):
        bq[s].append(flatten(q))
        bi[s].append(i)
    for s in bq:
        bq[s] = torch.LongTensor(bq[s])
    return bq, bi


def query_record(name, s, q, anchors, relations):
    return {"name": name, "type": GO_TYPE.get(name, name), "structure": notation(s),
            "flat": flatten(q), "anchors": anchors, "relations": relations}


def cones_of(m, torch, s, name, qtensor):
    """QE-ConE's cones of one structure's queries: [N][branches][d] axis and arg."""
    if 'u' in name and 'DNF' in name:
        ax, ar, _ = m.embed_query_cone(m.transform_union_query(qtensor, s), m.transform_union_structure(s), 0)
        n = qtensor.shape[0]
        return ax.view(n, 2, -1), ar.view(n, 2, -1)
    ax, ar, _ = m.embed_query_cone(qtensor, s, 0)
    return ax.unsqueeze(1), ar.unsqueeze(1)


def reference_scores(m, torch, qlist, ne):
    """Scores of every entity for each query, through KGReasoning.forward as test_step
    calls it, back in the queries' order."""
    bq, bi = batch_dicts(torch, qlist)
    neg = torch.arange(ne).repeat(len(qlist), 1)
    _, logit, _, idxs = m(None, neg, None, bq, bi)
    out = np.zeros((len(qlist), ne), dtype=np.float32)
    out[np.array(idxs)] = logit.detach().numpy()
    return out


def filtered_ranks(scores, answers):
    """QE-ConE's test_step rule with every answer hard: rank among non-answers, ties by
    torch.argsort (so exact ties are unspecified; the Go side treats them as such)."""
    ranks = []
    for q, ans in enumerate(answers):
        order = np.argsort(-scores[q], kind="stable")
        pos = np.empty_like(order)
        pos[order] = np.arange(len(order))
        cur = np.sort(pos[np.array(sorted(ans))])
        ranks.append([int(x) for x in cur - np.arange(len(cur)) + 1])
    return ranks


def make_batch(torch, rng, qrecs, ne, k, answers):
    pos = [int(rng.choice(sorted(a))) for a in answers]
    neg = rng.integers(ne, size=(len(qrecs), k)).astype(np.int64)
    weight = [float(np.sqrt(1 / np.float32(4 + len(a)), dtype=np.float32)) for a in answers]
    return pos, neg, weight


def train_update(m, torch, opt, qlist, pos, neg, weight, drop):
    """One update exactly as KGReasoning.train_step does it, from a fixed batch."""
    m.train()
    opt.zero_grad()
    bq, bi = batch_dicts(torch, qlist)
    positive = torch.LongTensor(pos)
    negative = torch.from_numpy(np.asarray(neg, dtype=np.int64))
    w = torch.tensor(weight, dtype=torch.float32)
    import torch.nn.functional as F
    positive_logit, negative_logit, sw, _ = m(positive, negative, w, bq, bi)
    negative_score = F.logsigmoid(-negative_logit).mean(dim=1)
    positive_score = F.logsigmoid(positive_logit).squeeze(dim=1)
    positive_sample_loss = - (sw * positive_score).sum()
    negative_sample_loss = - (sw * negative_score).sum()
    positive_sample_loss /= sw.sum()
    negative_sample_loss /= sw.sum()
    loss = (positive_sample_loss + negative_sample_loss) / 2
    loss.backward()
    opt.step()
    return float(loss.item()), float(positive_sample_loss.item()), float(negative_sample_loss.item())


def cmd_fixtures(a):
    models, _ = import_reference(a.reference)
    import torch
    torch.set_num_threads(1)
    ne, nr, d, hidden, gamma, cen, drop = 200, 16, 8, 24, 2.0, 0.5, 0.25
    m = build_model(models, torch, ne, nr, d, hidden, gamma, cen, drop, seed=11)
    rng = np.random.default_rng(7)
    fx = {"config": {"num_entities": ne, "num_relations": nr, "dim": d, "hidden": hidden,
                     "gamma": gamma, "center_reg": cen, "drop": drop},
          "reference": "QE-ConE models.py (KGReasoning, ConeProjection, ConeIntersection, ConeNegation)",
          "torch": torch.__version__, "numpy": np.__version__}
    fx["params"] = dump_params(m)

    # Queries: 3 of each structure.
    qrecs, qlist = [], []
    for name, s in STRUCTURES:
        for _ in range(3):
            q, an, rl = ground(s, rng, ne, nr)
            qrecs.append(query_record(name, s, q, an, rl))
            qlist.append((q, s))
    m.eval()
    with torch.no_grad():
        scores = reference_scores(m, torch, qlist, ne)
        cones = []
        bq, bi = batch_dicts(torch, qlist)
        names = {s: n for n, s in STRUCTURES}
        per = {}
        for s in bq:
            ax, ar = cones_of(m, torch, s, names[s], bq[s])
            for r, i in enumerate(bi[s]):
                per[i] = (ax[r].numpy(), ar[r].numpy())
        for i in range(len(qlist)):
            cones.append({"axis": f32(per[i][0]), "half": f32(per[i][1])})
    answers = []
    for q in range(len(qlist)):
        # answers: the 3 best entities, 3 from the middle and 3 at random
        order = np.argsort(-scores[q], kind="stable")
        aset = set(int(x) for x in order[:3]) | set(int(x) for x in order[ne // 2:ne // 2 + 3])
        aset |= set(int(x) for x in rng.choice(ne, 3, replace=False))
        answers.append(sorted(aset))
    for r, c, ans in zip(qrecs, cones, answers):
        r["cones"] = c
        r["answers"] = ans
    fx["queries"] = qrecs
    fx["scores"] = f32(scores)
    fx["ranks"] = filtered_ranks(scores, answers)

    # Operator cases at the edges.
    fx["intersection_cases"] = intersection_cases(m, torch, d, rng)
    fx["negation_cases"] = negation_cases(m, torch, d)

    # One update on a batch of every structure, with dropout (fixed masks).
    k = 6
    seeds = [int(x) for x in rng.integers(0, 2**63, size=64)]
    fd = FixedDropout(torch, drop, seeds)
    m.cone_intersection.drop = fd
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, m.parameters()), lr=1e-3)
    bans = [set(int(x) for x in rng.choice(ne, int(rng.integers(1, 9)), replace=False)) for _ in qrecs]
    pos, neg, weight = make_batch(torch, rng, qrecs, ne, k, bans)
    before = copy.deepcopy(m.state_dict())
    loss = train_update(m, torch, opt, qlist, pos, neg, weight, drop)
    fx["update"] = {"queries": list(range(len(qrecs))), "positive": pos, "negative": neg.tolist(),
                    "k": k, "weight": weight, "answers": [sorted(a) for a in bans],
                    "dropout_seeds": list(fd.used), "loss": loss[0], "loss_pos": loss[1],
                    "loss_neg": loss[2], "grads": dump_params(m, grads=True), "lr": 1e-3}
    m.load_state_dict(before)

    # Five Adam updates from the initial parameters: path, other, path, other, path, each
    # with its fixed positives, negatives and dropout seeds; a brand-new torch Adam.
    for p in m.parameters():
        p.grad = None
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, m.parameters()), lr=0.01)
    fd = FixedDropout(torch, drop, [int(x) for x in rng.integers(0, 2**63, size=64)])
    m.cone_intersection.drop = fd
    path = [i for i, r in enumerate(qrecs) if r["name"] in PATH_TYPES]
    other = [i for i, r in enumerate(qrecs) if r["name"] in OTHER_TYPES]
    updates = []
    for u, pool in enumerate([path, other, path, other, path]):
        sel = [int(x) for x in rng.permutation(pool)[:max(4, len(pool) * 2 // 3)]]
        ans = [bans[i] for i in sel]
        pos, neg, weight = make_batch(torch, rng, [qrecs[i] for i in sel], ne, k, ans)
        n0 = len(fd.used)
        loss = train_update(m, torch, opt, [qlist[i] for i in sel], pos, neg, weight, drop)
        updates.append({"queries": sel, "positive": pos, "negative": neg.tolist(), "k": k,
                        "weight": weight, "dropout_seeds": fd.used[n0:], "loss": loss[0]})
    fx["adam"] = {"lr": 0.01, "updates": updates, "params": dump_params(m)}
    os.makedirs(a.out, exist_ok=True)
    path_out = os.path.join(a.out, "cone.json")
    with open(path_out, "w") as f:
        json.dump(fx, f, separators=(",", ":"))
    print("wrote", path_out, os.path.getsize(path_out), "bytes")


def intersection_cases(m, torch, d, rng):
    """ConeIntersection on crafted inputs: two and three branches whose axes put the
    attention-weighted cosine sum below 1e-3, exactly opposite axes (sine sum at +-0 with a
    negative cosine: the +-pi cut), axes at float32(pi) and its neighbours."""
    cases = []
    pi32 = np.float32(np.pi)
    below = np.nextafter(pi32, np.float32(0))
    for nb in (2, 3):
        n = 6
        ax = rng.uniform(-np.pi, np.pi, size=(nb, n, d)).astype(np.float32)
        ar = rng.uniform(0, np.pi, size=(nb, n, d)).astype(np.float32)
        # row 0: every branch at float32(pi) (sine -8.7e-8 each) or just below it
        ax[:, 0, :] = pi32
        ax[0, 0, ::2] = below
        ax[:, 1, :] = -pi32
        # row 2: opposite axes around +-pi/2 (cosine sums near 0)
        ax[0, 2, :] = np.float32(np.pi / 2)
        ax[1, 2, :] = np.float32(-np.pi / 2)
        ax[0, 3, :] = np.float32(np.pi / 2) + np.float32(1e-4) * np.arange(d, dtype=np.float32)
        ax[1, 3, :] = np.float32(np.pi / 2) - np.float32(2e-4) * np.arange(d, dtype=np.float32)
        # row 4: a and pi-a (sine sum positive, cosine sum ~0) and mixed near-cut values
        ax[0, 4, :] = np.float32(3.1)
        ax[1, 4, :] = np.float32(-3.1)
        ax[0, 5, :] = np.float32(0.0)
        ax[1, 5, :] = pi32
        if nb == 3:
            ax[2, 0, :] = -pi32
            ax[2, 4, :] = pi32
        ar[:, 0, :3] = 0
        ar[:, 1, :3] = np.float32(np.pi)
        with torch.no_grad():
            m.cone_intersection.eval()
            oa, oh = m.cone_intersection(torch.from_numpy(ax.copy()), torch.from_numpy(ar.copy()))
            m.cone_intersection.train()
        cases.append({"branches": nb, "n": n, "axis": f32(ax), "half": f32(ar),
                      "out_axis": f32(oa.numpy()), "out_half": f32(oh.numpy())})
    return cases


def negation_cases(m, torch, d):
    vals = np.array([0.0, -0.0, 1e-8, -1e-8, np.pi, -np.pi, 1.0, -1.0, 3.0, -3.0, 1e-45, -1e-45,
                     np.float32(np.pi) - np.float32(np.pi), 2.5, -2.5, 0.5], dtype=np.float32)
    half = np.linspace(0, np.pi, len(vals)).astype(np.float32)
    with torch.no_grad():
        oa, oh = m.cone_negation(torch.from_numpy(vals.copy()), torch.from_numpy(half.copy()))
    return {"axis": f32(vals), "half": f32(half), "out_axis": f32(oa.numpy()), "out_half": f32(oh.numpy())}


# ---------------------------------------------------------------------------------------
# A QE-ConE checkpoint for `train import-qecone`.


def cmd_checkpoint(a):
    """Trains a small model with QE-ConE's train_step (torch's own dropout) at a high
    learning rate, so that many angles saturate near +-pi as in long runs, saves it as
    main.py's save_model does, and ranks queries of every structure with test_step's rule."""
    models, _ = import_reference(a.reference)
    import torch
    torch.set_num_threads(1)
    ne, nr, d, hidden, gamma, cen, drop = 300, 20, 16, 32, 2.0, 0.5, 0.1
    m = build_model(models, torch, ne, nr, d, hidden, gamma, cen, drop, seed=5)
    rng = np.random.default_rng(3)
    torch.manual_seed(3)
    names = {s: n for n, s in STRUCTURES}
    train_structs = [s for n, s in STRUCTURES if n in PATH_TYPES | OTHER_TYPES]
    lr = 0.05
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, m.parameters()), lr=lr)

    class Args:
        cuda = False
    # Fixed "answers" per query: a random function of the grounded query, so that there
    # is something to learn and the apertures and axes move far from the initialisation.
    def batch(structs, n):
        qlist, ans = [], []
        for _ in range(n):
            s = structs[int(rng.integers(len(structs)))]
            q, _, _ = ground(s, rng, ne, nr)
            qlist.append((q, s))
            h = zlib.crc32(repr(q).encode()) % 1000
            ans.append(set(int(x) for x in np.random.default_rng(h).choice(ne, 1 + h % 7, replace=False)))
        return qlist, ans
    step = 0
    for step in range(a.steps):
        for structs in ([s for s in train_structs if names[s] in PATH_TYPES],
                        [s for s in train_structs if names[s] in OTHER_TYPES]):
            qlist, ans = batch(structs, 32)
            pos, neg, weight = make_batch(torch, rng, qlist, ne, 16, ans)
            train_update(m, torch, opt, qlist, pos, neg, weight, drop)
    save_dir = a.out
    os.makedirs(save_dir, exist_ok=True)
    # main.py's save_model: config.json with the arguments, and `checkpoint`.
    cfg = {"hidden_dim": d, "gamma": gamma, "center_reg": cen, "drop": drop, "nentity": ne,
           "nrelation": nr, "learning_rate": 0.05, "negative_sample_size": 16, "batch_size": 32,
           "max_steps": a.steps, "seed": 5, "data_path": "synthetic"}
    with open(os.path.join(save_dir, "config.json"), "w") as f:
        json.dump(cfg, f)
    torch.save({"step": step, "current_learning_rate": lr, "warm_up_steps": a.steps // 2,
                "model_state_dict": m.state_dict(), "optimizer_state_dict": opt.state_dict()},
               os.path.join(save_dir, "checkpoint"))
    # Queries of every structure, scored and ranked by test_step's code path.
    m.eval()
    qrecs, qlist = [], []
    for name, s in STRUCTURES:
        for _ in range(a.queries):
            q, an, rl = ground(s, rng, ne, nr)
            qrecs.append(query_record(name, s, q, an, rl))
            qlist.append((q, s))
    # More queries, ranked only (their scores are not stored, to keep the file small).
    for name, s in STRUCTURES:
        for _ in range(a.rank_only):
            q, an, rl = ground(s, rng, ne, nr)
            qrecs.append(query_record(name, s, q, an, rl))
            qlist.append((q, s))
    with torch.no_grad():
        scores = reference_scores(m, torch, qlist, ne)
    answers = []
    for q in range(len(qlist)):
        order = np.argsort(-scores[q], kind="stable")
        aset = set(int(x) for x in order[:2]) | set(int(x) for x in order[ne // 3:ne // 3 + 2])
        aset |= set(int(x) for x in rng.choice(ne, 2, replace=False))
        answers.append(sorted(aset))
    for r, ans in zip(qrecs, answers):
        r["answers"] = ans
    ranks = filtered_ranks(scores, answers)
    # The scores of the first queries only (per structure, a.queries of them).
    scored = len(STRUCTURES) * a.queries
    out = {"num_entities": ne, "num_relations": nr, "dim": d, "hidden": hidden, "gamma": gamma,
           "center_reg": cen, "queries": qrecs, "ranks": ranks, "scores": f32(scores[:scored])}
    with open(os.path.join(save_dir, "ranks.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
    with torch.no_grad():
        ent = torch.tanh(m.entity_embedding / m.embedding_range.item()) * 3.14159265358979323846
        sat = float((ent.abs() > 3.1).float().mean())
    print("wrote", save_dir, "entity angles within 0.04 of +-pi: %.1f%%" % (100 * sat))


# ---------------------------------------------------------------------------------------
# The equal-budget learning check: QE-ConE's training loop on exported train queries.


def load_train(path):
    """Train queries exported by scripts/reference/exportqueries, as QE-ConE's
    train_queries (structure -> set of nested queries) and train_answers."""
    import ast
    with open(path) as f:
        d = json.load(f)
    queries, answers = collections.defaultdict(set), collections.defaultdict(set)
    parsed = {}
    for q in d["queries"]:
        s = parsed.get(q["structure"])
        if s is None:
            s = parsed[q["structure"]] = ast.literal_eval(q["structure"])
        an, rl = list(q["anchors"]), list(q["relations"])

        def walk(x):
            if isinstance(x, tuple):
                return tuple(walk(y) for y in x)
            return {"e": lambda: an.pop(0), "r": lambda: rl.pop(0), "n": lambda: -2, "u": lambda: -1}[x]()
        g = walk(s)
        queries[s].add(g)
        answers[g] |= set(q["answers"])
    return d["num_entities"], d["num_relations"], queries, answers


def cmd_curves(a):
    models, dataloader = import_reference(a.reference)
    import torch
    from torch.utils.data import DataLoader
    import util
    torch.set_num_threads(a.threads)
    ne, nr, queries, answers = load_train(a.queries)
    names = {s: n for n, s in STRUCTURES}
    out = {"config": {"dim": a.dim, "hidden": a.hidden, "batch": a.batch, "negatives": a.negatives, "gamma": a.gamma,
                      "center_reg": a.center_reg, "lr": a.lr, "drop": a.drop, "steps": a.steps,
                      "queries": os.path.basename(a.queries), "num_queries": sum(len(v) for v in queries.values())},
           "runs": {}}
    for seed in [int(x) for x in a.seeds.split(",")]:
        util.set_global_seed(seed)
        path_q = collections.defaultdict(set)
        other_q = collections.defaultdict(set)
        for s, qs in queries.items():
            (path_q if names[s] in PATH_TYPES else other_q)[s] = qs
        # main.py's loaders; num_workers=0 (main.py's worker processes would share one
        # numpy state, see the README), so a seed gives one run.
        it = lambda qs: dataloader.SingledirectionalOneShotIterator(DataLoader(
            dataloader.TrainDataset(util.flatten_query(qs), ne, nr, a.negatives, answers),
            batch_size=a.batch, shuffle=True, num_workers=0, collate_fn=dataloader.TrainDataset.collate_fn))
        path_it, other_it = it(path_q), it(other_q)
        m = models.KGReasoning(nentity=ne, nrelation=nr, hidden_dim=a.dim, gamma=a.gamma,
                               query_name_dict=names, center_reg=a.center_reg, drop=a.drop)
        if a.hidden != 1600:
            m.cone_proj = models.ConeProjection(a.dim, a.hidden, 2)
        lr = a.lr
        opt = torch.optim.Adam(filter(lambda p: p.requires_grad, m.parameters()), lr=lr)
        warm_up_steps = a.steps // 2

        class Args:
            cuda = False
        lp, lo = [], []
        for step in range(a.steps):
            l1 = m.train_step(m, opt, path_it, Args, step)["loss"]
            l2 = m.train_step(m, opt, other_it, Args, step)["loss"]
            l3 = m.train_step(m, opt, path_it, Args, step)["loss"]
            lp.append((l1 + l3) / 2)
            lo.append(l2)
            if step >= warm_up_steps:
                lr = lr / 5
                opt = torch.optim.Adam(filter(lambda p: p.requires_grad, m.parameters()), lr=lr, weight_decay=0.)
                warm_up_steps = warm_up_steps * 1.5
            if step % 10 == 0:
                print("seed %d step %d path %.4f other %.4f" % (seed, step, lp[-1], lo[-1]), flush=True)
        out["runs"][str(seed)] = {"loss_path": lp, "loss_other": lo}
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.replace(tmp, a.out)
    print("wrote", a.out)


def cmd_speed(a):
    """QE-ConE's own training loop (main.py's loaders with cpu_num workers, KGReasoning's
    train_step: path, other, path per step) on the GPU, timed: prints one JSON line with
    the steady-state steps per second over --steps steps after --warmup steps."""
    models, dataloader = import_reference(a.reference)
    import time
    import torch
    from torch.utils.data import DataLoader
    import util
    util.set_global_seed(a.seed)
    t0 = time.time()
    ne, nr, queries, answers = load_train(a.queries)
    names = {s: n for n, s in STRUCTURES}
    path_q, other_q = collections.defaultdict(set), collections.defaultdict(set)
    for s, qs in queries.items():
        (path_q if names[s] in PATH_TYPES else other_q)[s] = qs
    it = lambda qs: dataloader.SingledirectionalOneShotIterator(DataLoader(
        dataloader.TrainDataset(util.flatten_query(qs), ne, nr, a.negatives, answers),
        batch_size=a.batch, shuffle=True, num_workers=a.workers, collate_fn=dataloader.TrainDataset.collate_fn))
    path_it, other_it = it(path_q), it(other_q)
    m = models.KGReasoning(nentity=ne, nrelation=nr, hidden_dim=a.dim, gamma=a.gamma,
                           query_name_dict=names, center_reg=a.center_reg, drop=a.drop)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    m = m.to(dev)
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, m.parameters()), lr=a.lr)

    class Args:
        cuda = dev == "cuda"
    print("qecone speed: %d queries loaded in %.1fs, device %s" % (
        sum(len(v) for v in queries.values()), time.time() - t0, torch.cuda.get_device_name() if dev == "cuda" else dev),
        file=sys.stderr, flush=True)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    start = None
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            sync()
            start = time.time()
        m.train_step(m, opt, path_it, Args, step)
        m.train_step(m, opt, other_it, Args, step)
        m.train_step(m, opt, path_it, Args, step)
    sync()
    secs = time.time() - start
    print(json.dumps({"reference": "QE-ConE", "device": torch.cuda.get_device_name() if dev == "cuda" else dev,
                      "torch": torch.__version__, "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                      "dim": a.dim, "batch": a.batch, "negatives": a.negatives, "workers": a.workers,
                      "steps": a.steps, "seconds": round(secs, 3), "ms_per_step": round(1000 * secs / a.steps, 3),
                      "steps_per_s": round(a.steps / secs, 3)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ref = dict(default=os.environ.get("QECONE"),
               help="a checkout of QE-ConE, github.com/MIRALab-USTC/QE-ConE (MIT); default: $QECONE")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixtures")
    f.add_argument("--reference", **ref)
    f.add_argument("--out", default=os.path.join(REPO, "testdata", "reference"))
    k = sub.add_parser("checkpoint")
    k.add_argument("--reference", **ref)
    k.add_argument("--out", default=os.path.join(REPO, "testdata", "reference", "qecone-checkpoint"))
    k.add_argument("--steps", type=int, default=150)
    k.add_argument("--queries", type=int, default=5, help="test queries per structure, with their scores")
    k.add_argument("--rank-only", type=int, default=20, help="more test queries per structure, ranks only")
    c = sub.add_parser("curves")
    c.add_argument("--reference", **ref)
    c.add_argument("--queries", required=True, help="train queries JSON (scripts/reference/exportqueries)")
    c.add_argument("--out", required=True)
    c.add_argument("--seeds", default="0,1,2")
    c.add_argument("--steps", type=int, default=300)
    c.add_argument("--dim", type=int, default=64)
    c.add_argument("--hidden", type=int, default=1600, help="projection MLP width (ConE: 1600)")
    c.add_argument("--batch", type=int, default=128)
    c.add_argument("--negatives", type=int, default=32)
    c.add_argument("--gamma", type=float, default=2.0)
    c.add_argument("--center-reg", type=float, default=1.0)
    c.add_argument("--lr", type=float, default=3e-4)
    c.add_argument("--drop", type=float, default=0.1)
    c.add_argument("--threads", type=int, default=1)
    v = sub.add_parser("speed", help="time QE-ConE's training steps (FB15k-237 ConE configuration by default)")
    v.add_argument("--reference", **ref)
    v.add_argument("--queries", required=True, help="train queries JSON (scripts/reference/exportqueries)")
    v.add_argument("--steps", type=int, default=200)
    v.add_argument("--warmup", type=int, default=20)
    v.add_argument("--dim", type=int, default=800)
    v.add_argument("--batch", type=int, default=512)
    v.add_argument("--negatives", type=int, default=128)
    v.add_argument("--gamma", type=float, default=30.0)
    v.add_argument("--center-reg", type=float, default=0.02)
    v.add_argument("--lr", type=float, default=5e-5)
    v.add_argument("--drop", type=float, default=0.1)
    v.add_argument("--workers", type=int, default=4, help="DataLoader workers (ConE's FB15k-237 run: --cpu_num 4)")
    v.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "fixtures":
        cmd_fixtures(a)
    elif a.cmd == "checkpoint":
        cmd_checkpoint(a)
    elif a.cmd == "curves":
        cmd_curves(a)
    elif a.cmd == "speed":
        cmd_speed(a)


if __name__ == "__main__":
    main()
