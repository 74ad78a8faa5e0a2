"""Training crops of the face/rim network cut and augmented by torch on the training device.

`vision.facemap_host_crops` makes the crops with NumPy and OpenCV, one crop at a time on a CPU core. That is the
pace of training on a CPU, but a GPU would wait on it (about 7 ms a crop a core). Here the rendered frames live on the
device and a whole batch is cut, turned and augmented there with the same recipe: crops mostly centred near a
disk's outline, quarter turns and mirrors, one colour transform on the faces and another on the rest, another cloth
under the same disks, rings and discs printed inside faces (never outlines), channel order, grey, gain, gamma, blur
and noise. A batch is cut by two gathers and augmented in a fixed few dozen operations, with no wait of the host on
the device: made crop by crop, a GPU waited on thousands of small launches a step. Only the trainer imports this
module (torch is the `train` extra).
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
    disk-centred crops are centred on a disk lying on another, `nested_share` on a disk lying wholly on others
    (`FaceTruth.nested`: the eye's commonest miss). Batches are (x, face, rim, height): x is
    (n, 3, size, size) float 0-255 BGR, the targets (n, size/2, size/2) float 0-1.
    """

    def __init__(self, samples: list[FaceTruth], device: str | torch.device, seed: int, batch: int, size: int = 256,
                 stacked_share: float = 0.0, nested_share: float = 0.0) -> None:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if size % NETWORK_STRIDE or size < 2 * NETWORK_STRIDE:
            raise ValueError(f"crop size must be a multiple of {NETWORK_STRIDE} and >= {2 * NETWORK_STRIDE}, "
                             f"got {size}")
        if not 0.0 <= stacked_share <= 1.0:
            raise ValueError(f"stacked_share must be within 0..1, got {stacked_share}")
        if not 0.0 <= nested_share <= 1.0 or stacked_share + nested_share > 1.0:
            raise ValueError(f"nested_share must be within 0..1 and with stacked_share at most 1, got {nested_share} "
                             f"and {stacked_share}")
        if not samples:
            raise ValueError("no training frames")
        self.samples, self.device, self.batch, self.size = samples, torch.device(device), batch, size
        self.stacked_share, self.nested_share = stacked_share, nested_share
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        self._frames: dict[int, tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]] = {}
        self._turn_index: dict[int, torch.Tensor] = {}

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

    def _turns(self, side: int) -> torch.Tensor:
        """(8, side * side) flat pixel indices of the four quarter turns, each plain and mirrored (index 2 t + m)."""
        if side not in self._turn_index:
            base = torch.arange(side * side).reshape(side, side)
            turns = [torch.rot90(base, t, (0, 1)) for t in range(4)]
            self._turn_index[side] = torch.stack([v for r in turns for v in (r, r.flip(1))]).reshape(8, -1) \
                .to(self.device)
        return self._turn_index[side]

    def cut(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch of crops before any photometric change, turned and mirrored: x (n, 3, C, C) float 0-255 and
        the maps (n, 3, C/2, C/2) float 0-1 (face, rim, height). The places and turns are drawn on the host; the
        crops are stacked and turned by two gathers for the whole batch (a kernel or two per crop would leave a
        GPU waiting on the launches)."""
        rng, c2 = self.rng, self.size // OUTPUT_STRIDE
        xs, ms, turns = [], [], []
        for _ in range(self.batch):
            i = int(rng.integers(len(self.samples)))
            rect, maps, near_rim, near_stacked = self._frame(i)
            h2, w2 = maps.shape[1:]
            y2, x2 = int(rng.integers(0, h2 - c2 + 1)), int(rng.integers(0, w2 - c2 + 1))
            if rng.random() < 0.7:  # most crops centred near a disk: the felt alone teaches little
                where = near_rim
                if self.stacked_share > 0 or self.nested_share > 0:   # one draw picks which kind of place
                    pick, nested = rng.random(), self.samples[i].nested
                    if pick < self.stacked_share and len(near_stacked):
                        where = near_stacked
                    elif self.stacked_share <= pick < self.stacked_share + self.nested_share and len(nested):
                        where = nested
                if len(where):
                    fy, fx = where[int(rng.integers(len(where)))]
                    y2 = int(np.clip(fy - c2 // 2 + rng.integers(-c2 // 4, c2 // 4 + 1), 0, h2 - c2))
                    x2 = int(np.clip(fx - c2 // 2 + rng.integers(-c2 // 4, c2 // 4 + 1), 0, w2 - c2))
            xs.append(rect[:, y2 * OUTPUT_STRIDE: y2 * OUTPUT_STRIDE + self.size, x2 * OUTPUT_STRIDE:
                           x2 * OUTPUT_STRIDE + self.size])
            ms.append(maps[:, y2: y2 + c2, x2: x2 + c2])
            turn = int(rng.integers(4))
            turns.append(2 * turn + int(rng.random() < 0.5))
        which = torch.as_tensor(turns, device=self.device)
        x = _turned(torch.stack(xs), self._turns(self.size)[which])
        m = _turned(torch.stack(ms), self._turns(c2)[which])
        return x.float(), m.float() / 255.0


def _turned(img: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(n, c, s, s) images, each rearranged by its own (n, s * s) flat pixel index."""
    n, c, h, w = img.shape
    return img.reshape(n, c, h * w).gather(2, index[:, None, :].expand(n, c, h * w)).reshape(n, c, h, w)


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


def _gaussian_blur(x: torch.Tensor, sigma: np.ndarray) -> torch.Tensor:
    """Each crop blurred by its own sigma (n,) px (0: unchanged), separably, edges replicated. The sigmas are the
    host's, so the kernel's size needs no wait on the device."""
    n, c = x.shape[:2]
    radius = max(1, int(math.ceil(3.0 * float(np.max(sigma)))))
    d = torch.arange(-radius, radius + 1, device=x.device, dtype=x.dtype)
    s = torch.as_tensor(np.maximum(sigma, 1e-3), dtype=x.dtype, device=x.device)[:, None]
    k = torch.exp(-0.5 * (d[None, :] / s) ** 2)
    k = (k / k.sum(1, keepdim=True)).repeat_interleave(c, 0)          # (n*c, 2r+1)
    y = F.pad(x.reshape(1, n * c, *x.shape[2:]), (radius, radius, radius, radius), mode="replicate")
    y = F.conv2d(y, k[:, None, None, :], groups=n * c)
    y = F.conv2d(y, k[:, None, :, None], groups=n * c)
    return y.reshape(x.shape)


def _host(values: np.ndarray, device) -> torch.Tensor:
    """Per-crop numbers drawn on the host, as float32 on the device (a copy, never a wait)."""
    return torch.as_tensor(np.asarray(values, np.float32), device=device)


def _textures(rng: np.random.Generator, gen: torch.Generator, k: int, size: int, device) -> torch.Tensor:
    """`k` random cloths or mats (k, 3, size, size), float 0-255: noise at a random grain, stripes (wood), checks
    or a hex-like grid, in random colours. Each kind is made for all `k` and each crop keeps its own: a few dozen
    kernels for the batch whatever `k`. Per-crop numbers come from `rng`, pixels from `gen`."""
    kind = _host(rng.integers(4, size=k), device)[:, None, None]
    cells = np.maximum(2, (size / rng.uniform(1.0, 12.0, k)).astype(int))   # noise: cells across the crop
    stripe = _host(rng.uniform(2.0, 12.0, k), device)[:, None, None]
    check = _host(rng.uniform(8.0, 40.0, k), device)[:, None, None]
    hexes = _host(rng.uniform(10.0, 40.0, k), device)[:, None, None]
    c0 = _host(rng.uniform(0.0, 255.0, (k, 3)), device)[:, :, None, None]
    c1 = _host(rng.uniform(-60.0, 60.0, (k, 3)) * rng.uniform(0.2, 1.0, (k, 1)), device)[:, :, None, None]
    yy, xx = torch.meshgrid(torch.arange(size, device=device, dtype=torch.float32),
                            torch.arange(size, device=device, dtype=torch.float32), indexing="ij")
    # smooth noise: a window of `cells` x `cells` of a white-noise field, interpolated up to the crop
    zoom = _host(cells / size, device)
    theta = torch.zeros((k, 2, 3), device=device)
    theta[:, 0, 0] = zoom
    theta[:, 1, 1] = zoom
    grid = F.affine_grid(theta, [k, 1, size, size], align_corners=False)
    field = torch.randn((k, 1, size, size), generator=gen, device=device)
    noise = F.grid_sample(field, grid, mode="bicubic", padding_mode="reflection", align_corners=False)[:, 0]
    wobble = 8.0 * torch.randn((k, 1, size), generator=gen, device=device)
    stripes = torch.sin((yy + wobble) / stripe) + 0.3 * torch.randn((k, size, size), generator=gen, device=device)
    checks = ((torch.floor(xx / check) + torch.floor(yy / check)) % 2).float()
    grid3 = (torch.sin(xx / hexes) + torch.sin((0.5 * xx + 0.87 * yy) / hexes) +
             torch.sin((0.5 * xx - 0.87 * yy) / hexes)).abs()
    n = torch.where(kind == 0, noise, torch.where(kind == 1, stripes, torch.where(kind == 2, checks, grid3)))
    n = (n - n.mean((1, 2), keepdim=True)) / (n.std((1, 2), keepdim=True) + 1e-6)
    return (c0 + n[:, None] * c1).clamp(0.0, 255.0)


MAX_PRINTED_RADIUS = 24.0  # px: the largest ring or disc printed inside a face


def _face_depth(face: torch.Tensor) -> torch.Tensor:
    """(k, C, C) face probabilities -> how deep each pixel lies in a face: 0 outside, else 1 + the number of 3x3
    square erosions it survives (counted up to what the largest printed circle needs). The crop's edge does not
    end a face (the face goes on beyond it)."""
    inside = (face > 0.5).float()[:, None]
    depth, e = inside.clone(), inside
    for _ in range(int(math.ceil(MAX_PRINTED_RADIUS)) + 2):
        e = -F.max_pool2d(-e, 3, stride=1, padding=1)
        depth = depth + e
    return depth[:, 0]


def _printed_circles(img: torch.Tensor, face: torch.Tensor, rng: np.random.Generator,
                     gen: torch.Generator) -> torch.Tensor:
    """Rings and discs printed inside the disks' faces (round shields, cups, inner borders): never outlines.
    img (k, 3, C, C), face (k, C, C) in 0..1 at full size. One to four per crop, laid in turn; a circle of radius
    r is centred where a square of side 2 (ceil(r) + 2) + 1 lies in the face, drawn uniformly among those
    places on the device (a crop with none gets none)."""
    k, dev, size = img.shape[0], img.device, img.shape[-1]
    depth = _face_depth(face)
    yy, xx = torch.meshgrid(torch.arange(size, device=dev, dtype=torch.float32),
                            torch.arange(size, device=dev, dtype=torch.float32), indexing="ij")
    count = rng.integers(1, 5, size=k)
    for j in range(int(count.max())):
        r_np = rng.uniform(3.0, MAX_PRINTED_RADIUS, k)
        r = _host(r_np, dev)[:, None, None]
        disc = _host(rng.random(k) < 0.3, dev)[:, None, None]
        width = _host(rng.integers(1, 4, k) / 2.0, dev)[:, None, None]
        colour = _host(rng.uniform(0.0, 255.0, (k, 3)), dev)[:, :, None, None]
        room = depth >= _host(np.ceil(r_np) + 3.0, dev)[:, None, None]
        pick = (torch.rand((k, size, size), generator=gen, device=dev) * room).flatten(1).argmax(1)
        cy, cx = (pick // size).float()[:, None, None], (pick % size).float()[:, None, None]
        dist = torch.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        alpha = torch.where(disc > 0, (r + 0.5 - dist).clamp(0.0, 1.0),               # a disc
                            (width + 0.5 - (dist - r).abs()).clamp(0.0, 1.0))          # a ring 1-3 px
        alpha = alpha * (room.flatten(1).any(1) & _host(count > j, dev).bool())[:, None, None]
        img = img * (1.0 - alpha[:, None]) + colour * alpha[:, None]
    return img


def augment(x: torch.Tensor, face: torch.Tensor, rng: np.random.Generator, gen: torch.Generator) -> torch.Tensor:
    """Photometric augmentation of (n, 3, C, C) float 0-255 crops: the look of a table must not matter. Half of
    the crops get one colour transform on the disks' faces and another on everything else (`face`: the half-size
    face targets, (n, C/2, C/2)), so no colour of cloth or print, and no contrast between them, means anything.
    `rng` draws the per-crop choices that steer Python (which crops get a new cloth or printed circles, their
    shapes, which are blurred), `gen` the tensors: the device is never waited on, and every step is a fixed few
    kernels for the whole batch."""
    n, size, dev = x.shape[0], x.shape[-1], x.device
    face_full = F.interpolate(face[:, None], size=(size, size), mode="bilinear", align_corners=False)
    m = _gaussian_blur(face_full, np.full(n, 0.7))
    x = torch.where(_chance(gen, n, 0.5, dev), _recolour(x, gen) * m + _recolour(x, gen) * (1.0 - m), x)
    cloth = np.nonzero(rng.random(n) < 0.25)[0]         # another cloth under the same disks
    if len(cloth):
        k = torch.as_tensor(cloth, device=dev)
        x[k] = x[k] * m[k] + _textures(rng, gen, len(cloth), size, dev) * (1.0 - m[k])
    printed = np.nonzero(rng.random(n) < 0.3)[0]
    if len(printed):
        k = torch.as_tensor(printed, device=dev)
        x[k] = _printed_circles(x[k], face_full[k, 0], rng, gen)
    x = torch.where(_chance(gen, n, 0.5, dev), _permute_channels(x, gen), x)
    x = torch.where(_chance(gen, n, 0.1, dev), x.mean(1, keepdim=True).expand_as(x), x)
    x = x * _uniform(gen, (n, 3, 1, 1), 0.75, 1.25, dev) * _uniform(gen, (n, 1, 1, 1), 0.45, 1.4, dev)
    x = 255.0 * (x / 255.0).clamp(0.0, 1.0) ** _uniform(gen, (n, 1, 1, 1), 0.65, 1.5, dev)
    blur = np.where(rng.random(n) < 0.25, rng.uniform(0.5, 1.4, n), 0.0)
    if (blur > 0).any():
        x = torch.where(_host(blur, dev)[:, None, None, None] > 0, _gaussian_blur(x, blur), x)
    noise = torch.where(_chance(gen, n, 0.5, dev), _uniform(gen, (n, 1, 1, 1), 1.0, 7.0, dev), 0.0)
    x = x + noise * torch.randn(x.shape, generator=gen, device=dev)
    return x.clamp(0.0, 255.0)
