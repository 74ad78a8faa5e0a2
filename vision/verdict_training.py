"""Learn `vision.verdict`'s weights: which measured circles are disks, on frames the face network never saw.

    .venv/bin/python -m vision.verdict_training --out vision/models/verdict.json

Frames of the training families (and the classic look) are rendered from `WORLD_VERDICT_SEEDS`, read by the
shipped face network and run through the eye with a lenient stand-in verdict, so that nearly every circle a
real verdict could face is judged and logged (`vision.accept.accept`'s log). Each logged circle is labelled against
the renderer's truth: a disk when it lies on a true disk of its size class (centre within `MATCH_SHARE` of the
radius) at least `MIN_VISIBLE` visible that no circle accepted before it already took; not a disk otherwise
(printed rings, texture, a second circle on a disk already found); circles on disks seen less than that are left
out. A network of one hidden layer (`fit_verdict`: L2, L-BFGS) is fitted on three quarters of the seeds and scored
on the rest; the file says both. `--face-fade F` learns each fitted circle once more with its face evidence faded
(`faded`; tried and not kept: `benchmarks/results/vision.md`). Held-out families and gate seeds are never rendered
here. CPU, about eight minutes on two cores; no extra needs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np

from vision.verdict import FEATURES, CircleEvidence, Verdict

MATCH_SHARE = 0.3   # a circle within this share of the radius of a true disk's centre lies on it
MIN_VISIBLE = 0.25  # true disks seen less than this are neither to be found nor invented
FACE_FADE = 0.0     # > 0: each circle is learned once more with its face evidence scaled by a factor in [1 - this, 1]


def _lenient(ev: CircleEvidence) -> float:
    """The stand-in verdict while logging: accepts far more than a good one would, so mistakes get judged too."""
    return 1.0 if ev.rim_own >= 0.25 and ev.open_consistency >= 0.45 else 0.0


def frame_judgements(job: tuple[str, int, str | None, str, float | None, float | None, int]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of every new circle judged in one frame (family, seed, network, tier, the scale the network reads a
    table at and the face a circle's inside must show, None: `DetectorConfig`'s, and the views the network reads,
    `DetectorConfig.map_views`), read by the network `model` (None: the shipped one); features in `FEATURES` order,
    y 1 = disk."""
    from dataclasses import replace

    from tablesight.scene import SIZE_CLASSES
    from vision.detect import battlefield_px, map_scale, maps_of, network_px_per_mm, px_per_mm, rectified_frame, \
        sizes_for, table_to_rect
    from vision.facemap_training import table_for
    from vision.fit import DEFAULT_CONFIG
    from vision.locate import locate_in_maps
    from vision.synth.render import render_frame
    from vision.synth.truth import truth_calibration

    family, seed, model, tier, network_ppm, min_face, views = job
    config = replace(DEFAULT_CONFIG, model_path=model, map_views=views)
    if network_ppm is not None:
        config = replace(config, network_px_per_mm=network_ppm)
    if min_face is not None:
        config = replace(config, min_face=min_face)
    setup, camera = table_for(family, seed, 0, tier)
    frame = render_frame(setup, camera)
    cal = truth_calibration(camera, setup.diameters_mm)
    sizes = sizes_for(cal, setup.diameters_mm)
    rect = rectified_frame(frame.image, cal)
    ppm = px_per_mm(cal)
    net = network_px_per_mm(sizes, config)
    scale = map_scale(ppm, net)
    truth = [d for d in frame.scene.disks if not d.extra.get("held")]
    xy = table_to_rect(cal, np.array([[d.x_mm, d.y_mm] for d in truth]).reshape(-1, 2))
    tu, tv = (xy[:, 0] + 0.5) / scale - 0.5, (xy[:, 1] + 0.5) / scale - 0.5
    tr = np.array([sizes.radius(d.size) * ppm / scale for d in truth])
    vis = np.array([float(d.extra.get("visible_fraction", 1.0)) for d in truth])
    taken = np.zeros(len(truth), bool)
    rows: list[np.ndarray] = []
    labels: list[float] = []

    def log(ev: CircleEvidence, u: float, v: float, r_class: float, accepted: bool, probability: float) -> None:
        d = np.hypot(tu - u, tv - v)
        same = (np.abs(tr - r_class) < 0.5) & (d < MATCH_SHARE * tr)
        hit = np.flatnonzero(same)
        if hit.size and vis[hit].max() < MIN_VISIBLE:
            return          # a disk mostly hidden: finding it or not is no lesson
        fresh = hit[~taken[hit] & (vis[hit] >= MIN_VISIBLE)]
        rows.append(ev.vector())
        labels.append(1.0 if fresh.size else 0.0)
        if accepted and fresh.size:
            taken[fresh[np.argmin(d[fresh])]] = True

    maps = maps_of(rect, ppm, config, net)
    radii = [sizes.radius(s) * ppm for s in SIZE_CLASSES]
    locate_in_maps(maps, rect, radii, scale, ppm / scale, (), config, battlefield_px(cal), None,
                   _lenient, log)
    return np.array(rows).reshape(-1, len(FEATURES)), np.array(labels)


def fit_verdict(x: np.ndarray, y: np.ndarray, hidden: int = 8, l2: float = 2.5e-3, seed: int = 0) -> Verdict:
    """A verdict with `hidden` tanh units fitted to (x, y): standardised features, the mean log loss plus `l2` / 2
    times the squared weights (biases free), minimised by L-BFGS from a seeded start: the same (x, y) give the same
    verdict. Two runs of the command do not quite give the same (x, y): the face network's maps differ by about
    1e-5 between a session fixed to one input shape and one that takes any (`vision.runtime`), which depends on the
    frames a worker ran before; the weights then differ by up to about 0.005, the tuning frames' results not at all
    (measured once, 2026-11-27)."""
    if hidden < 1 or l2 < 0:
        raise ValueError("fit_verdict: hidden must be >= 1 and l2 >= 0")
    from scipy.optimize import minimize

    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    mean, scale = x.mean(0), x.std(0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = (x - mean) / scale
    n, k = len(z), z.shape[1]
    split = np.cumsum([k * hidden, hidden, hidden])

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        w1, b1, w2, b2 = np.split(w, split)
        w1 = w1.reshape(k, hidden)
        a = np.tanh(z @ w1 + b1)
        logit = a @ w2 + b2[0]
        g = (1.0 / (1.0 + np.exp(-np.clip(logit, -40, 40))) - y) / n      # d loss / d logit
        ga = np.outer(g, w2) * (1.0 - a * a)
        value = np.mean(np.logaddexp(0.0, logit) - y * logit) + 0.5 * l2 * (np.sum(w1 ** 2) + np.sum(w2 ** 2))
        return value, np.concatenate([(z.T @ ga + l2 * w1).ravel(), ga.sum(0), a.T @ g + l2 * w2, [g.sum()]])

    rng = np.random.default_rng(seed)
    start = np.concatenate([rng.normal(0, 1 / np.sqrt(k), k * hidden), np.zeros(hidden),
                            rng.normal(0, 1 / np.sqrt(hidden), hidden), [0.0]])
    w = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 3000}).x
    w1, b1, w2, b2 = np.split(w, split)
    return Verdict(mean=mean, scale=scale, hidden_weights=w1.reshape(k, hidden), hidden_bias=b1, weights=w2,
                   bias=float(b2[0]))


def faded(x: np.ndarray, fade: float, seed: int = 0) -> np.ndarray:
    """`x` with each row's `face_inside` scaled by a factor drawn uniformly from [1 - fade, 1] (seeded).

    Of the maps the verdict reads, the face map is the one that depends most on a look: on a cloth no training
    family has, it fades over disks whose outline the rim map still draws whole (a held-out family's gate frame,
    looked at once: 95 % of the outline shown in the open, face 0.66, probability 0.51). Trained on the training
    looks alone, the verdict leans on the face; learning each circle once more with less face teaches it that a
    whole outline in the open needs less of it, while a circle with little outline gains nothing. Tried at 0.5 and
    not kept: the live table made up more disks (`benchmarks/results/vision.md`)."""
    if not 0.0 <= fade <= 1.0:
        raise ValueError(f"faded: fade must be within 0..1, got {fade}")
    out = np.array(x, np.float64, copy=True)
    k = FEATURES.index("face_inside")
    out[:, k] *= np.random.default_rng(seed).uniform(1.0 - fade, 1.0, len(out))
    return out


WITHIN_OTHERS = 0.05  # a circle with less of its outline in the open than this lies wholly within other disks


def scores(v: Verdict, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Circles and disks, precision and recall at probability 0.5, and of the disks lying wholly within others
    (the commonest miss: `benchmarks/results/misses.md`) how many it takes."""
    p = v.probabilities(x) >= 0.5
    disk = y > 0.5
    tp = float((p & disk).sum())
    within = disk & (x[:, FEATURES.index("open_share")] < WITHIN_OTHERS)
    return {"circles": int(len(y)), "disks": int(disk.sum()),
            "precision": round(float(tp / max(p.sum(), 1)), 4),
            "recall": round(float(tp / max(disk.sum(), 1)), 4),
            "within_others": int(within.sum()), "within_others_taken": int((p & within).sum())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="vision/models/verdict.json")
    p.add_argument("--frames", type=int, default=588, help="frames rendered (spread over families and seeds)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=8, help="the verdict's hidden units")
    p.add_argument("--l2", type=float, default=2.5e-3, help="weight decay on the mean log loss")
    p.add_argument("--model", default=None, help="the face network whose maps are judged (default: the shipped one)")
    p.add_argument("--network-px-per-mm", type=float, default=None,
                   help="the scale the network reads the tables at (default: DetectorConfig.network_px_per_mm)")
    p.add_argument("--min-face", type=float, default=None,
                   help="the face a circle's inside must show to be judged (default: DetectorConfig.min_face)")
    p.add_argument("--map-views", type=int, default=1, choices=[1, 2, 4],
                   help="the frame's mirror images the network reads, maps averaged (DetectorConfig.map_views)")
    p.add_argument("--face-fade", type=float, default=FACE_FADE,
                   help="each circle learned again with its face evidence scaled by up to this much less "
                        "(default 0: not)")
    from vision.facemap_training import add_tier_shares

    add_tier_shares(p)
    args = p.parse_args(argv)
    if args.hidden < 1 or args.l2 < 0:
        print("verdict_training: --hidden must be >= 1 and --l2 >= 0", file=sys.stderr)
        return 2
    if not 0.0 <= args.face_fade <= 1.0:
        print("verdict_training: --face-fade must be within 0..1", file=sys.stderr)
        return 2
    if args.network_px_per_mm is not None and not 0.5 <= args.network_px_per_mm <= 2.0:
        print("verdict_training: --network-px-per-mm must be within 0.5..2", file=sys.stderr)
        return 2
    if args.min_face is not None and not 0.0 <= args.min_face <= 1.0:
        print("verdict_training: --min-face must be within 0..1", file=sys.stderr)
        return 2
    if args.model is not None and not Path(args.model).is_file():
        print(f"verdict_training: --model {args.model}: no such file", file=sys.stderr)
        return 2
    from vision.synth.seeds import WORLD_VERDICT_SEEDS
    from vision.synth.world import TRAINING_FAMILIES

    families = list(TRAINING_FAMILIES) + ["classic"]
    from vision.facemap_training import tier_of

    share = args.piled_share   # spread evenly, as the face network's training frames
    jobs = [(families[k % len(families)], WORLD_VERDICT_SEEDS[k % len(WORLD_VERDICT_SEEDS)], args.model,
             tier_of(k, share, args.alike_share), args.network_px_per_mm, args.min_face, args.map_views)
            for k in range(args.frames)]
    t0 = time.time()
    with mp.get_context("fork").Pool(args.workers) as pool:
        got = pool.map(frame_judgements, jobs, chunksize=2)
    print(f"judged {sum(len(y) for _, y in got)} circles of {len(jobs)} frames ({time.time() - t0:.0f} s)")
    # three quarters of the seeds to fit, the rest to score
    fit_idx = [k for k, job in enumerate(jobs) if job[1] % 4 != 3]
    val_idx = [k for k, job in enumerate(jobs) if job[1] % 4 == 3]
    stack = lambda idx: (np.vstack([got[k][0] for k in idx]), np.concatenate([got[k][1] for k in idx]))  # noqa
    (xf, yf), (xv, yv) = stack(fit_idx), stack(val_idx)
    if args.face_fade > 0:
        xf, yf = np.vstack([xf, faded(xf, args.face_fade)]), np.concatenate([yf, yf])
    v = fit_verdict(xf, yf, args.hidden, args.l2)
    fit_s, val_s = scores(v, xf, yf), scores(v, xv, yv)
    network = "the shipped face network" if args.model is None else f"the face network {Path(args.model).name}"
    if args.network_px_per_mm is not None:
        network += f" at {args.network_px_per_mm:g} px/mm"
    if args.map_views > 1:
        network += f", maps averaged over {args.map_views} mirror images"
    if args.min_face is not None:
        network += f", circles judged from a face inside of {args.min_face:g}"
    fade = f"each circle learned again with its face evidence faded by up to {args.face_fade:g}; " \
        if args.face_fade else ""
    about = (f"trained by 'python -m vision.verdict_training' on {len(jobs)} frames of the training families and "
             f"the classic look (WORLD_VERDICT_SEEDS{f', {share:g} of them with melee piles' if share else ''}"
             f"{f', {args.alike_share:g} with disks printed alike' if args.alike_share else ''}), "
             f"read by {network}; {fade}fit on {fit_s}, "
             f"scored on the other seeds: {val_s}")
    v = dataclasses.replace(v, about=about)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(v.to_json(), indent=1) + "\n", encoding="utf-8")
    print(about)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
