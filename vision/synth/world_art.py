"""Prints and cloths of the randomized world: disk faces of many sources and borders, and mats of many kinds.

Same conventions as `vision.synth.art` (premultiplied BGR float32 + alpha, `DISK_PPM` texture px per mm; cached by
their frozen style). A face is an art field (a photo crop, painted noise and brush strokes, shapes with round
shields and cups, heraldic text, or a flat colour), then maybe printed circles concentric with the disk, a border
(none, thin or wide, in any colour: the cloth's own and near-white included), stat pips on the border or inside,
and maybe a dark line along the cut edge. Exactly what fools an eye tuned on one print.
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from vision.synth import art
from vision.synth.scenes import DISK_ART, FaceStyle, MatStyle

WORDS = ("ORC", "ELF", "REX", "LANCE", "HOST", "GUARD", "KNIGHT", "WOLF", "TROLL", "SKULL", "IRON", "AXE", "BOW",
         "VII", "XII", "IV", "MAGE", "DRAKE", "BANE", "CROW")


def _noise(rng: np.random.Generator, size: int, grain: float) -> np.ndarray:
    n = cv2.GaussianBlur(rng.standard_normal((size, size)).astype(np.float32), (0, 0), grain)
    return (n - n.mean()) / (n.std() + 1e-6)


def _colour(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(15, 240, 3).astype(np.float32)


def _art_field(style: FaceStyle, size: int, R: float, rng: np.random.Generator) -> np.ndarray:
    """The art over the whole face square (float BGR 0-255)."""
    c = size / 2.0
    if style.art == "photo":
        ph = art.photo(str(DISK_ART[int(rng.integers(len(DISK_ART)))]))
        h, w = ph.shape[:2]
        side = rng.uniform(0.35, 0.9) * min(h, w)
        cx, cy = rng.uniform(side / 2, w - side / 2), rng.uniform(side / 2, h - side / 2)
        s = (2 * R) / side
        m = np.array([[s, 0, c - s * cx], [0, s, c - s * cy]], np.float32)
        return cv2.warpAffine(ph, m, (size, size), flags=cv2.INTER_AREA,
                              borderMode=cv2.BORDER_REFLECT).astype(np.float32)
    if style.art == "flat":
        img = np.empty((size, size, 3), np.float32)
        img[:] = _colour(rng)
        return img * (1.0 + 0.08 * _noise(rng, size, size / 3))[..., None]
    img = np.empty((size, size, 3), np.float32)
    img[:] = _colour(rng)
    if style.art == "paint":
        for _ in range(3):
            m = np.clip(_noise(rng, size, rng.uniform(2, size / 5)) * 1.5, -1, 1) * 0.5 + 0.5
            img = img * (1 - m[..., None]) + _colour(rng)[None, None, :] * m[..., None]
        for _ in range(int(rng.integers(3, 12))):
            p0, p1 = rng.uniform(0, size, 2), rng.uniform(0, size, 2)
            cv2.line(img, tuple(int(v) for v in p0), tuple(int(v) for v in p1), tuple(float(v) for v in _colour(rng)),
                     int(rng.integers(2, max(3, size // 12))), cv2.LINE_AA)
        return img
    if style.art == "shapes":
        for _ in range(int(rng.integers(2, 7))):
            col = tuple(float(v) for v in _colour(rng))
            x, y = rng.uniform(0.2, 0.8, 2) * size
            k = int(rng.integers(5))
            rr = rng.uniform(0.08, 0.35) * size
            if k == 0:      # a round shield with its boss and rim
                cv2.circle(img, (int(x), int(y)), int(rr), col, -1, cv2.LINE_AA)
                cv2.circle(img, (int(x), int(y)), int(rr), tuple(float(v) for v in _colour(rng)),
                           max(1, int(rr * 0.12)), cv2.LINE_AA)
                cv2.circle(img, (int(x), int(y)), max(1, int(rr * 0.25)), tuple(float(v) for v in _colour(rng)), -1,
                           cv2.LINE_AA)
            elif k == 1:    # a ring (a cup or a helmet seen from above)
                cv2.circle(img, (int(x), int(y)), int(rr), col, max(1, int(rr * rng.uniform(0.08, 0.3))), cv2.LINE_AA)
            elif k == 2:
                pts = (np.array([x, y]) + rr * np.stack([np.cos(a := rng.uniform(0, 6.3, 5)), np.sin(a)], 1))
                cv2.fillPoly(img, [pts.astype(np.int32)], col, cv2.LINE_AA)
            elif k == 3:
                cv2.ellipse(img, (int(x), int(y)), (int(rr), int(rr * rng.uniform(0.3, 1.0))),
                            float(rng.uniform(0, 180)), 0, 360, col, -1, cv2.LINE_AA)
            else:
                cv2.rectangle(img, (int(x - rr), int(y - rr / 2)), (int(x + rr), int(y + rr / 2)), col, -1)
        return img
    # text / heraldry: stripes or quarters, and a word or two
    col2 = _colour(rng)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    kind = int(rng.integers(3))
    if kind == 0:
        band = (np.floor((xx + yy) / max(4.0, size * rng.uniform(0.08, 0.25))) % 2)[..., None]
    elif kind == 1:
        band = (((xx > c) ^ (yy > c)).astype(np.float32))[..., None]
    else:
        band = (np.abs(yy - c) < size * rng.uniform(0.08, 0.2)).astype(np.float32)[..., None]
    img = img * (1 - band) + col2[None, None, :] * band
    for _ in range(int(rng.integers(1, 3))):
        word = str(WORDS[int(rng.integers(len(WORDS)))])
        art.put_text_centered(img, word, (c + rng.uniform(-0.2, 0.2) * R, c + rng.uniform(-0.4, 0.4) * R),
                              R * rng.uniform(0.25, 0.5), tuple(float(v) for v in _colour(rng)),
                              max_width=R * 1.6)
    return img


@lru_cache(maxsize=512)
def styled_face(style: FaceStyle, radius_mm: float) -> np.ndarray:
    """The printed top of a disk of the randomized world (premultiplied BGR + alpha, `art.DISK_PPM`)."""
    ppm = art.DISK_PPM
    R = radius_mm * ppm
    size = int(math.ceil(2 * R)) + 4
    c = size / 2.0
    rng = np.random.default_rng([style.seed, int(radius_mm * 10)])
    img = _art_field(style, size, R, rng)
    for _ in range(style.inner_rings):   # printed circles concentric with the disk: never its outline
        rr = R * rng.uniform(0.45, 0.9)
        cv2.circle(img, (int(c), int(c)), int(rr), tuple(float(v) for v in _colour(rng)),
                   max(1, int(rng.uniform(0.3, 2.5) * ppm)), cv2.LINE_AA)
    border = {"none": 0.0, "thin": rng.uniform(0.8, 2.0), "wide": rng.uniform(3.5, 9.0)}[style.border] * ppm
    if border > 0:
        ring = np.array(style.border_bgr, np.float32)
        d = art.radial(size)[2]
        inner = np.clip(d - (R - border) + 0.5, 0.0, 1.0)[..., None]
        shade = (0.9 + 0.15 * np.clip(1.0 - np.abs(d / R - (1 - border / R / 2)) * R / max(border, 1), 0, 1))
        img = img * (1 - inner) + ring[None, None, :] * shade[..., None] * inner
    if style.pips != "none":
        n = int(rng.integers(2, 6))
        at = (R - max(border, 3 * ppm) / 2) if style.pips == "ring" else R * rng.uniform(0.35, 0.7)
        pr = max(2.0, min(border * 0.45 if style.pips == "ring" and border > 0 else 2.2 * ppm, 3.0 * ppm))
        start = rng.uniform(0, 2 * math.pi)
        for k in range(n):
            a = start + k * rng.uniform(0.5, 1.2)
            x, y = c + at * math.cos(a), c + at * math.sin(a)
            cv2.circle(img, (int(x), int(y)), int(pr), tuple(float(v) for v in _colour(rng)), -1, cv2.LINE_AA)
            art.put_text_centered(img, str(int(rng.integers(1, 9))), (x, y), pr * 1.1, (240, 240, 240))
    if style.outline:
        cv2.circle(img, (int(c), int(c)), int(round(R - 0.4 * ppm)), (25, 25, 25), max(1, int(0.5 * ppm)),
                   cv2.LINE_AA)
    # printed cardboard: a faint sheen and a slightly darker cut edge
    d = art.radial(size)[2]
    edge = 1.0 - rng.uniform(0.0, 0.3) * np.clip((d - (R - 1.2 * ppm)) / (1.2 * ppm), 0, 1)
    img = np.clip(img, 0, 255) * edge[..., None]
    return art.rgba(img, art.circle_mask(size, c, R))


@lru_cache(maxsize=16)
def mat_tile(style: MatStyle, size: int = 1024) -> np.ndarray:
    """A periodic colour tile of the cloth (float BGR 0-255) at 1 px per `style.scale / 32` mm: sample it with
    wrap-around at 32 / scale px per mm."""
    rng = np.random.default_rng(style.seed)
    base = np.array(style.bgr, np.float32)
    k = np.fft.fftfreq(size)

    def smooth(sigma: float) -> np.ndarray:
        n = np.real(np.fft.ifft2(np.fft.fft2(rng.standard_normal((size, size))) *
                                 np.exp(-(k[:, None] ** 2 + k[None, :] ** 2) * (sigma * 2.5) ** 2)))
        return (n / (n.std() + 1e-9)).astype(np.float32)

    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    period = size / 8.0  # the pattern repeats 8 times per tile: 8 * scale mm... one tile spans 32 * scale mm
    if style.kind == "felt":
        t = 1.0 + 0.05 * smooth(1) + 0.03 * smooth(8) + 0.03 * smooth(40)
        img = t[..., None] * base
    elif style.kind == "black":
        img = (1.0 + 0.08 * smooth(1) + 0.05 * smooth(20))[..., None] * np.minimum(base, 40)
    elif style.kind == "grass":   # a printed grass mat: blades of two greens and earth
        blades = smooth(0.7)
        patches = smooth(30)
        earth = np.array([60, 90, 110], np.float32) * (0.8 + 0.4 * rng.random())
        m = np.clip(patches * 0.8 - 0.6, 0, 1)[..., None]
        img = base * (1.0 + 0.25 * blades)[..., None] * (1 - m) + earth * (1.0 + 0.2 * blades)[..., None] * m
    elif style.kind == "stone":   # flagstones or gravel: cells with dark seams
        cells = smooth(period / 6)
        seams = np.exp(-(np.abs(np.sin(cells * 3.0)) / 0.08) ** 2)
        img = base * (1.0 + 0.15 * smooth(2) + 0.1 * cells)[..., None] * (1 - 0.6 * seams)[..., None]
    elif style.kind == "wood":
        grain = np.sin((yy + 6 * smooth(40)) / rng.uniform(2, 6)) * 0.08 + 0.05 * smooth(1)
        plank = (1.0 - 0.5 * np.exp(-((yy % period) / 1.5) ** 2))
        img = base * ((1.0 + grain) * plank)[..., None]
    elif style.kind == "checks":
        other = np.clip(base * rng.uniform(0.5, 1.6, 3), 0, 255)
        m = ((np.floor(xx / period) + np.floor(yy / period)) % 2)[..., None]
        img = base * (1 - m) + other * m
        img = img * (1.0 + 0.04 * smooth(1))[..., None]
    elif style.kind == "hexes":
        s = period / 2.0
        u = np.abs(np.sin(xx / s) + np.sin((0.5 * xx + 0.866 * yy) / s) + np.sin((0.5 * xx - 0.866 * yy) / s))
        line = np.exp(-((u - 0.2) / 0.15) ** 2)
        img = base * (1 - 0.5 * line)[..., None] * (1.0 + 0.05 * smooth(1))[..., None]
    elif style.kind == "dots":    # round spots of any size (flowers, rocks, polka print): circles that are no disk
        img = base * (1.0 + 0.04 * smooth(1) + 0.04 * smooth(12))[..., None]
        img = np.ascontiguousarray(img)
        for _ in range(int(rng.integers(60, 260))):
            x, y = rng.uniform(0, size, 2)
            r = period * rng.uniform(0.03, 0.7) ** 2 * 1.2
            col = tuple(float(v) for v in np.clip(base * rng.uniform(0.4, 1.7, 3), 0, 255))
            thick = -1 if rng.random() < 0.6 else max(1, int(r * rng.uniform(0.1, 0.3)))
            for dx in (-size, 0, size):      # drawn wrapped: the tile repeats without seams
                for dy in (-size, 0, size):
                    cv2.circle(img, (int(x + dx), int(y + dy)), max(1, int(r)), col, thick, cv2.LINE_AA)
    elif style.kind == "cobbles":  # rounded stones of their own tones with dark joints (a periodic Voronoi)
        n = int(rng.integers(40, 160))
        q = 4    # the cells are found on a quarter-size grid, then scaled up: a tile per table must stay cheap
        small = size // q
        pts = rng.uniform(0, small, (n, 2)).astype(np.float32)
        gy, gx = np.mgrid[0:small, 0:small].astype(np.float32)
        d1 = np.full((small, small), np.inf, np.float32)
        d2 = np.full((small, small), np.inf, np.float32)
        owner = np.zeros((small, small), np.int32)
        for j, (px, py) in enumerate(pts):
            d = np.hypot(np.minimum(np.abs(gx - px), small - np.abs(gx - px)),
                         np.minimum(np.abs(gy - py), small - np.abs(gy - py)))
            closer = d < d1
            d2 = np.where(closer, d1, np.minimum(d2, d))
            owner = np.where(closer, j, owner)
            d1 = np.where(closer, d, d1)
        gap = cv2.resize((d2 - d1) * q, (size, size), interpolation=cv2.INTER_LINEAR)
        owner = cv2.resize(owner.astype(np.float32), (size, size), interpolation=cv2.INTER_NEAREST).astype(np.int32)
        tone = rng.uniform(0.7, 1.3, (n, 3)).astype(np.float32)
        joint = np.clip(gap / rng.uniform(3.0, 10.0), 0.0, 1.0)
        img = base * tone[owner] * (0.45 + 0.55 * np.sqrt(joint))[..., None] * (1.0 + 0.06 * smooth(1))[..., None]
    elif style.kind == "camo":    # blotches of two or three colours with sharp edges
        img = base * (1.0 + 0.04 * smooth(1))[..., None]
        for _ in range(int(rng.integers(1, 3))):
            m = np.clip((smooth(period / 3) - rng.uniform(0.0, 0.8)) * 6.0, 0.0, 1.0)[..., None]
            img = img * (1 - m) + np.clip(base * rng.uniform(0.4, 1.7, 3), 0, 255) * m
    else:  # printed tiles: squares of slightly different tones with grout lines
        tone = rng.uniform(0.8, 1.2, (8, 8)).astype(np.float32)
        t = tone[(yy // period).astype(int) % 8, (xx // period).astype(int) % 8]
        grout = ((xx % period) < 2) | ((yy % period) < 2)
        img = base * (t * np.where(grout, 0.55, 1.0) * (1.0 + 0.05 * smooth(1)))[..., None]
    img = np.clip(img, 0, 255).astype(np.float32)
    img.setflags(write=False)
    return img
