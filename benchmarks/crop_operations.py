"""What one training batch of device crops asks of the device: torch operations and waits of the host on it.

    .venv/bin/python benchmarks/crop_operations.py [--frames 8] [--batch 64]

On a GPU each operation is a kernel launch and each wait (`nonzero`, `item`) stalls the host until the device
catches up, so these counts, not the CPU time, say how well `vision.facemap_crops` keeps a GPU busy. Counted with
torch's profiler on the CPU (views, which launch nothing, are not counted), on frames of the training families
rendered here. Needs the `train` extra (torch).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# operations that only describe memory: no kernel on a device
VIEWS = {"aten::as_strided", "aten::select", "aten::slice", "aten::view", "aten::reshape", "aten::unsqueeze",
         "aten::expand", "aten::t", "aten::alias", "aten::empty", "aten::empty_strided", "aten::squeeze",
         "aten::flatten", "aten::_reshape_alias", "aten::detach", "aten::lift_fresh", "aten::empty_like",
         "aten::resolve_conj", "aten::resolve_neg", "aten::to", "aten::_unsafe_view", "aten::result_type",
         "aten::permute", "aten::contiguous", "aten::is_nonzero"}
WAITS = {"aten::nonzero", "aten::item", "aten::_local_scalar_dense"}


def count(fn) -> tuple[int, int]:
    """(operations, host waits) of one call of `fn`."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = prof.key_averages()
    ops = sum(e.count for e in events if e.key.startswith("aten::") and e.key not in VIEWS)
    waits = sum(e.count for e in events if e.key in WAITS)
    return ops, waits


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=8, help="training frames rendered to cut from")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3, help="batches counted (the median is reported)")
    args = p.parse_args(argv)
    if args.frames < 1 or args.batch < 1 or args.repeats < 1:
        print("crop_operations: --frames, --batch and --repeats must be >= 1", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("crop_operations: needs torch (pip install -e '.[train]')", file=sys.stderr)
        return 2
    import numpy as np

    from vision import facemap_training as ft
    from vision.facemap_crops import DeviceCrops, augment
    from vision.synth import seeds

    torch.set_num_threads(1)
    jobs = ft.training_jobs(ft.families_to_train(None), args.frames, seeds.WORLD_TRAINING_SEEDS)
    samples = ft.render_samples(jobs, workers=2)
    maker = DeviceCrops(samples, "cpu", seed=0, batch=args.batch, size=ft.CROP)
    next(maker)   # every frame's first copy and the turn indices are made once, not per batch
    cuts, augments = [], []
    for _ in range(args.repeats):
        cuts.append(count(maker.cut))
        x, maps = maker.cut()
        augments.append(count(lambda: augment(x, maps[:, 0], maker.rng, maker.gen)))
    cut_ops, cut_waits = np.median(cuts, axis=0)
    aug_ops, aug_waits = np.median(augments, axis=0)
    print(f"one batch of {args.batch} crops from {len(samples)} frames (median of {args.repeats}):")
    print(f"  cut:          {cut_ops:.0f} operations, {cut_waits:.0f} host waits")
    print(f"  augmentation: {aug_ops:.0f} operations, {aug_waits:.0f} host waits")
    print(f"  together:     {cut_ops + aug_ops:.0f} operations, {cut_waits + aug_waits:.0f} host waits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
