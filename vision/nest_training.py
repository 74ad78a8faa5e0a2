"""Train the judge of `vision.nestjudge` from scratch on the randomized synthetic world.

    .venv/bin/python -m vision.nest_training [--out vision/models/nestjudge.onnx] [--frames N]

Frames of the training families and the classic look are rendered from `WORLD_VERDICT_SEEDS` (rooms the face
network never trained on, so its maps make the mistakes it makes on a new table; frames 1 and up, not the
verdict's own frame 0) and run through the eye as shipped. Every circle the verdict turns down lying wholly within
a disk the eye accepted is one example, labelled against the renderer's truth: a disk lying on it (a true disk of
its size, at least a quarter of it in view, its centre within `MATCH_SHARE` of the radius) or not (no true disk of
its size there: a ring printed in the art, texture); so is each nest place the eye finds within an accepted disk
(`vision.fit.NestPlace`: where the rim map's ring votes peak, a disk's outline or a ring in art; half of those
with no disk kept); every true disk lying wholly on a disk the eye found is one more example of a disk, at its true
place. Validation: the same from `WORLD_TUNING_SEEDS`. Patches get strong
photometric augmentation and mirror images (as `vision.pair_training`'s). Needs the `train` extra (torch, onnx).
On two CPU cores about 17-25 minutes to render and run the eye on the 1600 frames (200 tables: `jobs_of`), 5 to
train the 3000 steps (the defaults: the shipped judge's command).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vision.nestjudge import PATCH, Circle, nest_patch, patch_scale

MATCH_SHARE = 0.3      # a circle within this share of the radius of a true disk's centre lies on it
MIN_VISIBLE = 0.25     # a true disk seen less than this is neither to be found nor invented
MIN_PROBABILITY = 0.05  # judged circles the verdict gave less than this are left out
WITHIN_SHARE = 0.7     # a true disk with this share of its face over the lower one lies wholly on it
PLACE_RING_SHARE = 0.5  # share of the nest places holding no disk kept as examples
CENTRE_JITTER_MM = 0.7
RADIUS_JITTER_MM = 0.4


@dataclass(frozen=True, eq=False)
class NestExample:
    """One circle A lying within a disk B: a crop of the rectified frame (1 px/mm) and both circles in crop px;
    `disk`: A is a disk lying on B. `judged`: A is a circle the eye judged (else a true disk at its true place);
    `probability`: the verdict's, for a judged circle."""

    crop: np.ndarray
    a: Circle
    b: Circle
    disk: bool
    judged: bool
    probability: float


def crop_example(rect: np.ndarray, a: Circle, b: Circle, **kw) -> NestExample | None:
    """The example with a crop round A reaching the patch and some jitter beyond it (None: off the image)."""
    half = int(math.ceil((PATCH / 2.0) / patch_scale(a) * math.sqrt(2.0) + 4))
    x0, y0 = int(round(a.x)) - half, int(round(a.y)) - half
    h, w = rect.shape[:2]
    if x0 < 0 or y0 < 0 or x0 + 2 * half + 1 > w or y0 + 2 * half + 1 > h:
        return None
    crop = np.ascontiguousarray(rect[y0:y0 + 2 * half + 1, x0:x0 + 2 * half + 1])
    return NestExample(crop, Circle(a.x - x0, a.y - y0, a.r), Circle(b.x - x0, b.y - y0, b.r), **kw)


@dataclass(frozen=True, eq=False)
class TrainingFrame:
    """One rendered training frame as a judge's trainer reads it: the rectified image (1 px/mm), the maps' scale,
    and its true disks on the table (held and tilted ones left out): where each one's top face appears in the
    rectified image (`seen`, parallax of its height included), its radius, top height and visible share."""

    rect: np.ndarray
    calibration: object
    sizes: object
    scale: float               # rectified px per map px
    net: float                 # the scale the network reads the table at
    seen: np.ndarray           # (N, 2) rectified px
    radius: np.ndarray         # (N,) mm
    top: np.ndarray            # (N,) mm
    visible: np.ndarray        # (N,) share of each face in view


def training_frame(family: str, seed: int, frame_no: int, tier: str = "standard") -> TrainingFrame | None:
    """The frame of `family`'s table (`vision.facemap_training.table_for`) rendered and rectified with its true
    calibration; None for a room whose disks the network reads at another scale (not a judge's lesson), with no
    camera position, or with no true disk."""
    from vision.detect import map_scale, network_px_per_mm, px_per_mm, rectified_frame, sizes_for, table_to_rect
    from vision.facemap_training import table_for
    from vision.parallax import camera_position
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    setup, camera = table_for(family, seed, frame_no, tier)
    frame = render_frame(setup, camera)
    cal = truth_calibration(camera, setup.diameters_mm)
    ppm = px_per_mm(cal)
    if abs(ppm - 1.0) > 1e-6:
        raise ValueError("training frames are rectified at 1 px/mm")
    sizes = sizes_for(cal, setup.diameters_mm)
    net = network_px_per_mm(sizes)
    if abs(net - 1.0) > 1e-6:
        return None
    cam = camera_position(cal)
    truth = [d for d in setup.disks if d.id not in setup.held and d.tilt_squash >= 0.999]
    if cam is None or not truth:
        return None
    vis_of = {d.id: float(d.extra.get("visible_fraction", 1.0)) for d in frame.scene.disks}
    top = np.array([d.top_height_mm + d.lift_mm for d in truth])
    xy = np.array([[d.x_mm, d.y_mm] for d in truth])
    c = np.array([cam.x_mm, cam.y_mm])
    seen = table_to_rect(cal, c + (xy - c) * (cam.height_mm / (cam.height_mm - top))[:, None])   # top faces
    return TrainingFrame(rect=rectified_frame(frame.image, cal), calibration=cal, sizes=sizes,
                         scale=map_scale(ppm, net), net=net, seen=seen,
                         radius=np.array([d.radius_mm for d in truth]), top=top,
                         visible=np.array([vis_of.get(d.id, 1.0) for d in truth]))


def frame_examples(job: tuple[str, int, int]) -> list[NestExample]:
    """The examples of one frame of `family` (module docstring)."""
    from tablesight.scene import SIZE_CLASSES
    from vision.detect import battlefield_px, maps_of
    from vision.fit import DEFAULT_CONFIG
    from vision.locate import lies_within, locate_in_maps

    family, seed, frame_no = job
    tf = training_frame(family, seed, frame_no)
    if tf is None:
        return []
    rect, cal, sizes, scale, seen, tr, top, vis = (tf.rect, tf.calibration, tf.sizes, tf.scale, tf.seen, tf.radius,
                                                  tf.top, tf.visible)
    ppm, net = 1.0, tf.net

    judged: list[tuple[float, float, float, float]] = []

    def log(ev, u: float, v: float, rc: float, accepted: bool, probability: float) -> None:
        if not accepted:
            judged.append((float((u + 0.5) * scale - 0.5), float((v + 0.5) * scale - 0.5), rc * scale,
                           probability))

    maps = maps_of(rect, ppm, DEFAULT_CONFIG, net)
    radii = [sizes.radius(s) * ppm for s in SIZE_CLASSES]
    fits = locate_in_maps(maps, rect, radii, scale, ppm / scale, (), DEFAULT_CONFIG, battlefield_px(cal), None,
                          None, log)
    if not fits:
        return []
    acc = np.array([(f.cx, f.cy, f.r_px) for f in fits])
    # each accepted disk's true disk (the nearest of its size), to tell which true disks lie on it
    lower_of = []
    for f in fits:
        d = np.hypot(seen[:, 0] - f.cx, seen[:, 1] - f.cy)
        ok = np.flatnonzero((np.abs(tr - f.r_px) < 0.5) & (d < MATCH_SHARE * f.r_px))
        lower_of.append(int(ok[np.argmin(d[ok])]) if ok.size else -1)
    out: list[NestExample] = []
    kept: list[tuple[float, float, float, float]] = []
    for x, y, r, p in sorted(judged, key=lambda j: -j[3]):
        # a circle judged again at a later pass is one example (the likelier reading); a ring the verdict all but
        # ruled out teaches little: the judge is asked about the likelier ones (`DetectorConfig.suspect_probability`)
        if p < MIN_PROBABILITY or any(abs(r - k[2]) < 0.5 and math.hypot(x - k[0], y - k[1]) < 1.5 for k in kept):
            continue
        kept.append((x, y, r, p))
    for x, y, r, p in kept:
        inside = np.flatnonzero(lies_within(x, y, r, acc[:, 0], acc[:, 1], acc[:, 2]))
        copy = (np.abs(acc[:, 2] - r) < 0.5) & (np.hypot(acc[:, 0] - x, acc[:, 1] - y)
                                                 < DEFAULT_CONFIG.copy_distance * r)
        if inside.size == 0 or copy.any():
            continue        # not within a disk, or a circle accepted at a later pass
        k = int(inside[np.argmin(acc[inside, 2])])           # the smallest disk it lies within
        d = np.hypot(seen[:, 0] - x, seen[:, 1] - y)
        same = np.flatnonzero((np.abs(tr - r) < 0.5) & (d < MATCH_SHARE * r))
        if same.size:
            t = int(same[np.argmin(d[same])])
            low = lower_of[k]
            if vis[t] < MIN_VISIBLE or low < 0 or top[t] <= top[low]:
                continue                                     # hidden, or not known to lie on that disk
        e = crop_example(rect, Circle(x, y, r), Circle(*acc[k]), disk=bool(same.size), judged=True, probability=p)
        if e is not None:
            out.append(e)
    # the places within accepted disks the judge is asked about besides the suspicions (`DetectorConfig.nest_search`):
    # mostly rings in art, where the rim map's ring votes peak; one in `PLACE_RING_SHARE` of those is kept
    rng = np.random.default_rng([zlib.crc32(family.encode()), seed, frame_no])
    for k, f in enumerate(fits):
        for s in f.nest_places:
            d = np.hypot(seen[:, 0] - s.cx, seen[:, 1] - s.cy)
            same = np.flatnonzero((np.abs(tr - s.r_px) < 0.5) & (d < MATCH_SHARE * s.r_px))
            if same.size:
                t = int(same[np.argmin(d[same])])
                low = lower_of[k]
                if vis[t] < MIN_VISIBLE or low < 0 or top[t] <= top[low]:
                    continue
            elif rng.random() >= PLACE_RING_SHARE:
                continue
            e = crop_example(rect, Circle(s.cx, s.cy, s.r_px), Circle(*acc[k]), disk=bool(same.size), judged=True,
                      probability=float("nan"))
            if e is not None:
                out.append(e)
    # true disks lying wholly on a disk the eye found, at their true places
    ang = np.linspace(0, 2 * np.pi, 48, endpoint=False)
    for k, low in enumerate(lower_of):
        if low < 0:
            continue
        for t in range(len(tr)):
            if t == low or top[t] <= top[low] or tr[t] >= tr[low] - 0.5 or vis[t] < MIN_VISIBLE:
                continue
            on = np.hypot(seen[t, 0] + tr[t] * np.cos(ang) - seen[low, 0],
                          seen[t, 1] + tr[t] * np.sin(ang) - seen[low, 1]) < tr[low]
            if on.mean() < WITHIN_SHARE:
                continue
            e = crop_example(rect, Circle(float(seen[t, 0]), float(seen[t, 1]), float(tr[t])), Circle(*acc[k]),
                      disk=True, judged=False, probability=float("nan"))
            if e is not None:
                out.append(e)
    return out


def examples_of(jobs: list, workers: int, of=frame_examples) -> list[NestExample]:
    """The examples of every job, `of(job)` each, rendered in `workers` processes."""
    # the eye's modules are imported before the workers fork: every pool runs the code as it was at the start
    import importlib

    for name in ("vision.detect", "vision.facemap_training", "vision.locate", "vision.parallax"):
        importlib.import_module(name)

    t0 = time.time()
    out: list[NestExample] = []
    with mp.get_context("fork").Pool(workers) as pool:
        for k, got in enumerate(pool.imap(of, jobs, chunksize=2)):
            out += got
            if (k + 1) % 100 == 0:
                print(f"  {k + 1}/{len(jobs)} frames, {len(out)} examples ({time.time() - t0:.0f} s)", flush=True)
    return out


def _jittered(c: Circle, rng: np.random.Generator) -> Circle:
    return Circle(c.x + rng.normal(0, CENTRE_JITTER_MM), c.y + rng.normal(0, CENTRE_JITTER_MM),
                  max(1.0, c.r + rng.normal(0, RADIUS_JITTER_MM)))


def batch(examples: list[NestExample], rng: np.random.Generator, n: int, augment: bool = True
          ) -> tuple[np.ndarray, np.ndarray]:
    """n patches (n, 5, PATCH, PATCH), half of them disks, and labels (1: a disk lying on the lower one)."""
    from vision.pair_training import recoloured

    disks = [k for k, e in enumerate(examples) if e.disk]
    rings = [k for k, e in enumerate(examples) if not e.disk]
    x = np.empty((n, 5, PATCH, PATCH), np.float32)
    y = np.empty(n, np.float32)
    for k in range(n):
        pool = disks if (k % 2 == 0 and disks) or not rings else rings
        e = examples[pool[int(rng.integers(len(pool)))]]
        a, b = (_jittered(e.a, rng), _jittered(e.b, rng)) if augment else (e.a, e.b)
        p = nest_patch(e.crop, a, b)
        if augment:
            bgr = (p[:3].transpose(1, 2, 0) + 0.5) * 255.0
            p[:3] = (recoloured(bgr, rng) / 255.0 - 0.5).transpose(2, 0, 1)
            if rng.random() < 0.5:      # the mirror image about the line of centres
                p = p[:, ::-1]
        x[k], y[k] = p, float(e.disk)
    return x, y


def scores(net, examples: list[NestExample]) -> dict[str, float]:
    """Of the judged circles (the ones the eye would ask about): how many, how many are disks, the ranking AUC of
    the judge's logit, and the disks and rings it takes at probability 0.5 and 0.8."""
    import torch

    ex = [e for e in examples if e.judged]
    if not ex:
        return {"circles": 0}
    x = np.stack([nest_patch(e.crop, e.a, e.b) for e in ex])
    with torch.no_grad():
        f = np.concatenate([net(torch.from_numpy(x[s:s + 256])).numpy().reshape(-1) for s in range(0, len(x), 256)])
    y = np.array([e.disk for e in ex])
    pos, neg = f[y], f[~y]
    auc = float(((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
                if pos.size and neg.size else float("nan"))
    out = {"circles": int(len(y)), "disks": int(y.sum()), "auc": round(auc, 3)}
    for level in (0.5, 0.8):
        logit = math.log(level / (1 - level))
        out[f"disks_taken_{level}"] = int((pos >= logit).sum())
        out[f"rings_taken_{level}"] = int((neg >= logit).sum())
    return out


def train(examples: list[NestExample], valid: list[NestExample], steps: int, batch_size: int, seed: int,
          log_every: int = 250):
    """The pair judge's network and training loop (`vision.pair_training.train_judge`) on these examples: whether
    A's outline is a cut edge with a wall and a shadow or a printed line is a local question asked all round it."""
    from vision.pair_training import train_judge

    return train_judge(lambda rng: batch(examples, rng, batch_size), lambda net: f"valid {scores(net, valid)}",
                       steps, seed, log_every)


def export_onnx(net, path: Path) -> None:
    """The judge's file, written as the pair judge's (`vision.pair_training.export_onnx`)."""
    from vision.pair_training import export_onnx as export_judge

    export_judge(net, path, PATCH)


def jobs_of(families: list[str], count: int, seeds: tuple[int, ...], first_frame: int) -> list[tuple[str, int, int]]:
    """`count` frames spread over the families and seeds, frame numbers from `first_frame` on. Family and seed
    step on together, so consecutive frames are other tables as well as other looks: a disk lying on another is
    a place and a size as much as a look, and a frame's table is its seed's and frame number's whatever the family."""
    n_f, n_s = len(families), len(seeds)
    return [(families[k % n_f], seeds[k % n_s], first_frame + k // math.lcm(n_f, n_s)) for k in range(count)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="vision/models/nestjudge.onnx")
    p.add_argument("--frames", type=int, default=1600, help="training frames rendered")
    p.add_argument("--valid-frames", type=int, default=160)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="processes rendering frames")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", type=Path, help="keep the examples in this folder and reuse them")
    args = p.parse_args(argv)
    if min(args.frames, args.steps, args.batch, args.workers) < 1:
        print("nest_training: --frames, --steps, --batch and --workers must be positive", file=sys.stderr)
        return 2
    import pickle

    from vision.synth.seeds import WORLD_TUNING_SEEDS, WORLD_VERDICT_SEEDS
    from vision.synth.world import TRAINING_FAMILIES

    families = list(TRAINING_FAMILIES) + ["classic"]
    def gathered(name: str, count: int, seeds: tuple[int, ...]) -> list[NestExample]:
        """The examples of `count` frames of `seeds`, kept in (and read again from) the --examples folder."""
        path = None if args.examples is None else args.examples / f"{name}-{count}.pickle"
        if path is not None and path.is_file():
            return pickle.loads(path.read_bytes())
        print(f"rendering {count} {name} frames of {len(families)} families and running the eye ...", flush=True)
        got = examples_of(jobs_of(families, count, seeds, 1), args.workers)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(got))
        return got

    examples = gathered("training", args.frames, WORLD_VERDICT_SEEDS)
    valid = gathered("validation", args.valid_frames, WORLD_TUNING_SEEDS)
    return train_and_write("nest_training", "judged by the eye", examples, valid, args)


def train_and_write(prog: str, judged: str, examples: list[NestExample], valid: list[NestExample],
                    args: argparse.Namespace) -> int:
    """A judge trainer's last step: train on `examples` (`args.steps`, `args.batch`, `args.seed`, torch on
    `args.workers` threads) and write the file `args.out`; 1 (and one line) when the examples are of one kind
    only. `judged`: what the judged examples are, for the log."""
    n_disk = sum(e.disk for e in examples)
    print(f"{len(examples)} training examples ({n_disk} disks, {sum(e.judged and e.disk for e in examples)} of them "
          f"{judged}), {len(valid)} validation; training {args.steps} steps of {args.batch} ...", flush=True)
    if n_disk == 0 or n_disk == len(examples):
        print(f"{prog}: the frames gave examples of one kind only", file=sys.stderr)
        return 1
    import torch

    torch.set_num_threads(max(1, args.workers))
    net = train(examples, valid, args.steps, args.batch, args.seed)
    export_onnx(net, Path(args.out))
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KiB); validation {scores(net, valid)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
