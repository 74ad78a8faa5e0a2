"""Train the stacking judge of `vision.pairjudge` from scratch on the randomized synthetic world.

    .venv/bin/python -m vision.pair_training [--out vision/models/pairjudge.onnx] [--cache DIR]

Frames are the training frames of `vision.facemap_training` (training families and the classic look,
`WORLD_TRAINING_SEEDS` only; `--cache` shares its rendered frames); validation frames come from the tuning seeds.
Every pair of overlapping disks in a frame is one example, asked both ways round ("does A lie on B?"). Each disk's
circle is where its top face appears in the rectified frame (its height's parallax included), then jittered by
about the eye's own centre error, so the judge learns from circles as the eye measures them. Patches get strong
photometric augmentation (channel order and gains, inversion, gamma, blur, noise) and mirror images: the look of a
table must not matter, the geometry of the lens must. Needs the `train` extra (torch, onnx). On two CPU cores: about
25 minutes to render the 2400 frames (shared with `vision.facemap_training` through `--cache`), 12 to train.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from vision.pairjudge import PATCH, Circle, pair_patch

MARGIN = 56           # a pair's crop reaches this far (px at 1 px/mm) around the middle of its lens
CENTRE_JITTER_MM = 0.7
RADIUS_JITTER_MM = 0.4
MIN_DEPTH_MM = 0.5    # pairs overlapping less than this are in contact, not stacked


@dataclass(frozen=True, eq=False)
class PairExample:
    """One overlapping pair: a crop of the rectified frame (1 px/mm) and the two circles in crop px; `a` lies on
    `b`. `rim_shown`: the smaller share of either disk's outline under no disk above it (a pair the eye could
    find both of has some of each)."""

    crop: np.ndarray
    a: Circle
    b: Circle
    rim_shown: float


def frame_pairs(rect: np.ndarray, setup, camera) -> list[PairExample]:
    """Every pair of overlapping disks of one rendered frame, the upper one first."""
    from vision.detect import px_per_mm, table_to_rect
    from vision.parallax import camera_position
    from vision.synth.truth import truth_calibration

    cal = truth_calibration(camera, setup.diameters_mm)
    if abs(px_per_mm(cal) - 1.0) > 1e-6:
        raise ValueError("training frames are rectified at 1 px/mm")
    cam = camera_position(cal)
    disks = [d for d in setup.disks if d.id not in setup.held and d.tilt_squash >= 0.999]
    if cam is None or len(disks) < 2:
        return []
    top = np.array([d.top_height_mm + d.lift_mm for d in disks])
    xy = np.array([[d.x_mm, d.y_mm] for d in disks])
    c = np.array([cam.x_mm, cam.y_mm])
    # the top face seen on the table plane lies pushed away from the camera's nadir (vision.parallax)
    seen = c + (xy - c) * (cam.height_mm / (cam.height_mm - top))[:, None]
    px = table_to_rect(cal, seen)
    ang = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    shown = []
    for i, d in enumerate(disks):
        ox, oy = d.x_mm + d.radius_mm * np.cos(ang), d.y_mm + d.radius_mm * np.sin(ang)
        hidden = np.zeros(len(ang), bool)
        for k, o in enumerate(disks):
            if top[k] > top[i]:
                hidden |= np.hypot(ox - o.x_mm, oy - o.y_mm) < o.radius_mm
        shown.append(1.0 - float(hidden.mean()))
    out = []
    h, w = rect.shape[:2]
    for i in range(len(disks)):
        for j in range(i + 1, len(disks)):
            di, dj = disks[i], disks[j]
            if math.hypot(di.x_mm - dj.x_mm, di.y_mm - dj.y_mm) > di.radius_mm + dj.radius_mm - MIN_DEPTH_MM:
                continue
            up, lo = (i, j) if top[i] > top[j] else (j, i)
            a = Circle(float(px[up, 0]), float(px[up, 1]), disks[up].radius_mm)
            b = Circle(float(px[lo, 0]), float(px[lo, 1]), disks[lo].radius_mm)
            m = 0.5 * np.array([a.x + b.x, a.y + b.y])
            x0, y0 = int(round(m[0])) - MARGIN, int(round(m[1])) - MARGIN
            if x0 < 0 or y0 < 0 or x0 + 2 * MARGIN + 1 > w or y0 + 2 * MARGIN + 1 > h:
                continue
            crop = np.ascontiguousarray(rect[y0:y0 + 2 * MARGIN + 1, x0:x0 + 2 * MARGIN + 1])
            out.append(PairExample(crop, Circle(a.x - x0, a.y - y0, a.r), Circle(b.x - x0, b.y - y0, b.r),
                                   min(shown[i], shown[j])))
    return out


def examples_of(jobs: list[tuple], workers: int, cache: Path | None) -> list[PairExample]:
    from vision.facemap_training import render_samples, table_for

    samples = render_samples(jobs, workers, cache)
    out: list[PairExample] = []
    for job, s in zip(jobs, samples):
        setup, camera = table_for(*job)
        out += frame_pairs(s.rect, setup, camera)
    return out


def _jittered(c: Circle, rng: np.random.Generator) -> Circle:
    return Circle(c.x + rng.normal(0, CENTRE_JITTER_MM), c.y + rng.normal(0, CENTRE_JITTER_MM),
                  c.r + rng.normal(0, RADIUS_JITTER_MM))


def recoloured(bgr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random look for a (PATCH, PATCH, 3) float 0..255 patch."""
    img = bgr[..., rng.permutation(3)] * rng.uniform(0.6, 1.4, 3)[None, None, :] + rng.uniform(-30, 30, 3)
    if rng.random() < 0.15:
        img = 255.0 - img
    if rng.random() < 0.1:
        img = np.repeat(img.mean(-1, keepdims=True), 3, -1)
    img = 255.0 * np.clip(img / 255.0, 0.0, 1.0) ** rng.uniform(0.7, 1.4)
    if rng.random() < 0.25:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 1.2))
    if rng.random() < 0.5:
        img = img + rng.normal(0.0, rng.uniform(1.0, 6.0), img.shape)
    return np.clip(img, 0, 255)


def batch(examples: list[PairExample], rng: np.random.Generator, n: int, augment: bool = True
          ) -> tuple[np.ndarray, np.ndarray]:
    """n patches (n, 5, PATCH, PATCH) and labels (1: the first circle lies on the second)."""
    x = np.empty((n, 5, PATCH, PATCH), np.float32)
    y = np.empty(n, np.float32)
    for k in range(n):
        e = examples[int(rng.integers(len(examples)))]
        a, b = (_jittered(e.a, rng), _jittered(e.b, rng)) if augment else (e.a, e.b)
        flip = rng.random() < 0.5
        p = pair_patch(e.crop, b, a) if flip else pair_patch(e.crop, a, b)
        if augment:
            bgr = (p[:3].transpose(1, 2, 0) + 0.5) * 255.0
            p[:3] = (recoloured(bgr, rng) / 255.0 - 0.5).transpose(2, 0, 1)
            if rng.random() < 0.5:  # the mirror image about the line of centres
                p = p[:, ::-1]
        x[k], y[k] = p, 0.0 if flip else 1.0
    return x, y


def build_network():
    """Five 3x3 convolutions down to 4x4, mean-pooled, one logit: which of the two circles' arcs in the lens is an
    outline, and whose face fills it, are local questions; pooling sums their votes over the lens."""
    from torch import nn

    def conv(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    return nn.Sequential(conv(5, 16, 1), conv(16, 24, 2), conv(24, 32, 2), conv(32, 48, 2), conv(48, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 1))


def accuracy(net, examples: list[PairExample]) -> float:
    """Share of pairs ordered right by the antisymmetric judgement, at the circles' true places, among the pairs
    with at least a quarter of each disk's outline in view (one the eye could find both disks of)."""
    import torch

    examples = [e for e in examples if e.rim_shown >= 0.25]
    if not examples:
        return float("nan")
    xa = np.stack([pair_patch(e.crop, e.a, e.b) for e in examples])
    xb = np.stack([pair_patch(e.crop, e.b, e.a) for e in examples])
    with torch.no_grad():
        fa = net(torch.from_numpy(xa)).numpy().reshape(-1)
        fb = net(torch.from_numpy(xb)).numpy().reshape(-1)
    return float(np.mean(fa - fb > 0))


def train_judge(make_batch, report, steps: int, seed: int, log_every: int = 250):
    """A patch judge (`build_network`) trained from scratch: `steps` AdamW steps on a one-cycle schedule, each on
    `make_batch(rng)` -> (patches, labels), the binary cross-entropy of its logits; `report(net)` (a short text)
    every `log_every` steps. Shared by this judge and the nest judge (`vision.nest_training`)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = build_network()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.1)
    t0 = time.time()
    for step in range(steps):
        net.train()
        x, y = make_batch(rng)
        loss = F.binary_cross_entropy_with_logits(net(torch.from_numpy(x)).reshape(-1), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if (step + 1) % log_every == 0 or step == steps - 1:
            net.eval()
            print(f"  step {step + 1}/{steps}  loss {loss.item():.4f}  {report(net)}  ({time.time() - t0:.0f} s)",
                  flush=True)
    return net.eval()


def train(examples: list[PairExample], valid: list[PairExample], steps: int, batch_size: int, seed: int,
          log_every: int = 250):
    return train_judge(lambda rng: batch(examples, rng, batch_size),
                       lambda net: f"valid pairs in view ordered right {accuracy(net, valid):.3f}", steps, seed,
                       log_every)


def export_onnx(net, path: Path, patch: int = PATCH) -> None:
    """A patch judge's file: (N, 5, patch, patch) patches in, N logits out."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(2, 5, patch, patch), str(path), input_names=["patch"],
                      output_names=["logit"], opset_version=13, dynamic_axes={"patch": {0: "n"}, "logit": {0: "n"}},
                      dynamo=False)


def main(argv: list[str] | None = None) -> int:
    from vision.facemap_training import add_tier_shares, families_to_train, training_arguments, training_jobs

    parser = training_arguments(__doc__, "vision/models/pairjudge.onnx", 2400, 8000, 64)
    add_tier_shares(parser)
    args = parser.parse_args(argv)
    import torch

    from vision.synth import seeds

    try:
        families = families_to_train(args.families)
    except ValueError as exc:
        print(f"pair_training: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, args.workers))
    print(f"rendering {args.frames} training frames of {', '.join(families)} ...", flush=True)
    examples = examples_of(training_jobs(families, args.frames, seeds.WORLD_TRAINING_SEEDS, args.piled_share,
                                         args.alike_share), args.workers, args.cache)
    valid = examples_of(training_jobs(families, args.valid_frames, seeds.WORLD_TUNING_SEEDS), args.workers,
                        args.cache)
    print(f"{len(examples)} training pairs, {len(valid)} validation pairs; training {args.steps} steps of "
          f"{args.batch} ...", flush=True)
    net = train(examples, valid, args.steps, args.batch, args.seed)
    export_onnx(net, Path(args.out))
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
