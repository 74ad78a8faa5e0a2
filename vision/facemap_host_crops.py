"""Training crops of the face/rim network cut and augmented on the CPU with NumPy and OpenCV.

The recipe (`vision.facemap_training`): crops mostly centred near a disk's outline, quarter turns and mirrors, one
colour transform on the faces and another on the rest, another cloth under the same disks, rings and discs printed
inside faces (never outlines), channel order, grey, gain, gamma, blur and noise. Made one crop at a time, here or
in worker processes; `vision.facemap_crops` makes the same batches with torch on the training device.
"""

from __future__ import annotations

import numpy as np

from vision.synth.facemaps import OUTPUT_STRIDE, FaceTruth

CROP = 256  # training crop, rectified px (a multiple of the network's total stride, 16)


def host_batch(samples: list[FaceTruth], rng: np.random.Generator, n: int, stacked_share: float = 0.0):
    """n random crops (with flips / quarter turns) as float arrays: x (n, C, C, 3), face, rim and height
    (n, C/2, C/2)."""
    c2 = CROP // OUTPUT_STRIDE
    xs = np.empty((n, CROP, CROP, 3), np.float32)
    fs = np.empty((n, c2, c2), np.float32)
    rs = np.empty((n, c2, c2), np.float32)
    hs = np.empty((n, c2, c2), np.float32)
    for k in range(n):
        s = samples[int(rng.integers(len(samples)))]
        h2, w2 = s.face.shape
        y2, x2 = int(rng.integers(0, h2 - c2 + 1)), int(rng.integers(0, w2 - c2 + 1))
        if rng.random() < 0.7:  # most crops centred near a disk: the felt alone teaches little
            # ... or, `stacked_share` of those, near a disk lying on another (where outlines are hardest to read)
            stacked = stacked_share > 0 and rng.random() < stacked_share
            fy, fx = np.nonzero((s.height[::4, ::4] > 64) & (s.face[::4, ::4] > 128) if stacked
                                else s.rim[::4, ::4] > 128)
            if stacked and not len(fx):
                fy, fx = np.nonzero(s.rim[::4, ::4] > 128)
            if len(fx):
                j = int(rng.integers(len(fx)))
                y2 = int(np.clip(fy[j] * 4 - c2 // 2 + rng.integers(-c2 // 4, c2 // 4 + 1), 0, h2 - c2))
                x2 = int(np.clip(fx[j] * 4 - c2 // 2 + rng.integers(-c2 // 4, c2 // 4 + 1), 0, w2 - c2))
        x = s.rect[y2 * 2: y2 * 2 + CROP, x2 * 2: x2 * 2 + CROP]
        f = s.face[y2: y2 + c2, x2: x2 + c2]
        r = s.rim[y2: y2 + c2, x2: x2 + c2]
        hh = s.height[y2: y2 + c2, x2: x2 + c2]
        t = int(rng.integers(4))
        x, f, r, hh = np.rot90(x, t), np.rot90(f, t), np.rot90(r, t), np.rot90(hh, t)
        if rng.random() < 0.5:
            x, f, r, hh = x[:, ::-1], f[:, ::-1], r[:, ::-1], hh[:, ::-1]
        xs[k], fs[k], rs[k], hs[k] = x, f, r, hh
    return xs, fs / 255.0, rs / 255.0, hs / 255.0


def _recolour(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random colour transform of a (C, C, 3) crop: channel order, gains, offset, sometimes inverted."""
    out = img[..., rng.permutation(3)] * rng.uniform(0.5, 1.5, 3)[None, None, :] + rng.uniform(-40, 40, 3)
    if rng.random() < 0.15:
        out = 255.0 - out
    return out


def _texture(rng: np.random.Generator, size: int) -> np.ndarray:
    """A random cloth or mat for the background of a crop: noise at a random grain, stripes (wood), checks or a
    hex-like grid, in random colours (float 0-255, size x size x 3)."""
    import cv2

    kind = int(rng.integers(4))
    if kind == 0:
        n = rng.standard_normal((size, size)).astype(np.float32)
        n = cv2.GaussianBlur(n, (0, 0), rng.uniform(0.6, 6.0))
    elif kind == 1:
        yy = np.arange(size, dtype=np.float32)[:, None] + 8 * rng.standard_normal((1, size)).astype(np.float32)
        n = np.sin(yy / rng.uniform(2, 12)) + 0.3 * rng.standard_normal((size, size)).astype(np.float32)
    elif kind == 2:
        p = rng.uniform(8, 40)
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
        n = ((np.floor(xx / p) + np.floor(yy / p)) % 2).astype(np.float32)
    else:
        p = rng.uniform(10, 40)
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
        n = np.abs(np.sin(xx / p) + np.sin((0.5 * xx + 0.87 * yy) / p) + np.sin((0.5 * xx - 0.87 * yy) / p))
    n = (n - n.mean()) / (n.std() + 1e-6)
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(-60, 60, 3)
    return np.clip(c0[None, None, :] + n[..., None] * c1[None, None, :] * rng.uniform(0.2, 1.0), 0, 255)


def _printed_circles(img: np.ndarray, face: np.ndarray, rng: np.random.Generator) -> None:
    """Rings and discs printed inside the disks' faces (round shields, cups, inner borders): never outlines."""
    import cv2

    m = (cv2.resize(face.astype(np.float32), (img.shape[1], img.shape[0])) > 0.5).astype(np.uint8)
    dist = cv2.distanceTransform(m, cv2.DIST_L2, 3)
    for _ in range(int(rng.integers(1, 5))):
        ys, xs = np.nonzero(dist > 8)
        if len(xs) == 0:
            return
        k = int(rng.integers(len(xs)))
        room = float(dist[ys[k], xs[k]]) - 2.0
        r = rng.uniform(3.0, room)
        col = tuple(float(v) for v in rng.uniform(0, 255, 3))
        thick = -1 if rng.random() < 0.3 else int(rng.integers(1, 4))
        cv2.circle(img, (int(xs[k]), int(ys[k])), int(r), col, thick, cv2.LINE_AA)


def host_augment(x: np.ndarray, face: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Photometric augmentation of (n, C, C, 3) float 0-255 crops: the look of a table must not matter. Half of
    the crops get one colour transform on the disks' faces and another on everything else (`face`: the half-size
    face targets), so no colour of cloth or print, and no contrast between them, means anything."""
    import cv2

    n = x.shape[0]
    for k in range(n):
        img = x[k]
        m = cv2.resize(face[k].astype(np.float32), (img.shape[1], img.shape[0]), interpolation=cv2.INTER_LINEAR)
        m = cv2.GaussianBlur(m, (0, 0), 0.7)[..., None]
        if rng.random() < 0.5:
            img = _recolour(img, rng) * m + _recolour(img, rng) * (1.0 - m)
        if rng.random() < 0.25:   # another cloth under the same disks
            img = img * m + _texture(rng, img.shape[0]) * (1.0 - m)
        if rng.random() < 0.3:
            img = np.ascontiguousarray(img)
            _printed_circles(img, face[k], rng)
        if rng.random() < 0.5:
            img = img[..., rng.permutation(3)]
        if rng.random() < 0.1:
            g = img.mean(-1, keepdims=True)
            img = np.repeat(g, 3, -1)
        img = img * rng.uniform(0.75, 1.25, 3)[None, None, :] * rng.uniform(0.45, 1.4)
        img = 255.0 * np.clip(img / 255.0, 0.0, 1.0) ** rng.uniform(0.65, 1.5)
        if rng.random() < 0.25:
            img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.5, 1.4))
        if rng.random() < 0.5:
            img = img + rng.normal(0.0, rng.uniform(1.0, 7.0), img.shape).astype(np.float32)
        x[k] = np.clip(img, 0, 255)
    return x


def host_batches(samples: list[FaceTruth], seed: int, batch: int, stacked_share: float, workers: int):
    """Augmented training batches, endlessly: made here, or by `workers` processes at once (a GPU trains faster
    than one core crops and augments). Each maker draws from its own generator, seeded by `seed` and its number."""
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class Crops(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            rng = np.random.default_rng([seed, 0 if info is None else info.id])
            while True:
                x, f, r, h = host_batch(samples, rng, batch, stacked_share)
                yield host_augment(x, f, rng), f, r, h

    if workers == 0:
        yield from iter(Crops())
        return
    import cv2

    cv2.setNumThreads(1)  # a process forked while OpenCV's thread pool runs would wait on threads it has not got

    def one_thread(_: int) -> None:   # each maker on its own core
        import cv2

        torch.set_num_threads(1)
        cv2.setNumThreads(1)

    loader = DataLoader(Crops(), batch_size=None, num_workers=workers, prefetch_factor=4, worker_init_fn=one_thread)
    for x, f, r, h in loader:
        yield x.numpy(), f.numpy(), r.numpy(), h.numpy()


def host_batches_on(samples: list[FaceTruth], seed: int, batch: int, stacked_share: float, workers: int, dev: str):
    """`host_batches` as tensors on `dev`: x (n, 3, C, C) float 0-255 and the targets (n, C/2, C/2)."""
    import torch

    for x, f, r, h in host_batches(samples, seed, batch, stacked_share, workers):
        yield (torch.from_numpy(x).permute(0, 3, 1, 2).to(dev), torch.from_numpy(f).to(dev),
               torch.from_numpy(r).to(dev), torch.from_numpy(h).to(dev))
