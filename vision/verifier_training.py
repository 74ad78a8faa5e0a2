"""Train the rim verifier (`vision.verifier`) on the renderer's tuning seeds; never on the gate seeds.

    .venv/bin/python -m vision.verifier_training DIR [DIR ...] --out vision/models/rim_verifier.npz

DIRs are `tablesight synth` folders rendered from TUNING_SEEDS (`benchmarks/eval_vision.py --generate tuning
--workdir W` leaves them in W); a folder rendered from a gate seed is refused. Every frame is run through the
detector's candidate and fit stages (`vision.detect.candidate_fits`); each fitted candidate is labelled from the
ground truth:

- a disk when it lies within 12 % of a true disk's radius of its centre and has its size class (true disks under
  25 % visible, and fits between 12 % and 30 % off, are left out: neither clearly right nor clearly wrong);
- a ray shows the rim when the candidate is a disk and the rim point there lies under no disk above it.

The folders' seeds are split in two halves: the ray network learns on the first, the disk network on the ray
network's scores of the second (so it sees the ray network's real mistakes, not its training fit). Needs
scikit-learn (`pip install -e .[train]`); the detector itself only needs numpy.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from tablesight.errors import InputError
from tablesight.scene import SIZE_CLASSES, load_scene
from vision import verifier as V

MATCH_GOOD, MATCH_BAD = 0.12, 0.30


@dataclass
class FrameData:
    seed: int
    ray_x: np.ndarray        # (M, K, F) ray features
    ray_y: np.ndarray        # (M, K) 1 where the rim shows
    ray_w: np.ndarray        # (M, K) 0 for rays of candidates left out
    size_idx: np.ndarray
    fit: np.ndarray          # (M, 6)
    label: np.ndarray        # (M,) 1 disk, 0 not, -1 left out
    context: list            # per context kind: (covered, explained, inside_depth, concentric)


@dataclass(frozen=True)
class TrueDisks:
    """The ground truth of one frame in rectified px: centres of the disks' tops, radii, z, size index, visible."""

    x: np.ndarray
    y: np.ndarray
    r: np.ndarray
    z: np.ndarray
    size_idx: np.ndarray
    visible: np.ndarray


def _label(rect: np.ndarray, cal, sizes, truth: TrueDisks, seed: int) -> FrameData | None:
    """Fit the frame's candidates as the detector does and label them and their rays from the truth."""
    from vision import detect as D

    ppm = D.px_per_mm(cal)
    try:
        v, img = D.candidate_fits(rect, cal, sizes)
    except InputError:
        return None
    M = len(v.cx)
    K = v.support.shape[1]
    angles = np.arange(K) * (2.0 * math.pi / K)
    X = V.ray_features(V.ray_profiles(img, v.cx, v.cy, v.r, angles, ppm), v.size_idx)
    gx, gy, gr, gz = truth.x, truth.y, truth.r, truth.z
    N = len(gx)
    if N:
        d = np.hypot(v.cx[:, None] - gx[None, :], v.cy[:, None] - gy[None, :]) / gr[None, :]
        dn = np.where(v.size_idx[:, None] == truth.size_idx[None, :], d, np.inf)
        j = np.argmin(dn, axis=1)
        best = dn[np.arange(M), j]
    else:
        j, best = np.zeros(M, np.int64), np.full(M, np.inf)
    label = np.where(best <= MATCH_GOOD, 1, np.where(best <= MATCH_BAD, -1, 0))
    if N:
        label[(label == 1) & (truth.visible[j] < 0.25)] = -1
    ray_y = np.zeros((M, K), np.float32)
    fit = D.fit_measures(v)
    # Context as the greedy acceptance sees it: nothing accepted yet, or every other true disk accepted.
    ctx = [(np.zeros((M, K), bool), np.zeros((M, K), bool), np.zeros(M), np.ones(M))]
    if N:
        inside = np.hypot(v.nx[:, :, None] - gx[None, None, :], v.ny[:, :, None] - gy[None, None, :]) < \
            (gr[None, None, :] - 1.0)                                              # (M, K, N)
        mine = np.zeros((M, N), bool)
        mine[np.arange(M)[label == 1], j[label == 1]] = True
        # A ray shows the rim unless a true disk above the matched one lies over the rim point.
        above = (gz[None, :] > gz[j][:, None]) & ~mine
        ray_y = ((label == 1)[:, None] & ~(inside & above[:, None, :]).any(2)).astype(np.float32)
        others = ~mine
        covered = (inside & others[:, None, :]).any(2)
        rim_d = np.abs(np.hypot(v.ex[:, :, None] - gx[None, None, :], v.ey[:, :, None] - gy[None, None, :])
                       - gr[None, None, :])
        explained = ((rim_d <= 1.5) & others[:, None, :]).any(2)
        depth, conc = D.placement_measures(v.cx, v.cy, v.r, gx, gy, gr, others)
        ctx.append((covered, explained, depth, conc))
    ray_w = (label >= 0).astype(np.float32)[:, None] * np.ones((1, K), np.float32)
    return FrameData(seed, X, ray_y, ray_w, v.size_idx.copy(), fit, label, ctx)


def _synth_truth(folder: Path, entry: dict, cal, sizes) -> tuple[np.ndarray, TrueDisks]:
    from vision import detect as D
    from vision.parallax import camera_position

    rect = D.rectified_frame(cv2.imread(str(folder / entry["image"])), cal)
    ppm = D.px_per_mm(cal)
    disks = [t for t in load_scene(folder / entry["scene"]).disks if not t.extra.get("held")]
    if not disks:
        e = np.zeros(0)
        return rect, TrueDisks(e, e, e, e.astype(int), e.astype(int), e)
    tops = np.array([[t.x_mm, t.y_mm] for t in disks])
    cam = camera_position(cal)
    if cam is not None:
        # The rectified image shows a disk's top: where the camera sees it, further out than the disk itself.
        h = np.array([float(t.extra.get("top_height_mm", (t.z + 1) * 2.0)) for t in disks])
        c = np.array([cam.x_mm, cam.y_mm])
        tops = c + (tops - c) * (cam.height_mm / (cam.height_mm - h))[:, None]
    g = D.table_to_rect(cal, tops)
    radii = np.array([sizes.radius(s) for s in SIZE_CLASSES])
    return rect, TrueDisks(g[:, 0], g[:, 1], np.array([t.radius_mm * ppm for t in disks]),
                           np.array([t.z for t in disks]),
                           np.array([SIZE_CLASSES.index(t.size) if t.size else int(np.argmin(np.abs(
                               radii - t.radius_mm))) for t in disks]),
                           np.array([float(t.extra.get("visible_fraction", 1.0)) for t in disks]))


def _drawn_truth(seed: int) -> tuple[np.ndarray, TrueDisks]:
    """A drawn table (`vision.synth.drawn`) of varied counts, stacks, ring colours and clutter, and its truth."""
    from vision.synth import drawn

    rng = np.random.default_rng(seed)
    rings = tuple(rng.permutation(list(drawn.RING_COLOURS))[:2])
    # Half the tables also stack disks nearly centred on the one below (a flip can land so): a circle centred in a
    # disk is then its print or a disk on it, and the verifier must see both.
    reach = (0.0, 0.85) if seed % 4 >= 2 else (0.45, 0.85)
    disks = drawn.random_layout(seed, n=int(rng.integers(15, 40)), stacks=int(rng.integers(3, 10)), rings=rings,
                                stack_reach=reach)
    img = drawn.draw_table(disks, seed, clutter=bool(seed % 2), noise=float(rng.uniform(1.0, 5.0)))
    x = np.array([d.x_mm + 40.0 for d in disks])
    y = np.array([d.y_mm + 40.0 for d in disks])
    r = np.array([drawn.RADII[d.size] for d in disks])
    z = np.array([d.z for d in disks])
    # Visible share of each disk: its pixels not under a disk drawn later (higher z, or the same z drawn after).
    order = sorted(range(len(disks)), key=lambda k: disks[k].z)
    vis = np.ones(len(disks))
    yy, xx = np.mgrid[-50:51, -50:51]
    for a in range(len(disks)):
        own = xx ** 2 + yy ** 2 <= r[a] ** 2
        hidden = np.zeros_like(own)
        for b in order[order.index(a) + 1:]:
            hidden |= (xx + x[a] - x[b]) ** 2 + (yy + y[a] - y[b]) ** 2 <= r[b] ** 2
        vis[a] = (own & ~hidden).sum() / own.sum()
    sizes_idx = np.array([SIZE_CLASSES.index(d.size) for d in disks])
    return img, TrueDisks(x, y, r, z + np.arange(len(disks)) * 1e-3, sizes_idx, vis)


def _calibration(folder: Path, diam):
    from vision.synth.camera import SynthCamera
    from vision.synth.truth import truth_calibration

    cam = SynthCamera.from_json(json.loads((folder / "camera_truth.json").read_text()))
    return truth_calibration(cam, diam)


def gather(folders: list[Path], drawn_seeds: int = 0, log=print) -> list[FrameData]:
    """Labelled candidates of every stable frame of the folders, and of `drawn_seeds` drawn tables."""
    from vision.sizes import DiskSizes
    from vision.synth.drawn import identity_calibration
    from vision.synth.seeds import DRAWN_TUNING_SEEDS, GATE_SEEDS

    if not 0 <= drawn_seeds <= len(DRAWN_TUNING_SEEDS):
        raise InputError(f"--drawn: expected 0..{len(DRAWN_TUNING_SEEDS)} drawn tables, got {drawn_seeds}")
    out = []
    for folder in folders:
        try:
            man = json.loads((folder / "manifest.json").read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{folder}: not a `tablesight synth` folder ({exc.__class__.__name__}: {exc})") from None
        if int(man["seed"]) in set(GATE_SEEDS):
            raise InputError(f"{folder}: rendered from gate seed {man['seed']}; train on tuning seeds only")
        diam = tuple(float(man["disk_diameters_mm"][k]) for k in SIZE_CLASSES)
        cal = _calibration(folder, diam)
        sizes = DiskSizes(*diam)
        for e in man["frames"]:
            if e.get("stable", True):
                rect, truth = _synth_truth(folder, e, cal, sizes)
                fd = _label(rect, cal, sizes, truth, int(man["seed"]))
                if fd is not None:
                    out.append(fd)
        log(f"{folder.name}: {len(man['frames'])} frames")
    cal = identity_calibration()
    for seed in DRAWN_TUNING_SEEDS[:drawn_seeds]:
        img, truth = _drawn_truth(seed)
        fd = _label(img, cal, DiskSizes(), truth, seed)
        if fd is not None:
            out.append(fd)
    if drawn_seeds:
        log(f"{min(drawn_seeds, len(DRAWN_TUNING_SEEDS))} drawn tables")
    return out


def _ranges(seeds: set[int]) -> str:
    """'1000-1019, 2000-2039' for a set of seeds."""
    out, run = [], []
    for s in sorted(seeds):
        if run and s != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}")
            run = []
        run.append(s)
    if run:
        out.append(f"{run[0]}-{run[-1]}")
    return ", ".join(out)


def _mlp_from_sklearn(model, mean, scale) -> V.Mlp:
    return V.Mlp(mean.astype(np.float32), scale.astype(np.float32),
                 tuple(np.asarray(w, np.float32) for w in model.coefs_),
                 tuple(np.asarray(b, np.float32) for b in model.intercepts_))


def _fit_mlp(X: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], seed: int) -> V.Mlp:
    from sklearn.neural_network import MLPClassifier

    mean = X.mean(0)
    scale = X.std(0) + 1e-3
    clf = MLPClassifier(hidden_layer_sizes=hidden, alpha=1e-4, batch_size=512, learning_rate_init=2e-3,
                        max_iter=60, early_stopping=True, validation_fraction=0.1, n_iter_no_change=6,
                        random_state=seed)
    clf.fit((X - mean) / scale, y.astype(int))
    return _mlp_from_sklearn(clf, mean, scale)


def train(data: list[FrameData], seed: int = 0, log=print) -> tuple[V.RimVerifier, dict]:
    rng = np.random.default_rng(seed)
    seeds = sorted({d.seed for d in data})
    # Half of each kind of table (renderer, drawn) for each network.
    ray_seeds = set()
    for kind in ({s for s in seeds if s < 2000}, {s for s in seeds if s >= 2000}):
        ray_seeds |= set(sorted(kind)[: len(kind) // 2])
    ray_part = [d for d in data if d.seed in ray_seeds]
    disk_part = [d for d in data if d.seed not in ray_seeds]
    # Ray network: every ray of the disks, and as many rays of the rest drawn at random.
    Xr = np.concatenate([d.ray_x[d.ray_w > 0] for d in ray_part])
    yr = np.concatenate([d.ray_y[d.ray_w > 0] for d in ray_part])
    pos, neg = np.nonzero(yr > 0.5)[0], np.nonzero(yr <= 0.5)[0]
    neg = rng.choice(neg, size=min(len(neg), 3 * len(pos)), replace=False)
    pick = np.concatenate([pos, neg])
    t0 = time.process_time()
    ray = _fit_mlp(Xr[pick], yr[pick], (48, 24), seed)
    log(f"ray network: {len(pos)} rim rays, {len(neg)} others, {time.process_time() - t0:.0f} s")
    # Disk network on the other half, in every context kind.
    Xd, yd = [], []
    for d in disk_part:
        p = ray(d.ray_x)
        keep = d.label >= 0
        for covered, explained, depth, conc in d.context:
            f = V.disk_features(p, covered, explained, d.size_idx, d.fit, depth, conc)
            Xd.append(f[keep])
            yd.append(d.label[keep])
    Xd, yd = np.concatenate(Xd), np.concatenate(yd)
    disk = _fit_mlp(Xd, yd, (24, 12), seed)
    log(f"disk network: {int((yd == 1).sum())} disks, {int((yd == 0).sum())} others")
    verifier = V.RimVerifier(ray, disk, 0.5)
    stats = {"ray_seeds": _ranges(ray_seeds), "disk_seeds": _ranges(set(seeds) - ray_seeds),
             "ray_samples": str(len(pick)), "disk_samples": str(len(yd))}
    return verifier, stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--out", type=Path, default=V.MODEL_PATH)
    p.add_argument("--drawn", type=int, default=80, help="drawn tables (DRAWN_TUNING_SEEDS) to learn from too")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        data = gather(args.folders, args.drawn)
    except InputError as exc:
        print(f"verifier_training: {exc}", file=sys.stderr)
        return 2
    if len({d.seed for d in data}) < 2:
        print("verifier_training: need the frames of at least two seeds (one half for each network)",
              file=sys.stderr)
        return 2
    verifier, stats = train(data, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    verifier.save(args.out, **stats, folders=str(len(args.folders)))
    print(f"wrote {args.out}: {stats}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
