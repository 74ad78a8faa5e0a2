"""Render what the webcam sees of a `TableSetup`, with per-frame ground truth.

Every piece is a flat printed texture lying in a horizontal plane at its height above the felt (markers, ruler and
terrain on the felt; each disk at its own top height, its cut edge at its underside; counters on disks; a hand
high above). A piece is drawn by mapping the pixels of its image box through the camera (pixel -> undistorted
ray -> plane at the piece's height -> texture pixel, one cv2.remap) and compositing bottom-up, each raised piece
first casting a soft shadow. The felt and the table around it come from periodic textures remapped the same way.
Light falloff, vignette, white balance, defocus/motion blur, sensor noise and JPEG follow, in image space.

Visible fractions: each disk's top is written into a label image as it is composited; what upper disks and hands
overwrite is hidden. `visible_fraction` = pixels still labelled with the disk / pixels of its whole top.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import cv2
import numpy as np

from calibration.layout import MarkerLayout, default_layout
from tablesight.scene import Scene
from vision.synth import art, world_art
from vision.synth.camera import SynthCamera
from vision.synth.scenes import BATTLEFIELD_MM, SynthDisk, TableSetup

HAND_LABEL = -2


@dataclass(frozen=True, eq=False)
class RenderedFrame:
    image: np.ndarray  # BGR uint8, exactly what `jpeg` decodes to
    jpeg: bytes
    scene: Scene  # ground truth (disks carry visible_fraction, top_height_mm, ...)
    markers_px: dict[int, np.ndarray]  # marker id -> 4x2 true corners in image px (OpenCV order)
    render_ms: float  # wall time
    render_cpu_ms: float = 0.0  # processor time of this process (all threads): the cost on a busy machine
    # Per image pixel, which disk's top face is seen there: the index of the disk in `setup.disks`, -1 for
    # anything else (felt, terrain, counters' surroundings), HAND_LABEL under a hand. The learned eye's labels.
    label: np.ndarray | None = None


def _affine(rot_deg: float, ppm: float, center_mm: tuple[float, float], tex_center: tuple[float, float],
            squash: float = 1.0, squash_axis_deg: float = 0.0) -> np.ndarray:
    """2x3 map from table mm to texture px for a piece turned by `rot_deg` about `center_mm`."""
    r = math.radians(rot_deg)
    rot = np.array([[math.cos(r), math.sin(r)], [-math.sin(r), math.cos(r)]])  # table -> piece frame
    m = rot
    if squash != 1.0:
        a = math.radians(squash_axis_deg)
        ra = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        m = rot @ ra @ np.diag([1.0 / max(squash, 1e-3), 1.0]) @ ra.T
    m = m * ppm
    off = np.asarray(tex_center) - m @ np.asarray(center_mm)
    return np.hstack([m, off[:, None]])


class _Canvas:
    """The frame being composed (float32 BGR) plus the label image of disk tops."""

    def __init__(self, camera: SynthCamera):
        self.camera = camera
        w, h = camera.image_size
        self.img = np.zeros((h, w, 3), np.float32)
        self.label = np.full((h, w), -1, np.int16)

    def sample(self, tex: np.ndarray, a: np.ndarray, outline_mm: np.ndarray, height_mm: float, pad: int = 3
               ) -> tuple[tuple[int, int, int, int], np.ndarray] | None:
        roi = self.camera.roi_of(outline_mm, height_mm, pad=pad)
        if roi is None:
            return None
        X, Y = self.camera.plane_coords(height_mm, roi)
        mx = (a[0, 0] * X + a[0, 1] * Y + a[0, 2]).astype(np.float32)
        my = (a[1, 0] * X + a[1, 1] * Y + a[1, 2]).astype(np.float32)
        patch = cv2.remap(tex, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0, 0))
        return roi, patch

    def shadow(self, roi: tuple[int, int, int, int], alpha: np.ndarray, shift_px: tuple[float, float],
               sigma_px: float, strength: float) -> None:
        x0, y0, x1, y1 = roi
        m = np.float32([[1, 0, shift_px[0]], [0, 1, shift_px[1]]])
        sh = cv2.warpAffine(alpha, m, (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR, borderValue=0)
        sh = cv2.GaussianBlur(sh, (0, 0), max(sigma_px, 0.5))
        self.img[y0:y1, x0:x1] *= (1.0 - strength * sh)[..., None]

    def composite(self, roi: tuple[int, int, int, int], patch: np.ndarray, label: int | None = None) -> np.ndarray:
        x0, y0, x1, y1 = roi
        a = patch[..., 3]
        view = self.img[y0:y1, x0:x1]
        view *= (1.0 - a)[..., None]
        view += patch[..., :3]
        if label is not None:
            self.label[y0:y1, x0:x1][a > 0.5] = label
        return a


def _ground(camera: SynthCamera, look) -> np.ndarray:
    """Felt mat over the battlefield (soft edge, small shadow) on a wooden or cloth table top. Cached per camera
    and materials (the same table under the same camera is the same picture)."""
    key = ("ground", look.felt_bgr, look.felt_variant, look.mat_margin_mm, look.surround_bgr, look.surround_kind,
           look.mat)
    cached = camera._cache.get("ground_img")
    if cached is not None and cached[0] == key:
        return cached[1]
    X, Y = camera.plane_coords(0.0)
    felt = cv2.remap(art.felt_tile(look.felt_variant), X * 2.0, Y * 2.0, cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_WRAP)
    # large, non-repeating mottling of the cloth and a few soft creases where the mat was folded
    rng = np.random.default_rng([look.felt_variant, int(look.felt_bgr[0]), int(look.felt_bgr[1]), 0xFE17])
    coarse = cv2.GaussianBlur(rng.standard_normal((72, 72)).astype(np.float32), (0, 0), 1.6)
    coarse /= coarse.std() + 1e-9
    felt = felt * (1.0 + 0.045 * cv2.remap(coarse, (X + 600.0) / 30.0, (Y + 600.0) / 30.0, cv2.INTER_CUBIC,
                                           borderMode=cv2.BORDER_REFLECT))
    for _ in range(int(rng.integers(1, 4))):
        a = rng.uniform(0, math.pi)
        nx, ny = -math.sin(a), math.cos(a)
        off = rng.uniform(150, 750) * nx + rng.uniform(150, 750) * ny
        across = X * nx + Y * ny - off
        along = X * math.cos(a) + Y * math.sin(a)
        mid, half = rng.uniform(200, 700), rng.uniform(150, 450)
        env = np.exp(-((along - mid) / half) ** 2) * np.exp(-(across / 14.0) ** 2)
        felt = felt * (1.0 + rng.uniform(0.04, 0.08) * env * np.tanh(across / 6.0))
    felt_col = np.array(look.felt_bgr, np.float32)
    if look.mat is not None:
        # a randomized world's mat: its own colours, with the same mottling and creases
        p = 1024 / (8.0 * look.mat.scale)
        mat = cv2.remap(world_art.mat_tile(look.mat), X * p, Y * p, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
        felt_img = mat * (felt / art.felt_tile(look.felt_variant).mean())[..., None]
    else:
        felt_img = felt[..., None] * felt_col
    m = look.mat_margin_mm
    # signed distance into the mat: a rectangle with slightly rounded corners
    rc = 6.0
    half = BATTLEFIELD_MM / 2.0 + m - rc
    qx, qy = np.abs(X - BATTLEFIELD_MM / 2.0) - half, np.abs(Y - BATTLEFIELD_MM / 2.0) - half
    inside = -(np.hypot(np.maximum(qx, 0), np.maximum(qy, 0)) + np.minimum(np.maximum(qx, qy), 0) - rc)
    if inside.min() > 2.0:  # the felt covers the whole view
        img = felt_img
    else:
        if look.surround_kind == "wood":
            sur = cv2.remap(art.wood_tile(), X * 1.5 + 37.0, Y * 1.5 + 11.0, cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_WRAP)
        else:
            sur = cv2.remap(art.cloth_tile(), X * 2.0, Y * 2.0, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
        mm_per_px = camera.mm_per_px_at((450.0, 450.0))
        a = np.clip(inside / mm_per_px + 0.5, 0.0, 1.0)
        edge_shadow = 1.0 - 0.35 * np.exp(-np.clip(-inside, 0, None) / 2.5) * (1 - a)
        bound = 1.0 - 0.07 * np.exp(-((inside - 2.5) / 1.5) ** 2)  # the mat's bound edge
        felt_in = ((felt * bound) * a)[..., None] * felt_col if look.mat is None else felt_img * (bound * a)[..., None]
        img = felt_in + ((sur * edge_shadow) * (1 - a))[..., None] * np.array(look.surround_bgr, np.float32)
    img = img.astype(np.float32)
    img.setflags(write=False)
    camera._cache["ground_img"] = (key, img)
    return img


def _light_field(camera: SynthCamera, look) -> np.ndarray:
    """Brightness x white balance per pixel (light falloff across the table, a lamp hotspot, lens vignette)."""
    key = (look.light_dir_deg, look.light_gradient, look.vignette, look.white_balance)
    cached = camera._cache.get("light")
    if cached is not None and cached[0] == key:
        return cached[1]
    w, h = camera.image_size
    X, Y = camera.plane_coords(0.0)
    X, Y = X[::8, ::8], Y[::8, ::8]
    a = math.radians(look.light_dir_deg)
    grad = ((X - 450.0) * math.cos(a) + (Y - 450.0) * math.sin(a)) / 640.0  # -1 .. 1 across the table
    light = 1.0 - look.light_gradient * 0.5 * (1.0 + np.clip(grad, -1.6, 1.6))
    hx, hy = 450.0 - 250.0 * math.cos(a), 450.0 - 250.0 * math.sin(a)
    light = light * (1.0 + 0.08 * np.exp(-((X - hx) ** 2 + (Y - hy) ** 2) / (2 * 380.0 ** 2)))
    light = cv2.resize(light.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
    yy, xx = np.ogrid[0:h, 0:w]
    r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (w / 2)) ** 2
    light = light * (1.0 - look.vignette * r2 / 1.28)
    field = (light[..., None] * np.array(look.white_balance, np.float32)).astype(np.float32)
    field.setflags(write=False)
    camera._cache["light"] = (key, field)
    return field


def _light_dir_px(camera: SynthCamera, look_deg: float) -> np.ndarray:
    """Image direction in which shadows fall (away from the light), unit length."""
    a = math.radians(look_deg)
    p = camera.project(np.array([[450.0, 450.0], [450.0 + 10 * math.cos(a), 450.0 + 10 * math.sin(a)]]))
    v = p[1] - p[0]
    return v / (np.linalg.norm(v) + 1e-9)


def _flat_piece(canvas: _Canvas, tex: np.ndarray, a: np.ndarray, outline: np.ndarray, shadow_dir: np.ndarray,
                height_mm: float = 0.0, shadow: float = 0.25) -> None:
    got = canvas.sample(tex, a, outline, height_mm, pad=4)
    if got is None:
        return
    roi, patch = got
    if shadow > 0:
        canvas.shadow(roi, patch[..., 3], tuple(shadow_dir * 0.8), 1.0, shadow)
    canvas.composite(roi, patch)


def _disk_sprite(canvas: _Canvas, d: SynthDisk, ring: tuple[int, int, int], shadow_dir: np.ndarray,
                 thickness: float, index: int) -> int:
    """Composite one disk (edge, shadow, face); returns the pixel count of its whole top (visibility's base)."""
    top = d.top_height_mm + d.lift_mm
    base = top - thickness
    face = art.disk_face(d.art, d.radius_mm, ring) if d.art.style is None else \
        world_art.styled_face(d.art.style, d.radius_mm)
    S = face.shape[0]
    a = _affine(d.rotation_deg, art.DISK_PPM, d.center, (S / 2.0, S / 2.0), d.tilt_squash, d.squash_axis_deg)
    r = d.radius_mm + 1.0
    outline = np.array([[d.x_mm - r, d.y_mm - r], [d.x_mm + r, d.y_mm - r], [d.x_mm + r, d.y_mm + r],
                        [d.x_mm - r, d.y_mm + r]])
    lift_above_support = max(d.lift_mm, 0.0) + (thickness if thickness > 0 else 0.8)
    pad = int(6 + lift_above_support * 0.6)
    edge = art.disk_edge(d.radius_mm)
    got = canvas.sample(edge, a, outline, max(base, 0.0), pad=pad)
    if got is not None:
        roi, patch = got
        shift = shadow_dir * (1.0 + 0.45 * lift_above_support)
        canvas.shadow(roi, patch[..., 3], tuple(shift), 1.2 + 0.25 * lift_above_support,
                      0.55 if d.lift_mm < 5 else 0.35)
        if thickness > 0:
            canvas.composite(roi, patch)
    got = canvas.sample(face, a, outline, top, pad=pad)
    if got is None:
        return 0
    roi, patch = got
    alpha = canvas.composite(roi, patch, label=index)
    return int(np.count_nonzero(alpha > 0.5))


def _post(img: np.ndarray, camera: SynthCamera, setup: TableSetup, rng: np.random.Generator) -> np.ndarray:
    """Light, then the camera: defocus, motion blur, firmware sharpening, sensor noise (8-bit from here on)."""
    look = setup.look
    h, w = img.shape[:2]
    img *= _light_field(camera, look)
    img8 = cv2.convertScaleAbs(img, alpha=look.exposure)  # saturating float -> uint8 (values are >= 0)
    if look.defocus_sigma_px > 0.05:
        img8 = cv2.GaussianBlur(img8, (0, 0), look.defocus_sigma_px)
    if look.motion_blur_px >= 1.0:
        L = int(math.ceil(look.motion_blur_px)) | 1
        k = np.zeros((L, L), np.float32)
        c = L // 2
        ang = math.radians(look.motion_blur_deg)
        dx, dy = math.cos(ang) * look.motion_blur_px / 2, math.sin(ang) * look.motion_blur_px / 2
        cv2.line(k, (int(round(c - dx)), int(round(c - dy))), (int(round(c + dx)), int(round(c + dy))), 1.0, 1,
                 cv2.LINE_AA)
        img8 = cv2.filter2D(img8, -1, k / k.sum())
    if look.lateral_ca_px > 0.05:  # lateral chromatic aberration: red a touch larger than green, blue smaller
        cx, cy = camera.camera_matrix[0, 2], camera.camera_matrix[1, 2]
        eps = look.lateral_ca_px / math.hypot(w / 2, h / 2)
        b, g, r = cv2.split(img8)
        for ch, scale in ((0, 1.0 - eps), (2, 1.0 + eps)):
            m = np.float32([[scale, 0, cx * (1 - scale)], [0, scale, cy * (1 - scale)]])
            src = b if ch == 0 else r
            warped = cv2.warpAffine(src, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
            if ch == 0:
                b = warped
            else:
                r = warped
        img8 = cv2.merge([b, g, r])
    # webcams sharpen in firmware: a mild unsharp mask (halos along strong edges)
    img8 = cv2.addWeighted(img8, 1.35, cv2.GaussianBlur(img8, (0, 0), 1.6), -0.35, 0.0)
    # sensor noise: luminance noise growing with brightness (shot noise) plus coarser chroma noise
    grey = cv2.cvtColor(img8, cv2.COLOR_BGR2GRAY)
    gain = (np.sqrt(np.arange(256, dtype=np.float32) / 160.0 + 0.35) * look.noise_sigma).astype(np.float32)
    lum = rng.standard_normal((h, w), dtype=np.float32) * gain[grey]
    chroma = rng.standard_normal((h // 2 + 1, w // 2 + 1, 3), dtype=np.float32) * np.float32(look.noise_sigma * 0.45)
    chroma = cv2.resize(chroma, (w, h), interpolation=cv2.INTER_LINEAR)[:h, :w]
    noise = cv2.add(chroma, cv2.merge([lum, lum, lum]))
    out = cv2.add(img8.astype(np.int16), np.rint(noise).astype(np.int16))
    out = np.clip(out, 0, 255).astype(np.uint8)
    return cv2.LUT(out, _TONE_CURVE)


def _tone_curve() -> np.ndarray:
    """The webcam's tone mapping: a gentle S-curve (deeper shadows, brighter paper), as 8-bit lookup table."""
    x = np.arange(256, dtype=np.float64) / 255.0
    y = x + 0.12 * np.sin(2 * np.pi * x) * (0.5 - np.abs(x - 0.5)) * -1.0 + 0.05 * (x ** 0.8 - x)
    y = np.clip(y, 0.0, 1.0)
    return np.round(y * 255).astype(np.uint8)


_TONE_CURVE = _tone_curve()


def _ruler_markers(layout: MarkerLayout, setup: TableSetup):
    return layout.ruler_tags + (layout.ruler_band_tags if setup.ruler.band_tags else ())


def render_frame(setup: TableSetup, camera: SynthCamera, layout: MarkerLayout | None = None,
                 extra_truth: dict | None = None) -> RenderedFrame:
    """Render one frame of `setup` seen by `camera`; deterministic for the same arguments."""
    t0, c0 = time.perf_counter(), time.process_time()
    layout = layout or default_layout(BATTLEFIELD_MM, BATTLEFIELD_MM)
    rng = np.random.default_rng([setup.seed, setup.frame, 0xF4A3E])
    canvas = _Canvas(camera)
    canvas.img[:] = _ground(camera, setup.look)
    sdir = _light_dir_px(camera, setup.look.light_dir_deg)

    # Printed flat things on the felt: terrain, marker tiles, the ruler.
    for piece in setup.terrain:
        tex, (x0, y0) = art.terrain_card(piece)
        a = np.array([[art.FLAT_PPM, 0, -x0 * art.FLAT_PPM], [0, art.FLAT_PPM, -y0 * art.FLAT_PPM]])
        _flat_piece(canvas, tex, a, np.array(piece.polygon_mm), sdir, shadow=0.3)
    m = (layout.tile_mm - layout.marker_mm) / 2.0
    for mk in layout.corners:
        tex = art.marker_tile(mk.id, layout.marker_mm, layout.tile_mm, layout.dictionary)
        tx, ty = mk.corners_mm[0][0] - m, mk.corners_mm[0][1] - m
        ppm = tex.shape[0] / layout.tile_mm
        a = np.array([[ppm, 0, -tx * ppm], [0, ppm, -ty * ppm]])
        t = layout.tile_mm
        _flat_piece(canvas, tex, a, np.array([[tx, ty], [tx + t, ty], [tx + t, ty + t], [tx, ty + t]]), sdir,
                    shadow=0.15)
    tags = tuple((m.id, m.corners_mm[0][0], m.corners_mm[0][1], m.side_mm) for m in _ruler_markers(layout, setup))
    rt = art.ruler_texture(layout.ruler_length_mm, layout.ruler_width_mm, tuple(layout.ruler_band_limits_mm),
                           layout.dictionary, tags)
    ppm = rt.shape[1] / layout.ruler_length_mm
    ra = math.radians(setup.ruler.angle_deg)
    rot = np.array([[math.cos(ra), math.sin(ra)], [-math.sin(ra), math.cos(ra)]]) * ppm  # table -> (u, v) px
    a = np.hstack([rot, (-rot @ np.asarray(setup.ruler.origin_mm))[:, None]])
    L, Wd = layout.ruler_length_mm, layout.ruler_width_mm
    _flat_piece(canvas, rt, a, setup.ruler.to_table(np.array([[0, 0], [L, 0], [L, Wd], [0, Wd]])), sdir,
                shadow=0.35)

    # Disks and counters, bottom-up.
    ring = {a.id: a.colour_bgr for a in setup.armies}
    items: list[tuple[tuple, str, object]] = []
    for d in setup.disks:
        items.append(((d.top_height_mm + d.lift_mm, d.z, 0), "disk", d))
    zmap = {d.id: d.z for d in setup.disks}
    for tk in setup.tokens:
        items.append(((tk.top_height_mm, zmap.get(tk.on_disk, 0), 1), "token", tk))
    items.sort(key=lambda it: it[0])
    index = {d.id: i for i, d in enumerate(setup.disks)}
    own: dict[str, int] = {}
    for _, kind, obj in items:
        if kind == "disk":
            own[obj.id] = _disk_sprite(canvas, obj, ring[obj.player], sdir, setup.disk_thickness_mm,
                                          index[obj.id])
        else:
            tex = art.token_face(obj.kind, obj.shape, obj.size_mm)
            S = tex.shape[0]
            a = _affine(obj.rotation_deg, art.DISK_PPM, (obj.x_mm, obj.y_mm), (S / 2, S / 2))
            r = obj.size_mm * 0.75
            outline = np.array([[obj.x_mm - r, obj.y_mm - r], [obj.x_mm + r, obj.y_mm + r]])
            outline = np.array([outline[0], [outline[1][0], outline[0][1]], outline[1], [outline[0][0], outline[1][1]]])
            _flat_piece(canvas, tex, a, outline, sdir, height_mm=obj.top_height_mm, shadow=0.45)

    # Hands above everything, with a large soft shadow.
    for hand in setup.hands:
        hp = 0.7  # px per mm: a hand over the table is out of focus anyway
        tex, (x0, y0) = art.hand_texture(hand, hp)
        a = np.array([[hp, 0, -x0 * hp], [0, hp, -y0 * hp]])
        w_mm, h_mm = tex.shape[1] / hp, tex.shape[0] / hp
        outline = np.array([[x0, y0], [x0 + w_mm, y0], [x0 + w_mm, y0 + h_mm], [x0, y0 + h_mm]])
        got = canvas.sample(tex, a, outline, hand.height_mm, pad=2)
        if got is not None:
            roi, patch = got
            canvas.shadow(roi, patch[..., 3], tuple(sdir * hand.height_mm * 0.45), 5 + hand.height_mm * 0.07, 0.6)
            canvas.composite(roi, patch, label=HAND_LABEL)

    visible = {}
    counts = np.bincount((canvas.label.ravel().astype(np.int32) + 2), minlength=len(setup.disks) + 2)
    for d in setup.disks:
        total = own.get(d.id, 0)
        visible[d.id] = min(1.0, counts[index[d.id] + 2] / total) if total > 0 else 0.0

    img = _post(canvas.img, camera, setup, rng)
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(setup.look.jpeg_quality)])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    jpeg = buf.tobytes()
    image = cv2.imdecode(buf, cv2.IMREAD_COLOR)

    markers_px = {mk.id: camera.project(np.array(mk.corners_mm)) for mk in layout.corners}
    for tag_id, corners in setup.ruler_tag_corners_mm(layout).items():
        markers_px[tag_id] = camera.project(corners)
    hidden = []
    hgt, wdt = canvas.label.shape
    for mid, c in markers_px.items():
        pts = np.vstack([c, c.mean(axis=0)])
        inside = np.all((pts >= 0) & (pts < [wdt, hgt]))
        if not inside or any(canvas.label[int(p[1]), int(p[0])] != -1 for p in pts):
            hidden.append(mid)
    truth = {"markers_px": {str(k): np.round(v, 3).tolist() for k, v in markers_px.items()},
             "markers_hidden": sorted(hidden), "image_size": list(camera.image_size)}
    if extra_truth:
        truth.update(extra_truth)
    scene = setup.scene(visible=visible, extra=truth)
    return RenderedFrame(image=image, jpeg=jpeg, scene=scene, markers_px=markers_px,
                         render_ms=(time.perf_counter() - t0) * 1000.0,
                         render_cpu_ms=(time.process_time() - c0) * 1000.0, label=canvas.label)
