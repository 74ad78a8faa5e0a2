"""Train the face/rim network of `vision.facemap` from scratch on the randomized synthetic world.

    .venv/bin/python -m vision.facemap_training --out vision/models/facemap.onnx

Frames come from the training families of `vision.synth.world` (and the classic renderer), seeds from
`WORLD_TRAINING_SEEDS` only: held-out families and gate seeds are never rendered here. Each frame is rectified with
the exact calibration of its camera truth and labelled by `vision.synth.facemaps` (which disk face each pixel
shows, and where a disk's own outline runs). The network sees random crops under strong photometric augmentation
(channel gains and permutations, brightness, gamma, blur, noise): the look of a table must not matter, the
geometry of faces and outlines must. Needs the `train` extra (torch, onnx); CPU is enough (a lent GPU is used
when torch sees one). The result is one small ONNX file run by ONNX Runtime at run time.

The default recipe (900 frames, 6000 steps of 12 crops) fits half an hour on two CPU cores. The shipped network
had two lent GPUs with 16 cores: frames rendered on 14 of them while it trained on the frames in so far, its crops
cut on the GPU, first from scratch, then on from that network with tables printed alike, melee piles and crops on
disks lying wholly on others:

    python -m vision.facemap_training --stream --frames 2385 --steps 6413 --batch 64 --crops-on-device --workers 14 \
        --out first.onnx
    python -m vision.facemap_training --stream --frames 8000 --steps 100000 --batch 64 --crops-on-device --workers 14 \
        --init first.onnx --max-lr 1e-3 --nested-share 0.15 --piled-share 0.1 --alike-share 0.2 --seed 3 --budget-s 420

(a streamed run trains on the frames there at each step, so it is not repeatable frame for frame). On a lease whose
pace is unknown, `--budget-s SECONDS` (with `--steps` as a cap) ends the run on time, the schedule following the
clock. On the CPU that recipe takes some three hours on two cores: `--checkpoint FILE` trains it in parts, each
start going on from the step the last one saved.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vision.facemap_host_crops import CROP, host_batch, host_batches_on
from vision.synth.facemaps import FaceTruth


# ---------------------------------------------------------------------------------------------------------------
# Data

TRAINING_TIERS = ("standard", "piled", "alike", "heaped")   # a job's tables: the standard ones (the classic look's
                                                  # every fourth hard), those with melee piles, or those whose disks
                                                  # are printed alike in lines and heaps, or poured out in heaps (the
                                                  # world's families only)


def _classic(seed: int, frame: int, tier: str):
    from vision.synth.camera import table_camera
    from vision.synth.scenes import random_table
    from vision.synth.tiers import tier_settings

    if tier == "standard":
        tier = "hard" if frame % 4 == 3 else "standard"
    return random_table(seed, tier, frame=frame), table_camera(seed, tier_settings(tier).camera)


def table_for(family: str, seed: int, frame: int, tier: str = "standard"):
    """(TableSetup, SynthCamera) of one training frame of `family`; `tier` "piled": a table with melee piles
    (`vision.synth.tiers`)."""
    if tier not in TRAINING_TIERS:
        raise ValueError(f"unknown training tier {tier!r} (known: {', '.join(TRAINING_TIERS)})")
    if family == "classic":   # the classic look prints every disk its own way: its "alike" tables are standard
        return _classic(seed, frame, "standard" if tier in ("alike", "heaped") else tier)
    from vision.synth.world import world_table

    return world_table(seed, family, frame=frame, tier=tier)


def families_to_train(spec: str | None) -> list[str]:
    """The families named in `spec` (comma-separated; None: every training family and the classic look, which is
    one more family of the space: its gate seeds are never rendered for training). ValueError for a held-out or
    unknown family."""
    from vision.synth.world import FAMILIES, TRAINING_FAMILIES

    families = spec.split(",") if spec else list(TRAINING_FAMILIES) + ["classic"]
    bad = [f for f in families if f in FAMILIES and FAMILIES[f].held_out]
    unknown = [f for f in families if f != "classic" and f not in FAMILIES]
    if bad:
        raise ValueError(f"{', '.join(bad)} held out: never trained on")
    if unknown:
        raise ValueError(f"unknown family {unknown[0]!r}")
    return families


_CACHE: Path | None = None  # where rendered samples are kept between runs (set by --cache; None: not kept)


def _use_cache(cache: Path | None) -> None:
    """Keep rendered frames in `cache` (a folder, made if need be) for the worker processes forked next."""
    global _CACHE
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    _CACHE = cache


def _sample(job: tuple) -> FaceTruth:
    """One frame's rectified image and targets: job (family, seed, frame[, tier]), read from the cache when there."""
    from vision.synth.facemaps import face_truth, nested_centres
    from vision.synth.render import render_frame

    family, seed, frame, *rest = job
    tier = rest[0] if rest else "standard"
    name = f"{family}-{seed}-{frame}" + ("" if tier == "standard" else f"-{tier}")
    path = None if _CACHE is None else _CACHE / f"{name}.npz"
    if path is not None and path.exists():
        with np.load(path) as z:
            maps = {k: z[k] for k in ("rect", "face", "rim", "height")}
            # a frame cached before the samples named their disks lying on others: those come from the table
            # itself, which costs nothing to set up again (no rendering)
            nested = z["nested"] if "nested" in z else nested_centres(*table_for(family, seed, frame, tier))
        return FaceTruth(**maps, nested=nested)
    setup, camera = table_for(family, seed, frame, tier)
    truth = face_truth(render_frame(setup, camera), setup, camera)
    if path is not None:   # written whole, then renamed: a reader (or a run stopped midway) never sees half a file
        part = path.with_name(path.name + ".part")
        with open(part, "wb") as f:
            np.savez(f, rect=truth.rect, face=truth.face, rim=truth.rim, height=truth.height, nested=truth.nested)
        os.replace(part, path)
    return truth


def tier_of(k: int, piled_share: float, alike_share: float = 0.0) -> str:
    """The tables of a run's `k`-th frame: "piled" for `piled_share` of the frames, "alike" for `alike_share`, each
    spread evenly (half a step apart, so that the two seldom fall on one frame; there piles win), else "standard"."""
    if math.floor((k + 1) * piled_share) > math.floor(k * piled_share):
        return "piled"
    if math.floor((k + 1) * alike_share + 0.5) > math.floor(k * alike_share + 0.5):
        return "alike"
    return "standard"


def add_tier_shares(parser: argparse.ArgumentParser) -> None:
    """The trainers' `--piled-share` and `--alike-share` (the shares of their frames drawn with melee piles, and
    with disks printed alike in lines and heaps), a value outside 0..1 one clear line of the parser's."""
    def share(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = float("nan")
        if not 0.0 <= v <= 1.0:
            raise argparse.ArgumentTypeError(f"must be within 0..1, got {text!r}")
        return v

    parser.add_argument("--piled-share", type=share, default=0.0,
                        help="share of the training frames drawn with melee piles (`vision.synth.tiers`; default 0)")
    parser.add_argument("--alike-share", type=share, default=0.0,
                        help="share of the training frames whose disks of one army and size are printed alike, in "
                             "lines and heaps (`vision.synth.world`; default 0)")


def training_jobs(families: list[str], count: int, seeds: tuple[int, ...], piled_share: float = 0.0,
                  alike_share: float = 0.0) -> list[tuple[str, int, int, str]]:
    """`count` frames spread over the families and seeds (a seed is a camera and a room; frames vary the table):
    (family, seed, frame, tier), `piled_share` of them spread evenly among the others with melee piles,
    `alike_share` with disks printed alike (`tier_of`)."""
    for name, share in (("piled_share", piled_share), ("alike_share", alike_share)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"{name} must be within 0..1, got {share}")
    jobs = []
    for k in range(count):
        fam = families[k % len(families)]
        seed = seeds[(k // len(families)) % len(seeds)]
        frame = k // (len(families) * len(seeds))
        jobs.append((fam, seed, frame, tier_of(k, piled_share, alike_share)))
    return jobs


def render_samples(jobs: list[tuple], workers: int, cache: Path | None = None) -> list[FaceTruth]:
    """The rectified frames and targets of `jobs`, rendered by `workers` processes; with `cache` (a folder), frames
    rendered before are read from it and new ones kept there."""
    _use_cache(cache)
    t0 = time.time()
    out: list[FaceTruth] = []
    ctx = mp.get_context("fork")
    with ctx.Pool(workers) as pool:
        for k, s in enumerate(pool.imap(_sample, jobs, chunksize=2)):
            out.append(s)
            if (k + 1) % 50 == 0:
                print(f"  rendered {k + 1}/{len(jobs)} frames ({time.time() - t0:.0f} s)", flush=True)
    return out


class StreamedFrames:
    """Training frames rendered by `workers` processes while the network trains on them: `samples` grows as frames
    come in (the device crops draw from every frame there so far), `stop()` ends the rendering. On a lent machine
    with many cores and a GPU the two overlap instead of one waiting for the other; on two CPU cores rendering
    first is as fast. The processes are forked before torch starts (CUDA does not survive a fork)."""

    def __init__(self, jobs: list[tuple], workers: int, cache: Path | None = None) -> None:
        import threading

        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        _use_cache(cache)
        self.samples: list[FaceTruth] = []
        self.total = len(jobs)
        self._stopping = threading.Event()
        self._pool = mp.get_context("fork").Pool(workers)
        self._thread = threading.Thread(target=self._render, args=(jobs,), daemon=True)
        self._t0 = time.time()
        self._thread.start()

    def _render(self, jobs: list[tuple]) -> None:
        frames = self._pool.imap(_sample, jobs, chunksize=1)
        try:
            while not self._stopping.is_set():
                try:
                    s = frames.next(timeout=0.2)   # a stop is seen while a frame is still rendering
                except mp.TimeoutError:
                    continue
                except StopIteration:
                    break
                self.samples.append(s)
                if len(self.samples) % 100 == 0:
                    print(f"  rendered {len(self.samples)}/{self.total} frames ({time.time() - self._t0:.0f} s)",
                          flush=True)
        finally:
            self._pool.terminate()

    def wait_for(self, count: int) -> int:
        """Block until `count` frames are in (or rendering has ended); the number there."""
        while len(self.samples) < count and self._thread.is_alive():
            time.sleep(0.2)
        return len(self.samples)

    def stop(self) -> int:
        """End the rendering; the number of frames rendered."""
        self._stopping.set()
        self._thread.join()
        return len(self.samples)


# ---------------------------------------------------------------------------------------------------------------
# The network


def build_network():
    """A small encoder-decoder: 1/16 at the bottom (a large disk and what lies around it in view), output at 1/2.
    Past the first layers every 3x3 convolution is depthwise-separable: the whole frame must cost a few tens of
    milliseconds on one core."""
    import torch
    from torch import nn

    def conv(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    def sep(cin: int, cout: int, dilation: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cin, 3, 1, padding=dilation, dilation=dilation, groups=cin, bias=False),
                             nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                             nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def merge(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                             sep(cout, cout))

    class FaceNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.e1 = conv(3, 12, 2)                                                  # 1/2
            self.e2 = nn.Sequential(conv(12, 24, 2), sep(24, 32))                     # 1/4
            self.e3 = nn.Sequential(conv(32, 48, 2), sep(48, 48, 2), sep(48, 48, 4))  # 1/8
            self.e4 = nn.Sequential(conv(48, 64, 2), sep(64, 64, 2), sep(64, 64, 4))  # 1/16
            self.d3 = merge(64 + 48, 48)
            self.d2 = merge(48 + 32, 24)
            self.d1 = merge(24 + 12, 12)
            self.head = nn.Conv2d(12, 3, 1)  # face, rim, height
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)

        def forward(self, x):
            x1 = self.e1(x)
            x2 = self.e2(x1)
            x3 = self.e3(x2)
            x4 = self.e4(x3)
            y = self.d3(torch.cat([self.up(x4), x3], 1))
            y = self.d2(torch.cat([self.up(y), x2], 1))
            y = self.d1(torch.cat([self.up(y), x1], 1))
            return self.head(y)

    return FaceNet()


class _Exported:
    """What goes into the ONNX file: uint8-range BGR in, sigmoid probabilities (face, rim, height) out."""

    @staticmethod
    def wrap(net):
        import torch
        from torch import nn

        class Wrapped(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return torch.sigmoid(self.inner(x * (1.0 / 255.0) - 0.5))

        return Wrapped(net)


# ---------------------------------------------------------------------------------------------------------------
# Training


VALIDATION_CROPS = 128
VALIDATION_SEED = 20261127


def validation_crops(valid: list[FaceTruth]):
    """The validation crops of `valid` (x, face, rim, height, as `host_batch` gives them): the same for every run,
    whatever its training seed, so that two runs' validation figures compare. (They were once drawn from the
    training seed, 32 of them: two networks within a few per cent of each other on common crops read 0.0114 and
    0.0091 of face error on their own.)"""
    return host_batch(valid, np.random.default_rng(VALIDATION_SEED), VALIDATION_CROPS)


@dataclass(frozen=True)
class ValidationScores:
    """How a network's maps (n, 3, h, w: face, rim, height) read the validation crops' targets."""

    face_mae: float
    rim_precision: float
    rim_recall: float
    height_right: float         # face pixels whose level in the pile (0, 1, 2 or more disks under) is read right
    raised_height_right: float  # the same over faces lying on other disks: what tells a disk on a disk

    def __str__(self) -> str:
        return (f"face MAE {self.face_mae:.4f}  rim precision {self.rim_precision:.3f} recall {self.rim_recall:.3f}"
                f"  height level right {self.height_right:.3f} (raised faces {self.raised_height_right:.3f})")


def validation_scores(maps: np.ndarray, face: np.ndarray, rim: np.ndarray, height: np.ndarray) -> ValidationScores:
    """Score predicted maps against the targets (all 0-1). A level is read right within a quarter: the target is
    the level over `vision.synth.facemaps.HEIGHT_LEVELS`: 0, 0.5 or 1."""
    if maps.ndim != 4 or maps.shape[1] != 3 or maps[:, 0].shape != face.shape == rim.shape == height.shape:
        raise ValueError(f"maps (n, 3, h, w) and targets (n, h, w) must match, got {maps.shape} and {face.shape}")
    rim_pred, rim_true = maps[:, 1] > 0.5, rim > 0.5
    tp = float((rim_pred & rim_true).sum())
    faces = face > 0.9
    raised = faces & (height > 0.25)
    right = np.abs(maps[:, 2] - height) < 0.25

    def share(mask: np.ndarray) -> float:
        return float(right[mask].mean()) if mask.any() else float("nan")

    return ValidationScores(face_mae=float(np.mean(np.abs(maps[:, 0] - face))),
                            rim_precision=tp / max(float(rim_pred.sum()), 1.0),
                            rim_recall=tp / max(float(rim_true.sum()), 1.0),
                            height_right=share(faces), raised_height_right=share(raised))


def train(samples: list[FaceTruth], valid: list[FaceTruth], steps: int, batch: int, seed: int, log_every: int = 100,
          stacked_share: float = 0.0, loader_workers: int = 0, crops_on_device: bool = False,
          init: Path | None = None, max_lr: float = 3e-3, budget_s: float | None = None, nested_share: float = 0.0,
          checkpoint: Path | None = None, checkpoint_every_s: float = 300.0):
    """The trained network (on the CPU, in eval mode). With `crops_on_device` the crops are cut and augmented by
    torch on the training device (`vision.facemap_crops`; `samples` may then grow while training runs), else by
    NumPy/OpenCV on the CPU (`loader_workers` processes). With `init` (an exported network) training goes on from
    it instead of from scratch (`load_exported`). With `budget_s` training ends after that many seconds (or
    `steps`, if sooner) and the schedule follows the clock: a lent machine's pace is not known beforehand, and a
    pace measured in its first seconds (frames still loading, kernels still being tuned) sized a run wrongly.
    `nested_share` of the disk-centred crops are centred on a disk lying on others' faces (device crops only).
    With `checkpoint` (a file) the run saves its weights, optimizer and step there every `checkpoint_every_s`
    seconds and at its end, and a run started again with the same settings goes on from the step saved
    (`TrainingCheckpoint`): the full recipe outlasts a two-core machine's working day, so it is trained in parts."""
    import torch
    import torch.nn.functional as F

    if nested_share and not crops_on_device:
        raise ValueError("nested_share needs crops_on_device (the crops centred on disks lying on others)")
    if checkpoint is not None and budget_s is not None:
        raise ValueError("a checkpointed run follows its steps, not the clock: no budget_s with checkpoint")
    torch.manual_seed(seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    net = build_network()
    if init is not None:
        load_exported(net, init)
    net = net.to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=max_lr, weight_decay=1e-4)
    saved = None
    if checkpoint is not None:
        saved = TrainingCheckpoint(checkpoint, dict(steps=steps, batch=batch, seed=seed, max_lr=max_lr,
                                                    stacked_share=stacked_share, nested_share=nested_share,
                                                    init=str(init) if init is not None else None,
                                                    samples=len(samples), crops_on_device=crops_on_device))
    first = saved.restore(net, opt) if saved is not None else 0
    if first:
        print(f"  going on from step {first} saved in {checkpoint}", flush=True)
        # a resumed run draws crops of its own: the same seed again would repeat the first part's crops
        seed += first
        torch.manual_seed(seed)
    pos_w = torch.tensor(4.0, device=dev)
    vx, vf, vr, vh = validation_crops(valid)
    vx_t = torch.from_numpy(vx).permute(0, 3, 1, 2).to(dev) / 255.0 - 0.5
    t0 = time.time()
    if crops_on_device:
        from vision.facemap_crops import DeviceCrops

        crops = DeviceCrops(samples, dev, seed, batch, CROP, stacked_share, nested_share)
    else:
        crops = host_batches_on(samples, seed, batch, stacked_share, loader_workers, dev)

    def report(done: int, loss: float) -> None:
        net.eval()
        with torch.no_grad():
            vo = np.concatenate([torch.sigmoid(net(vx_t[k:k + 32])).cpu().numpy() for k in range(0, len(vx_t), 32)])
        print(f"  step {done}/{steps}  loss {loss:.4f}  valid: {validation_scores(vo, vf, vr, vh)}  "
              f"({time.time() - t0:.0f} s)", flush=True)

    done, loss = first, None
    last_save = time.time()
    for step in range(first, steps):
        if budget_s is None:
            position = float(step)
        else:
            spent = time.time() - t0
            if spent >= budget_s:
                break
            position = spent / budget_s * (steps - 1)
        lr, beta1 = one_cycle(position, steps, max_lr)
        for group in opt.param_groups:
            group["lr"], group["betas"] = lr, (beta1, group["betas"][1])
        net.train()
        if init is not None:
            _freeze_norms(net)
        x, ft, rt, ht = next(crops)
        out = net(x / 255.0 - 0.5)
        # height is taught on faces only: elsewhere it means nothing
        on_face = (ft > 0.5).float()
        loss = F.binary_cross_entropy_with_logits(out[:, 0], ft) + \
            F.binary_cross_entropy_with_logits(out[:, 1], rt, pos_weight=pos_w) + \
            (F.binary_cross_entropy_with_logits(out[:, 2], ht, reduction="none") * on_face).sum() / \
            on_face.sum().clamp(min=1.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        done = step + 1
        if done % log_every == 0 and done < steps:
            report(done, loss.item())
        if saved is not None and time.time() - last_save >= checkpoint_every_s:
            saved.save(net, opt, done)
            last_save = time.time()
    if saved is not None:
        saved.save(net, opt, done)
    if loss is not None:
        report(done, loss.item())
    return net.cpu().eval()


class TrainingCheckpoint:
    """A training run's state in one file: the weights, the optimizer's moments and the steps done, with the
    settings the run was started with. Restoring refuses a file of a run with other settings (ValueError): going
    on from it would train a mix of two recipes. Saved by writing a new file and renaming it over the old, so a run
    killed while saving leaves the last whole checkpoint."""

    def __init__(self, path: Path, settings: dict) -> None:
        self.path = Path(path)
        self.settings = dict(settings)

    def restore(self, net, opt) -> int:
        """The steps done by the run saved here, its state loaded into `net` and `opt`; 0 with no file."""
        import torch

        if not self.path.is_file():
            return 0
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
            settings, done = state["settings"], int(state["done"])
        except Exception as exc:   # torch raises many kinds for a file that is not a checkpoint
            raise ValueError(f"{self.path}: not a training checkpoint ({exc})") from exc
        if settings != self.settings:
            changed = sorted(k for k in set(settings) | set(self.settings) if settings.get(k) != self.settings.get(k))
            raise ValueError(f"{self.path}: saved by a run with other settings ({', '.join(changed)}); "
                             "remove it to start afresh")
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        return done

    def save(self, net, opt, done: int) -> None:
        import torch

        self.path.parent.mkdir(parents=True, exist_ok=True)
        part = self.path.with_name(self.path.name + ".part")
        torch.save({"settings": self.settings, "done": done, "net": net.state_dict(), "opt": opt.state_dict()}, part)
        os.replace(part, self.path)


def one_cycle(position: float, total_steps: int, max_lr: float, pct_start: float = 0.1) -> tuple[float, float]:
    """The learning rate and Adam's first beta at `position` (a step number, 0 .. total_steps - 1, fractional
    allowed) of torch's one-cycle schedule with its defaults (cosine, a start 25 times below `max_lr`, an end
    10^4 below the start, beta 0.95 -> 0.85 -> 0.95): the same curve whether steps or the clock move along it."""
    start, low = max_lr / 25.0, max_lr / 25.0 / 1e4
    peak = pct_start * total_steps - 1.0

    def cos(a: float, b: float, pct: float) -> float:
        return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1.0)

    if peak > 0 and position <= peak:   # (a run of under 1 / pct_start steps has no rise)
        pct = position / peak
        return cos(start, max_lr, pct), cos(0.95, 0.85, pct)
    pct = (position - peak) / (total_steps - 1.0 - peak)
    return cos(max_lr, low, pct), cos(0.85, 0.95, pct)


def load_exported(net, path: Path) -> None:
    """Set `net` (from `build_network`) to the network exported in `path`. The export folded each batch norm into
    the convolution before it, so every batch norm becomes the identity (unit scale, zero mean, unit variance)
    carrying that convolution's bias, and stays frozen while training goes on (`_freeze_norms`). ValueError when
    the file is not a network of this layout."""
    import onnx
    import torch
    from onnx import numpy_helper
    from torch import nn

    graph = onnx.load(str(path)).graph
    weights = {w.name: numpy_helper.to_array(w) for w in graph.initializer}
    convs = [n for n in graph.node if n.op_type == "Conv"]
    modules = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    if len(convs) != len(modules):
        raise ValueError(f"{path}: {len(convs)} convolutions, the network has {len(modules)}")
    norms = {id(seq[i]): seq[i + 1] for seq in net.modules() if isinstance(seq, nn.Sequential)
             for i in range(len(seq) - 1) if isinstance(seq[i + 1], nn.BatchNorm2d)}
    with torch.no_grad():
        for node, conv in zip(convs, modules):   # both in the order the forward pass runs them
            w = weights[node.input[1]]
            b = weights[node.input[2]] if len(node.input) > 2 else np.zeros(w.shape[0], np.float32)
            if tuple(w.shape) != tuple(conv.weight.shape):
                raise ValueError(f"{path}: a convolution of shape {w.shape} where the network has "
                                 f"{tuple(conv.weight.shape)}")
            conv.weight.copy_(torch.from_numpy(np.array(w)))
            norm = norms.get(id(conv))
            if norm is None:
                conv.bias.copy_(torch.from_numpy(np.array(b)))
            else:
                norm.weight.fill_(1.0)
                norm.bias.copy_(torch.from_numpy(np.array(b)))
                norm.running_mean.zero_()
                norm.running_var.fill_(1.0 - norm.eps)


def _freeze_norms(net) -> None:
    """Batch norms in eval mode: a network loaded by `load_exported` keeps its folded statistics."""
    from torch import nn

    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eval()


def export_onnx(net, path: Path) -> None:
    import torch

    model = _Exported.wrap(net).eval()
    dummy = torch.zeros(1, 3, 256, 256)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(model, dummy, str(path), input_names=["bgr"], output_names=["maps"], opset_version=13,
                      dynamic_axes={"bgr": {2: "h", 3: "w"}, "maps": {2: "h2", 3: "w2"}}, dynamo=False)


def training_arguments(doc: str, out: str, frames: int, steps: int, batch: int) -> argparse.ArgumentParser:
    """The command line every trainer of the eye shares (rendered training frames, steps, cache), with its own
    defaults."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--out", default=out)
    p.add_argument("--frames", type=int, default=frames, help="training frames rendered")
    p.add_argument("--valid-frames", type=int, default=24)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--workers", type=int, default=2, help="processes rendering frames")
    p.add_argument("--families", default=None, help="comma-separated training families (default: all of them)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, help="keep rendered frames here and reuse them (a folder)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = training_arguments(__doc__, "vision/models/facemap.onnx", 900, 6000, 12)
    p.add_argument("--stacked-share", type=float, default=0.0,
                   help="share of the disk-centred crops centred on a disk lying on another (default 0: any disk)")
    p.add_argument("--nested-share", type=float, default=0.0,
                   help="share of the disk-centred crops centred on a disk lying wholly (70 %% or more) on others "
                        "(needs --crops-on-device; with --stacked-share, at most 1 together)")
    p.add_argument("--loader-workers", type=int, default=0,
                   help="processes making augmented batches (0: the training process itself)")
    p.add_argument("--save-photos", type=Path, metavar="FILE",
                   help="write the photos the synthetic tables print into FILE (.npz) and stop: for --photos")
    p.add_argument("--photos", type=Path, metavar="FILE",
                   help="draw the printed photos from FILE (written by --save-photos) instead of scikit-image: "
                        "for a machine without it, such as a lent offline one")
    add_tier_shares(p)
    p.add_argument("--init", type=Path, help="go on training this exported network instead of starting afresh")
    p.add_argument("--max-lr", type=float, default=3e-3, help="the one-cycle schedule's peak learning rate")
    p.add_argument("--crops-on-device", action="store_true",
                   help="cut and augment the crops with torch on the training device (a GPU, when torch sees one)")
    p.add_argument("--stream", action="store_true",
                   help="train while the frames render (needs --crops-on-device): training starts once "
                        "--start-frames are in and draws from every frame rendered so far")
    p.add_argument("--start-frames", type=int, default=150, help="frames rendered before a streamed run trains")
    p.add_argument("--budget-s", type=float, default=None,
                   help="train this many seconds (at most --steps steps), the schedule following the clock: for a "
                        "lent machine whose pace is not known beforehand")
    p.add_argument("--checkpoint", type=Path, metavar="FILE",
                   help="save the run's state here every few minutes and go on from it when started again with the "
                        "same settings (for a recipe longer than the machine's day; not with --budget-s)")
    args = p.parse_args(argv)
    if args.checkpoint is not None and (args.budget_s is not None or args.stream):
        print("facemap_training: --checkpoint follows the steps: not with --budget-s or --stream "
              "(a streamed run's frames differ from one start to the next)", file=sys.stderr)
        return 2
    if args.stream and not args.crops_on_device:
        print("facemap_training: --stream needs --crops-on-device (the frames grow while the crops are cut)",
              file=sys.stderr)
        return 2
    if not 1 <= args.start_frames <= args.frames:
        print("facemap_training: --start-frames must be within 1..--frames", file=sys.stderr)
        return 2
    if args.loader_workers < 0:
        print("facemap_training: --loader-workers must be >= 0", file=sys.stderr)
        return 2
    if args.init is not None and not args.init.is_file():
        print(f"facemap_training: --init {args.init}: no such file", file=sys.stderr)
        return 2
    if not 0.0 < args.max_lr <= 0.1:
        print("facemap_training: --max-lr must be within 0..0.1", file=sys.stderr)
        return 2
    if args.budget_s is not None and not args.budget_s > 0:
        print("facemap_training: --budget-s must be > 0", file=sys.stderr)
        return 2
    if not 0.0 <= args.stacked_share <= 1.0:
        print("facemap_training: --stacked-share must be within 0..1", file=sys.stderr)
        return 2
    if not 0.0 <= args.nested_share <= 1.0 or args.stacked_share + args.nested_share > 1.0:
        print("facemap_training: --nested-share must be within 0..1, and with --stacked-share at most 1",
              file=sys.stderr)
        return 2
    if args.nested_share and not args.crops_on_device:
        print("facemap_training: --nested-share needs --crops-on-device", file=sys.stderr)
        return 2
    from vision.synth import art, seeds

    if args.save_photos is not None:
        art.save_photos(args.save_photos)
        print(f"wrote {args.save_photos} ({len(art.PHOTO_NAMES)} photos)")
        return 0
    if args.photos is not None:
        try:
            art.use_saved_photos(args.photos)
        except ValueError as exc:
            print(f"facemap_training: --photos {exc}", file=sys.stderr)
            return 2
    try:
        families = families_to_train(args.families)
    except ValueError as exc:
        print(f"facemap_training: {exc}", file=sys.stderr)
        return 2
    jobs = training_jobs(families, args.frames, seeds.WORLD_TRAINING_SEEDS, args.piled_share,
                         args.alike_share)
    valid = render_samples(training_jobs(families, args.valid_frames, seeds.WORLD_TUNING_SEEDS), args.workers,
                           args.cache)
    print(f"rendering {args.frames} training frames of {', '.join(families)}"
          f"{' while training' if args.stream else ''} ...", flush=True)
    stream = StreamedFrames(jobs, args.workers, args.cache) if args.stream else None
    if stream is not None:
        stream.wait_for(args.start_frames)
        samples = stream.samples
    else:
        samples = render_samples(jobs, args.workers, args.cache)
    print(f"training {args.steps} steps of {args.batch} crops of {CROP} px ...", flush=True)
    try:
        net = train(samples, valid, args.steps, args.batch, args.seed, stacked_share=args.stacked_share,
                    loader_workers=args.loader_workers, crops_on_device=args.crops_on_device, init=args.init,
                    max_lr=args.max_lr, budget_s=args.budget_s, nested_share=args.nested_share,
                    checkpoint=args.checkpoint)
    except ValueError as exc:
        print(f"facemap_training: {exc}", file=sys.stderr)
        return 2
    finally:
        if stream is not None:
            print(f"trained on the {stream.stop()} frames rendered by then", flush=True)
    export_onnx(net, Path(args.out))
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
