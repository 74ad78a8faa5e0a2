"""Printed things of the synthetic table, drawn flat in their own frame: disk faces, counters, terrain cards, marker
tiles, the ruler, a hand, and the felt / table-top textures.

Every texture is premultiplied BGR (float32, 0-255) plus alpha (0-1) stacked as 4 channels, so the camera map can
interpolate it without dark fringes. Textures that depend only on their arguments are cached.
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from vision.synth.scenes import DISK_ART, TERRAIN_ART, DiskArt, HandPiece, TerrainPiece

DISK_PPM = 3.5  # texture pixels per mm of printed pieces (a 1080p frame shows about 1 px per mm)
FLAT_PPM = 3.0


PHOTO_NAMES = tuple(dict.fromkeys(DISK_ART + TERRAIN_ART))  # every photo the synthetic tables print
_saved_photos: dict[str, np.ndarray] = {}  # photos read from a file (`use_saved_photos`), by name


def save_photos(path) -> None:
    """Write every photo the synthetic tables print (`PHOTO_NAMES`, as `photo` gives them) into one .npz file, for
    a machine without scikit-image (a lent training machine, offline) to draw from (`use_saved_photos`)."""
    np.savez_compressed(path, **{name: photo(name) for name in PHOTO_NAMES})


def use_saved_photos(path) -> None:
    """Draw the photos from a file written by `save_photos` instead of from scikit-image (processes forked after
    this call draw from it too); `None`: from scikit-image again. A file that cannot be read, or lacks a name of
    `PHOTO_NAMES`, is refused (ValueError) and changes nothing."""
    if path is None:
        _saved_photos.clear()
        photo.cache_clear()
        return
    try:
        with np.load(path) as z:
            loaded = {name: z[name] for name in z.files}
    except Exception as exc:   # missing, truncated, not an .npz: one clear line
        raise ValueError(f"{path}: not a photo file written by save_photos ({type(exc).__name__})") from exc
    missing = [name for name in PHOTO_NAMES if name not in loaded]
    if missing:
        raise ValueError(f"{path}: no photo {', '.join(missing)} (write the file with save_photos)")
    _saved_photos.clear()
    _saved_photos.update(loaded)
    photo.cache_clear()


@lru_cache(maxsize=None)
def photo(name: str) -> np.ndarray:
    """A photo bundled inside scikit-image, as BGR uint8 (greyscale ones get a sepia print tint); from the saved
    file instead after `use_saved_photos`."""
    if name in _saved_photos:
        return _saved_photos[name]
    import skimage.data

    img = getattr(skimage.data, name)()
    if img.dtype == bool:
        img = img.astype(np.uint8) * 255
    if img.dtype != np.uint8:
        img = np.clip(img * 255.0 if img.max() <= 1.0 else img, 0, 255).astype(np.uint8)
    if img.ndim == 2:
        g = img.astype(np.float32) / 255.0
        img = np.stack([g * 190 + 20, g * 215 + 25, g * 235 + 20], axis=-1).astype(np.uint8)
    elif img.shape[2] == 4:
        img = img[:, :, :3]
    return np.ascontiguousarray(img[:, :, ::-1]) if img.ndim == 3 and img.shape[2] == 3 else img


def rgba(bgr: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    a = np.clip(alpha.astype(np.float32), 0.0, 1.0)
    out = np.empty(bgr.shape[:2] + (4,), np.float32)
    out[..., :3] = bgr.astype(np.float32) * a[..., None]
    out[..., 3] = a
    out.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def radial(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xx, yy, distance from the square's centre) of a size x size texture; read-only, cached."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    c = size / 2.0
    d = np.sqrt((xx + 0.5 - c) ** 2 + (yy + 0.5 - c) ** 2)
    for a in (xx, yy, d):
        a.setflags(write=False)
    return xx, yy, d


def circle_mask(size: int, center: float, radius: float) -> np.ndarray:
    """Anti-aliased disc centred in the square (exact coverage along the edge, 1 px ramp)."""
    return np.clip(radius - radial(size)[2] + 0.5, 0.0, 1.0)


def put_text_centered(img: np.ndarray, text: str, center: tuple[float, float], height_px: float,
                       colour: tuple[int, ...], font: int = cv2.FONT_HERSHEY_DUPLEX, max_width: float | None = None,
                       thickness_scale: float = 0.08) -> None:
    scale = height_px / 22.0
    (w, h), _ = cv2.getTextSize(text, font, scale, 1)
    if max_width is not None and w > max_width:
        scale *= max_width / w
    th = max(1, int(round(height_px * thickness_scale)))
    (w, h), _ = cv2.getTextSize(text, font, scale, th)
    org = (int(round(center[0] - w / 2)), int(round(center[1] + h / 2)))
    # OpenCV draws text on 8-bit images only: draw a coverage mask over the text's box, then blend the colour in.
    x0, y0 = max(org[0] - th - 2, 0), max(org[1] - h - th - 4, 0)
    x1, y1 = min(org[0] + w + th + 2, img.shape[1]), min(org[1] + h // 2 + th + 4, img.shape[0])
    if x1 <= x0 or y1 <= y0:
        return
    mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.putText(mask, text, (org[0] - x0, org[1] - y0), font, scale, 255, th, cv2.LINE_AA)
    m = mask.astype(np.float32)[..., None] / 255.0
    view = img[y0:y1, x0:x1]
    view *= 1.0 - m
    view += m * np.asarray(colour, np.float32)[: img.shape[2]]


@lru_cache(maxsize=512)
def disk_face(art: DiskArt, radius_mm: float, ring_bgr: tuple[int, int, int]) -> np.ndarray:
    """The printed top of a disk: art photo, army-coloured ring, stat badges and the unit's name banner."""
    ppm = DISK_PPM
    R = radius_mm * ppm
    size = int(math.ceil(2 * R)) + 4
    c = size / 2.0
    ring = np.array(ring_bgr, np.float32)
    xx, yy, d = radial(size)
    # ring with a soft radial shading, like a printed bevel
    shade = 0.85 + 0.25 * np.clip(1.0 - np.abs(d / R - 0.89) / 0.11, 0, 1)
    img = ring[None, None, :] * shade[..., None]
    if art.back:
        # card back: ring colour all over with a printed emblem
        img = ring[None, None, :] * (0.75 + 0.1 * np.cos(d / R * 9.0))[..., None]
        cv2.circle(img, (int(c), int(c)), int(R * 0.45), (215, 225, 230), max(2, int(R * 0.06)), cv2.LINE_AA)
        put_text_centered(img, "DW", (c, c), R * 0.45, (215, 225, 230), font=cv2.FONT_HERSHEY_TRIPLEX)
        return rgba(img, circle_mask(size, c, R))
    r_in = R * 0.78
    ph = photo(art.photo)
    h, w = ph.shape[:2]
    side = art.crop[2] * min(h, w)
    cx, cy = art.crop[0] * w, art.crop[1] * h
    cx = min(max(cx, side / 2), w - side / 2)
    cy = min(max(cy, side / 2), h - side / 2)
    s = (2 * r_in) / side
    m = np.array([[s, 0, c - s * cx], [0, s, c - s * cy]], np.float32)
    pic = cv2.warpAffine(ph, m, (size, size), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REFLECT).astype(np.float32)
    inner = circle_mask(size, c, r_in)[..., None]
    img = img * (1 - inner) + pic * inner
    # name banner across the lower art
    banner = img.copy()
    y0, y1 = int(c + r_in * 0.42), int(c + r_in * 0.72)
    cv2.rectangle(banner, (0, y0), (size, y1), (25, 25, 30), -1)
    put_text_centered(banner, art.label.upper(), (c, (y0 + y1) / 2), (y1 - y0) * 0.62, (235, 240, 240),
                       max_width=r_in * 1.5)
    img = img * (1 - inner) + (img * 0.2 + banner * 0.8) * inner
    lw = max(1, int(round(0.5 * ppm)))
    cv2.circle(img, (int(c), int(c)), int(round(r_in)), (20, 20, 20), lw, cv2.LINE_AA)
    cv2.circle(img, (int(c), int(c)), int(round(R - lw / 2)), (25, 25, 25), lw, cv2.LINE_AA)
    # stat badges on the ring: attack, counter, toughness, move
    br = R * 0.115 + 2.0 * ppm * 0.35
    badge_col = [(40, 40, 190), (180, 120, 40), (230, 235, 240), (60, 160, 60)]
    for k, (ang, val) in enumerate(zip((-130, -50, 50, 130), art.stats)):
        a = math.radians(ang - 90)
        bx, by = c + 0.89 * R * math.cos(a), c + 0.89 * R * math.sin(a)
        cv2.circle(img, (int(bx), int(by)), int(br), badge_col[k], -1, cv2.LINE_AA)
        cv2.circle(img, (int(bx), int(by)), int(br), (20, 20, 20), max(1, lw // 2), cv2.LINE_AA)
        put_text_centered(img, str(val), (bx, by), br * 1.15, (15, 15, 15) if k == 2 else (245, 245, 245))
    # printed cardboard: a faint sheen across the face and a slightly darker cut edge
    sheen = 1.0 + 0.05 * ((xx - c) * 0.6 - (yy - c) * 0.8) / R
    edge = 1.0 - 0.25 * np.clip((d - (R - 1.2 * ppm)) / (1.2 * ppm), 0, 1)
    img = img * (sheen * edge)[..., None]
    return rgba(img, circle_mask(size, c, R))


@lru_cache(maxsize=64)
def disk_edge(radius_mm: float) -> np.ndarray:
    """The cut cardboard side of a disk, seen as its silhouette at the disk's underside."""
    R = radius_mm * DISK_PPM
    size = int(math.ceil(2 * R)) + 4
    img = np.full((size, size, 3), 48.0, np.float32)
    return rgba(img, circle_mask(size, size / 2.0, R))


TOKEN_COLOURS = {"damage": (40, 40, 185), "wound": (35, 30, 95), "activation": (40, 185, 225),
                 "power": (175, 95, 35)}


@lru_cache(maxsize=64)
def token_face(kind: str, shape: str, size_mm: float) -> np.ndarray:
    ppm = DISK_PPM
    S = int(math.ceil(size_mm * ppm)) + 4
    c = S / 2.0
    col = TOKEN_COLOURS[kind]
    img = np.empty((S, S, 3), np.float32)
    img[:] = col
    if shape == "round":
        alpha = circle_mask(S, c, size_mm * ppm / 2)
    else:
        alpha = np.zeros((S, S), np.float32)
        a = size_mm * ppm / 2
        cv2.rectangle(alpha, (int(c - a), int(c - a)), (int(c + a), int(c + a)), 1.0, -1)
    light = (230, 235, 240)
    if kind == "damage":
        cv2.circle(img, (int(c), int(c + S * 0.08)), int(S * 0.2), light, -1, cv2.LINE_AA)
        pts = np.array([[c, c - S * 0.3], [c - S * 0.17, c], [c + S * 0.17, c]], np.int32)
        cv2.fillPoly(img, [pts], light, cv2.LINE_AA)
    elif kind == "wound":
        put_text_centered(img, "X", (c, c), S * 0.5, light)
    elif kind == "activation":
        cv2.circle(img, (int(c), int(c)), int(S * 0.28), (30, 60, 80), max(1, int(S * 0.06)), cv2.LINE_AA)
    else:
        put_text_centered(img, "1", (c, c), S * 0.5, light)
    return rgba(img, alpha)


@lru_cache(maxsize=8)
def felt_tile(variant: int, size: int = 512) -> np.ndarray:
    """Felt brightness (mean 1): fine fibres plus soft mottling; tiles seamlessly (periodic noise)."""
    rng = np.random.default_rng(1000 + variant)
    out = np.zeros((size, size), np.float32)
    for scale, amp in ((1, 0.05), (2, 0.05), (6, 0.035), (24, 0.03), (96, 0.025)):
        n = rng.standard_normal((size, size)).astype(np.float32)
        if scale > 1:
            k = np.fft.fftfreq(size)
            ff = np.exp(-(k[:, None] ** 2 + k[None, :] ** 2) * (scale * 2.5) ** 2)
            n = np.real(np.fft.ifft2(np.fft.fft2(n) * ff)).astype(np.float32)
            n /= n.std() + 1e-9
        out += amp * n
    # short fibres: random tiny bright/dark streaks
    fib = np.zeros((size, size), np.float32)
    for _ in range(size * 3):
        x, y = rng.integers(0, size, 2)
        a = rng.uniform(0, math.pi)
        L = rng.uniform(2, 6)
        cv2.line(fib, (int(x), int(y)), (int(x + L * math.cos(a)), int(y + L * math.sin(a))),
                 float(rng.choice([-1.0, 1.0])), 1, cv2.LINE_AA)
    out += 0.04 * fib
    return 1.0 + out


@lru_cache(maxsize=4)
def wood_tile(size: int = 1024) -> np.ndarray:
    """Table-top wood brightness (mean 1), periodic: planks along x with seams, wavy grain, knots."""
    rng = np.random.default_rng(77)
    k = np.fft.fftfreq(size)

    def smooth(sx: float, sy: float) -> np.ndarray:
        n = np.real(np.fft.ifft2(np.fft.fft2(rng.standard_normal((size, size))) *
                                 np.exp(-(k[None, :] * sx) ** 2 - (k[:, None] * sy) ** 2)))
        return n / (n.std() + 1e-9)

    yy = np.arange(size, dtype=np.float64)[:, None] + 2.5 * smooth(600, 600)
    plank_h = size / 4.0  # four planks per tile (the tile spans ~680 mm at 1.5 px/mm)
    plank = np.floor(yy / plank_h)
    within = yy - plank * plank_h
    tone = 1.0 + 0.07 * np.sin(plank * 2.3 + 0.7)  # each plank a slightly different shade
    grain = np.sin(within / plank_h * 2 * np.pi * (5 + 3 * np.sin(plank)) + 3.0 * smooth(300, 25))
    streaks = smooth(200, 2)  # long thin fibres along the plank
    seam = 1.0 - 0.45 * np.exp(-((within - 0.5) / 1.6) ** 2) - 0.45 * np.exp(-((within - plank_h + 0.5) / 1.6) ** 2)
    out = tone * (1.0 + 0.07 * grain + 0.05 * streaks) * seam + 0.015 * rng.standard_normal((size, size))
    return out.astype(np.float32)


@lru_cache(maxsize=2)
def cloth_tile(size: int = 512) -> np.ndarray:
    """A woven table cloth's brightness (mean 1), periodic: fine weave plus soft unevenness."""
    rng = np.random.default_rng(4242)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    weave = 0.025 * np.sin(xx * 2 * np.pi / 4.0) * np.sin(yy * 2 * np.pi / 4.0)
    k = np.fft.fftfreq(size)
    soft = np.real(np.fft.ifft2(np.fft.fft2(rng.standard_normal((size, size))) *
                                np.exp(-(k[:, None] ** 2 + k[None, :] ** 2) * 900)))
    soft /= soft.std() + 1e-9
    return (1.0 + weave + 0.03 * soft + 0.02 * rng.standard_normal((size, size))).astype(np.float32)


@lru_cache(maxsize=8)
def marker_tile(marker_id: int, marker_mm: float, tile_mm: float, dictionary: str) -> np.ndarray:
    """A paper tile with its ArUco marker, upright: texture axes = table axes, origin = tile corner."""
    ppm = 6.0
    S = int(round(tile_mm * ppm))
    d = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, dictionary))
    side = int(round(marker_mm * ppm))
    mk = cv2.aruco.generateImageMarker(d, marker_id, side)
    paper = np.full((S, S), 236.0, np.float32)
    off = int(round((tile_mm - marker_mm) / 2 * ppm))
    paper[off:off + side, off:off + side] = np.where(mk > 127, 236.0, 28.0)
    img = np.stack([paper * 0.97, paper * 0.99, paper], axis=-1)
    put_text_centered(img, f"tablesight {marker_id}", (S / 2, off / 2), off * 0.35, (120, 120, 120))
    return rgba(img, np.ones((S, S), np.float32))


@lru_cache(maxsize=8)
def ruler_texture(length_mm: float, width_mm: float, bands: tuple[float, ...], dictionary: str,
                  tags: tuple[tuple[int, float, float, float], ...]) -> np.ndarray:
    """The range ruler in its own frame (u along, v across): coloured band sections, mm ticks, and the ArUco
    `tags` given as (id, u0, v0, side) in ruler mm, exactly where the marker layout puts them."""
    ppm = 6.0
    W, H = int(round(length_mm * ppm)), int(round(width_mm * ppm))
    img = np.zeros((H, W, 3), np.float32)
    cols = [(90, 200, 110), (70, 200, 230), (70, 90, 215), (200, 200, 200)]
    edges = [0.0, *bands]
    for k in range(len(edges) - 1):
        img[:, int(edges[k] * ppm):int(edges[k + 1] * ppm)] = cols[k % len(cols)]
    for mm in range(0, int(length_mm) + 1, 10):
        x = int(mm * ppm)
        L = 0.3 if mm % 50 else 0.45
        cv2.line(img, (x, H - 1), (x, int(H * (1 - L))), (30, 30, 30), 2, cv2.LINE_AA)
    for b in bands[:-1]:
        cv2.line(img, (int(b * ppm), 0), (int(b * ppm), H), (20, 20, 20), 4)
    for k, b in enumerate(bands):
        put_text_centered(img, ("SHORT", "MEDIUM", "LONG", "")[min(k, 3)],
                           (((edges[k] + b) / 2) * ppm, H * 0.32), H * 0.26, (25, 25, 25))
    d = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, dictionary))
    for tag_id, u0, v0, side_mm in tags:
        side = int(round(side_mm * ppm))
        x0, y0 = int(round(u0 * ppm)), int(round(v0 * ppm))
        q = int(round(max(min(v0, width_mm - v0 - side_mm) - 0.5, 0.0) * ppm))  # white quiet zone
        cv2.rectangle(img, (x0 - q, y0 - q), (x0 + side + q, y0 + side + q), (236, 240, 240), -1)
        mk = cv2.aruco.generateImageMarker(d, tag_id, side)
        img[y0:y0 + side, x0:x0 + side] = np.where(mk > 127, 236.0, 28.0)[..., None]
    return rgba(img, np.ones((H, W), np.float32))


@lru_cache(maxsize=64)
def terrain_card(piece: TerrainPiece) -> tuple[np.ndarray, tuple[float, float]]:
    """The printed cardboard terrain piece; returns the texture and the table mm of its pixel (0, 0)."""
    ppm = FLAT_PPM
    pts = np.array(piece.polygon_mm, np.float64)
    x0, y0 = pts.min(axis=0) - 2
    x1, y1 = pts.max(axis=0) + 2
    W, H = int(math.ceil((x1 - x0) * ppm)), int(math.ceil((y1 - y0) * ppm))
    ph = photo(piece.art).astype(np.float32)
    grey = ph.mean(axis=2, keepdims=True) / 128.0
    tex = cv2.resize(grey, (max(W, 8), max(H, 8)), interpolation=cv2.INTER_LINEAR)[:H, :W]
    if tex.ndim == 2:
        tex = tex[..., None]
    img = np.clip(tex * np.array(piece.tint_bgr, np.float32)[None, None, :], 0, 255).astype(np.float32)
    rng = np.random.default_rng(abs(hash(piece.polygon_mm)) % (2 ** 32))
    poly_px = ((pts - [x0, y0]) * ppm).astype(np.int32)
    if piece.name == "forest":
        for _ in range(int(W * H / (ppm * ppm * 900)) + 4):
            cx, cy = rng.uniform(0, W), rng.uniform(0, H)
            r = rng.uniform(10, 22) * ppm
            cv2.circle(img, (int(cx), int(cy)), int(r), (30, 80 + rng.uniform(0, 30), 35), -1, cv2.LINE_AA)
            cv2.circle(img, (int(cx - r * 0.25), int(cy - r * 0.25)), int(r * 0.55), (50, 120, 60), -1, cv2.LINE_AA)
    elif piece.name == "marsh":
        for _ in range(6):
            cx, cy = rng.uniform(0, W), rng.uniform(0, H)
            cv2.ellipse(img, (int(cx), int(cy)), (int(rng.uniform(8, 25) * ppm), int(rng.uniform(5, 12) * ppm)),
                        rng.uniform(0, 180), 0, 360, (140, 110, 60), -1, cv2.LINE_AA)
    elif piece.name in ("ruins", "wall"):
        for _ in range(5):
            a = rng.uniform(0, W), rng.uniform(0, H)
            cv2.line(img, (int(a[0]), int(a[1])), (int(a[0] + rng.uniform(-60, 60) * ppm), int(a[1])),
                     (90, 95, 100), int(4 * ppm))
    alpha = np.zeros((H, W), np.float32)
    cv2.fillPoly(alpha, [poly_px], 1.0, cv2.LINE_AA)
    cv2.polylines(img, [poly_px], True, (30, 35, 40), max(1, int(2.5 * ppm)), cv2.LINE_AA)
    return rgba(img, alpha), (float(x0), float(y0))


def hand_texture(hand: HandPiece, ppm: float = 1.0) -> tuple[np.ndarray, tuple[float, float]]:
    """A hand and arm seen from above; returns the texture and the table mm of its pixel (0, 0).

    The arm tapers from the shoulder side (nearer the camera, so wider) to the wrist, with cloth folds on the
    sleeve and a bare wrist; the hand is a palm, four fingers and a thumb, slightly closed when pinching."""
    e, t = np.asarray(hand.entry_mm, float), np.asarray(hand.tip_mm, float)
    d = t - e
    L = float(np.linalg.norm(d)) or 1.0
    ux, nx = d / L, np.array([-d[1], d[0]]) / L
    w = hand.width_mm
    outline = hand.outline_mm()
    x0, y0 = outline.min(axis=0) - w
    x1, y1 = outline.max(axis=0) + w
    W, H = int(math.ceil((x1 - x0) * ppm)), int(math.ceil((y1 - y0) * ppm))

    def px(p: np.ndarray) -> tuple[int, int]:
        return int((p[0] - x0) * ppm), int((p[1] - y0) * ppm)

    def segment(img: np.ndarray, p0: np.ndarray, p1: np.ndarray, w0: float, w1: float) -> None:
        poly = np.array([px(p0 + nx * w0 / 2), px(p1 + nx * w1 / 2), px(p1 - nx * w1 / 2), px(p0 - nx * w0 / 2)],
                        np.int32)
        cv2.fillPoly(img, [poly], 1.0, cv2.LINE_AA)

    alpha = np.zeros((H, W), np.float32)
    skin = np.zeros((H, W), np.float32)  # 1 where skin, 0 where sleeve
    wrist = t - ux * w * 1.25
    palm_c = t - ux * w * 0.72
    cuff = wrist - ux * w * 0.9
    segment(alpha, e, cuff, w * 1.45, w * 0.95)
    segment(alpha, cuff, wrist + ux * 5, w * 0.95, w * 0.72)
    segment(skin, cuff - ux * 4, wrist + ux * 5, w * 0.95, w * 0.72)
    ang = math.degrees(math.atan2(ux[1], ux[0]))
    for img in (alpha, skin):
        cv2.ellipse(img, px(palm_c), (int(w * 0.62 * ppm), int(w * 0.5 * ppm)), ang, 0, 360, 1.0, -1, cv2.LINE_AA)
    spread = 0.12 if hand.pinch else 0.22
    crease = np.zeros((H, W), np.float32)
    nails = np.zeros((H, W), np.float32)
    for off in (-1.5, -0.5, 0.5, 1.5):
        base = palm_c + ux * w * 0.38 + nx * off * w * 0.2
        tip = base + ux * w * (0.58 - 0.1 * abs(off)) * (0.72 if hand.pinch else 1.0) + nx * off * w * spread * 0.5
        for img in (alpha, skin):
            cv2.line(img, px(base), px(tip), 1.0, max(1, int(w * 0.19 * ppm)), cv2.LINE_AA)
        cv2.line(crease, px(base - ux * w * 0.05), px(tip), 1.0, max(1, int(w * 0.21 * ppm)), cv2.LINE_AA)
        cv2.line(crease, px(base - ux * w * 0.05), px(tip), 0.0, max(1, int(w * 0.15 * ppm)), cv2.LINE_AA)
        cv2.circle(nails, px(tip - ux * w * 0.03), max(1, int(w * 0.055 * ppm)), 1.0, -1, cv2.LINE_AA)
    thumb0 = palm_c + nx * w * 0.38 - ux * w * 0.1
    thumb1 = thumb0 + ux * w * 0.42 + nx * w * (0.12 if hand.pinch else 0.3)
    for img in (alpha, skin):
        cv2.line(img, px(thumb0), px(thumb1), 1.0, max(1, int(w * 0.23 * ppm)), cv2.LINE_AA)
    skin = np.minimum(skin, alpha)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    rel_x, rel_y = xx / ppm + x0 - e[0], yy / ppm + y0 - e[1]
    along = rel_x * ux[0] + rel_y * ux[1]
    across = (rel_x * nx[0] + rel_y * nx[1]) / (w * 0.6)
    # rounded limb: lit along its crest, darker toward its sides; folds in the sleeve
    shade = np.clip(1.05 - 0.3 * across ** 2, 0.5, 1.1)
    folds = 1.0 + 0.05 * np.sin(along / 23.0 + 1.7 * np.sin(along / 61.0)) * np.clip(1 - np.abs(across) * 0.6, 0, 1)
    rng = np.random.default_rng(int(abs(hand.tip_mm[0] * 7 + hand.tip_mm[1] * 13)) % (2 ** 32))
    mottle = cv2.GaussianBlur(rng.standard_normal((H, W)).astype(np.float32), (0, 0), 9.0 * ppm + 0.5)
    mottle *= 0.025 / (mottle.std() + 1e-9)
    weave = 0.03 * rng.standard_normal((H, W)).astype(np.float32)
    sleeve = np.array(hand.sleeve_bgr, np.float32) * (folds + weave)[..., None]
    knuckles = np.exp(-((along - (L - w * 0.72 + w * 0.3)) / (w * 0.06)) ** 2) * skin  # a darker line across
    skin_col = np.array(hand.skin_bgr, np.float32) * (1.0 + mottle - 0.08 * knuckles)[..., None]
    skin_col = skin_col * (1 - 0.35 * nails[..., None]) + np.array((200, 205, 235), np.float32) * 0.35 * nails[
        ..., None]
    col = skin[..., None] * skin_col + (1 - skin[..., None]) * sleeve
    col = col * (shade * (1.0 - 0.25 * crease))[..., None]
    alpha = cv2.GaussianBlur(alpha, (0, 0), 1.0 * ppm)
    return rgba(col, alpha), (float(x0), float(y0))
