"""Training crops of the face/rim network cut and augmented by torch on the training device.

`vision.facemap_host_crops` makes the crops with NumPy and OpenCV, one crop at a time on a CPU core. That is the
pace of training on a CPU, but a GPU would wait on it (about 7 ms a crop a core). Here the rendered frames live on the
device and a whole batch is cut, turned and augmented there with the same recipe: crops mostly centred near a
disk's outline, quarter turns and mirrors, one colour transform on the faces and another on the rest, another cloth
under the same disks, rings and discs printed inside faces (never outlines), channel order, grey, gain, gamma, blur
and noise. Only the trainer imports this module (torch is the `train` extra).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from vision.synth.facemaps import OUTPUT_STRIDE, FaceTruth

NETWORK_STRIDE = 16  # the face network's total stride: a crop's side is a multiple of it


class DeviceCrops:
    """Endless augmented batches of `batch` crops of `size` rectified px from `samples`, made on `device`.

    `samples` may grow while batches are drawn (frames still being rendered): each batch draws from the frames
    there are. A frame is copied to the device the first time a crop is cut from it. `stacked_share` of the
    disk-centred crops are centred on a disk lying on another. Batches are (x, face, rim, height): x is
    (n, 3, size, size) float 0-255 BGR, the targets (n, size/2, size/2) float 0-1.
    """

    def __init__(self, samples: list[FaceTruth], device: str | torch.device, seed: int, batch: int, size: int = 256,
                 stacked_share: float = 0.0) -> None:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if size % NETWORK_STRIDE or size < 2 * NETWORK_STRIDE:
            raise ValueError(f"crop size must be a multiple of {NETWORK_STRIDE} and >= {2 * NETWORK_STRIDE}, "
                             f"got {size}")
        if not 0.0 <= stacked_share <= 1.0:
            raise ValueError(f"stacked_share must be within 0..1, got {stacked_share}")
        if not samples:
            raise ValueError("no training frames")
        self.samples, self.device, self.batch, self.size = samples, torch.device(device), batch, size
        self.stacked_share = stacked_share
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        self._frames: dict[int, tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]] = {}

    def __iter__(self) -> DeviceCrops:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        x, maps = self.cut()
        return augment(x, maps[:, 0], self.rng, self.gen), maps[:, 0], maps[:, 1], maps[:, 2]

    def _frame(self, i: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
        if i not in self._frames:
            s = self.samples[i]
            rect = torch.from_numpy(np.ascontiguousarray(s.rect.transpose(2, 0, 1))).to(self.device)
            maps = torch.from_numpy(np.stack([s.face, s.rim, s.height])).to(self.device)
            # where crops are centred (every 4th output px): near any outline, near a disk lying on another
            near_rim = np.argwhere(s.rim[::4, ::4] > 128) * 4
            near_stacked = np.argwhere((s.height[::4, ::4] > 64) & (s.face[::4, ::4] > 128)) * 4
            self._frames[i] = (rect, maps, near_rim, near_stacked)
        return self._frames[i]

    def cut(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch of crops before any photometric change, turned and mirrored: x (n, 3, C, C) float 0-255 and
        the maps (n, 3, C/2, C/2) float 0-1 (face, rim, height)."""
        rng, c2 = self.rng, self.size // OUTPUT_STRIDE
        xs, ms = [], []
        for _ in range(self.batch):
            rect, maps, near_rim, near_stacked = self._frame(int(rng.integers(len(self.samples))))
            h2, w2 = maps.shape[1:]
            y2, x2 = int(rng.integers(0, h2 - c2 + 1)), int(rng.integers(0, w2 - c2 + 1))
            if rng.random() < 0.7:  # most crops centred near a disk: the felt alone teaches little
                stacked = self.stacked_share > 0 and rng.random() < self.stacked_share
                where = near_stacked if stacked and len(near_stacked) else near_rim
                if len(where):
                    fy, fx = where[int(rng.integers(len(where)))]
                    y2 = int(np.clip(fy - c2 // 2 + rng.integers(-c2 // 4, c2 // 4 + 1), 0, h2 - c2))
                    x2 = int(np.clip(fx - c2 // 2 + rng.integers(-c2 // 4, c2 // 4 + 1), 0, w2 - c2))
            x = rect[:, y2 * OUTPUT_STRIDE: y2 * OUTPUT_STRIDE + self.size, x2 * OUTPUT_STRIDE:
                     x2 * OUTPUT_STRIDE + self.size]
            m = maps[:, y2: y2 + c2, x2: x2 + c2]
            t = int(rng.integers(4))
            x, m = torch.rot90(x, t, (1, 2)), torch.rot90(m, t, (1, 2))
            if rng.random() < 0.5:
                x, m = x.flip(2), m.flip(2)
            xs.append(x)
            ms.append(m)
        return torch.stack(xs).float(), torch.stack(ms).float() / 255.0


# ---------------------------------------------------------------------------------------------------------------
# Photometric augmentation, batched: per-crop random draws broadcast over pixels


def _uniform(gen: torch.Generator, shape: tuple[int, ...], lo: float, hi: float, device) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=gen, device=device)


def _chance(gen: torch.Generator, n: int, p: float, device) -> torch.Tensor:
    """(n, 1, 1, 1) booleans, each true with probability p."""
    return torch.rand((n, 1, 1, 1), generator=gen, device=device) < p


def _permute_channels(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    order = torch.argsort(torch.rand((x.shape[0], 3), generator=gen, device=x.device), dim=1)
    return x.gather(1, order[:, :, None, None].expand_as(x))


def _recolour(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Each crop's own colour transform: channel order, gains, offset, sometimes inverted."""
    n, dev = x.shape[0], x.device
    out = _permute_channels(x, gen) * _uniform(gen, (n, 3, 1, 1), 0.5, 1.5, dev) + \
        _uniform(gen, (n, 3, 1, 1), -40.0, 40.0, dev)
    return torch.where(_chance(gen, n, 0.15, dev), 255.0 - out, out)


def _gaussian_blur(x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Each crop blurred by its own sigma (n,) px (0: unchanged), separably, edges replicated."""
    n, c = x.shape[:2]
    radius = max(1, int(math.ceil(3.0 * float(sigma.max()))))
    d = torch.arange(-radius, radius + 1, device=x.device, dtype=x.dtype)
    s = sigma.clamp(min=1e-3)[:, None]
    k = torch.exp(-0.5 * (d[None, :] / s) ** 2)
    k = (k / k.sum(1, keepdim=True)).repeat_interleave(c, 0)          # (n*c, 2r+1)
    y = F.pad(x.reshape(1, n * c, *x.shape[2:]), (radius, radius, radius, radius), mode="replicate")
    y = F.conv2d(y, k[:, None, None, :], groups=n * c)
    y = F.conv2d(y, k[:, None, :, None], groups=n * c)
    return y.reshape(x.shape)


def _texture(rng: np.random.Generator, gen: torch.Generator, size: int, device) -> torch.Tensor:
    """A random cloth or mat (3, size, size), float 0-255: noise at a random grain, stripes (wood), checks or a
    hex-like grid, in random colours. Scalars come from `rng` (no wait on the device), pixels from `gen`."""
    kind = int(rng.integers(4))
    yy, xx = torch.meshgrid(torch.arange(size, device=device, dtype=torch.float32),
                            torch.arange(size, device=device, dtype=torch.float32), indexing="ij")
    if kind == 0:
        small = max(2, int(size / rng.uniform(1.0, 12.0)))
        n = F.interpolate(torch.randn((1, 1, small, small), generator=gen, device=device), size=(size, size),
                          mode="bicubic", align_corners=False)[0, 0]
    elif kind == 1:
        wobble = 8.0 * torch.randn((1, size), generator=gen, device=device)
        n = torch.sin((yy + wobble) / rng.uniform(2.0, 12.0)) + \
            0.3 * torch.randn((size, size), generator=gen, device=device)
    elif kind == 2:
        p = rng.uniform(8.0, 40.0)
        n = ((torch.floor(xx / p) + torch.floor(yy / p)) % 2).float()
    else:
        p = rng.uniform(10.0, 40.0)
        n = (torch.sin(xx / p) + torch.sin((0.5 * xx + 0.87 * yy) / p) + torch.sin((0.5 * xx - 0.87 * yy) / p)).abs()
    n = (n - n.mean()) / (n.std() + 1e-6)
    c0 = torch.tensor(rng.uniform(0.0, 255.0, 3), dtype=torch.float32, device=device)[:, None, None]
    c1 = torch.tensor(rng.uniform(-60.0, 60.0, 3) * rng.uniform(0.2, 1.0), dtype=torch.float32,
                      device=device)[:, None, None]
    return (c0 + n[None] * c1).clamp(0.0, 255.0)


def _erode(mask: torch.Tensor, margin: int) -> torch.Tensor:
    """Pixels of `mask` (C, C) whose whole (2 margin + 1)-square lies in it: a square erosion, done separably."""
    out = mask[None, None]
    out = -F.max_pool2d(-out, (2 * margin + 1, 1), stride=1, padding=(margin, 0))
    out = -F.max_pool2d(-out, (1, 2 * margin + 1), stride=1, padding=(0, margin))
    return out[0, 0]


def _printed_circles(img: torch.Tensor, face: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Rings and discs printed inside the disks' faces (round shields, cups, inner borders): never outlines.
    img (3, C, C), face (C, C) in 0..1 at full size."""
    dev, size = img.device, img.shape[-1]
    inside = (face > 0.5).float()
    yy, xx = torch.meshgrid(torch.arange(size, device=dev, dtype=torch.float32),
                            torch.arange(size, device=dev, dtype=torch.float32), indexing="ij")
    for _ in range(int(rng.integers(1, 5))):
        r = rng.uniform(3.0, 24.0)
        cand = torch.nonzero(_erode(inside, int(math.ceil(r)) + 2) > 0.5)   # the circle stays on the face
        if not len(cand):
            continue
        cy, cx = cand[int(rng.integers(len(cand)))].float()
        dist = torch.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        if rng.random() < 0.3:
            alpha = (r + 0.5 - dist).clamp(0.0, 1.0)                                   # a disc
        else:
            alpha = (int(rng.integers(1, 4)) / 2.0 + 0.5 - (dist - r).abs()).clamp(0.0, 1.0)   # a ring 1-3 px
        colour = torch.tensor(rng.uniform(0.0, 255.0, 3), dtype=torch.float32, device=dev)[:, None, None]
        img = img * (1.0 - alpha) + colour * alpha
    return img


def augment(x: torch.Tensor, face: torch.Tensor, rng: np.random.Generator, gen: torch.Generator) -> torch.Tensor:
    """Photometric augmentation of (n, 3, C, C) float 0-255 crops: the look of a table must not matter. Half of
    the crops get one colour transform on the disks' faces and another on everything else (`face`: the half-size
    face targets, (n, C/2, C/2)), so no colour of cloth or print, and no contrast between them, means anything.
    `rng` draws the per-crop choices that steer Python (which crops get a new cloth or printed circles, and
    their shapes), `gen` the tensors, so the device is never waited on for a random number."""
    n, size, dev = x.shape[0], x.shape[-1], x.device
    face_full = F.interpolate(face[:, None], size=(size, size), mode="bilinear", align_corners=False)
    m = _gaussian_blur(face_full, torch.full((n,), 0.7, device=dev))
    x = torch.where(_chance(gen, n, 0.5, dev), _recolour(x, gen) * m + _recolour(x, gen) * (1.0 - m), x)
    for k in np.nonzero(rng.random(n) < 0.25)[0]:        # another cloth under the same disks
        x[k] = x[k] * m[k] + _texture(rng, gen, size, dev) * (1.0 - m[k])
    for k in np.nonzero(rng.random(n) < 0.3)[0]:
        x[k] = _printed_circles(x[k], face_full[k, 0], rng)
    x = torch.where(_chance(gen, n, 0.5, dev), _permute_channels(x, gen), x)
    x = torch.where(_chance(gen, n, 0.1, dev), x.mean(1, keepdim=True).expand_as(x), x)
    x = x * _uniform(gen, (n, 3, 1, 1), 0.75, 1.25, dev) * _uniform(gen, (n, 1, 1, 1), 0.45, 1.4, dev)
    x = 255.0 * (x / 255.0).clamp(0.0, 1.0) ** _uniform(gen, (n, 1, 1, 1), 0.65, 1.5, dev)
    blur = torch.where(_chance(gen, n, 0.25, dev)[:, 0, 0, 0], _uniform(gen, (n,), 0.5, 1.4, dev),
                       torch.zeros(n, device=dev))
    if bool((blur > 0).any()):
        x = torch.where(blur[:, None, None, None] > 0, _gaussian_blur(x, blur), x)
    noise = torch.where(_chance(gen, n, 0.5, dev), _uniform(gen, (n, 1, 1, 1), 1.0, 7.0, dev), 0.0)
    x = x + noise * torch.randn(x.shape, generator=gen, device=dev)
    return x.clamp(0.0, 255.0)
