"""`tablesight markers`, `tablesight calibrate-camera`, `tablesight calibrate`: the I/O shell around calibration."""

from __future__ import annotations

import argparse
from pathlib import Path

from calibration.layout import MarkerLayout, default_layout
from tablesight.errors import InputError
from tablesight.formats import dump_json


def _layout(args: argparse.Namespace) -> MarkerLayout:
    text = getattr(args, "battlefield_mm", None)
    if not text:
        return default_layout()
    try:
        parts = [float(v) for v in str(text).lower().split("x")]
    except ValueError:
        raise InputError(f"--battlefield-mm {text!r}: expected W or WxH in mm, e.g. 900 or 914x914") from None
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2 or min(parts) < 200 or max(parts) > 5000:
        raise InputError(f"--battlefield-mm {text!r}: expected W or WxH between 200 and 5000 mm")
    return default_layout(parts[0], parts[1])


def _writable(path: str, what: str) -> Path:
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} '{p}' is a directory")
    if not p.parent.exists():
        raise InputError(f"{what} '{p}': folder '{p.parent}' does not exist")
    return p


def _read_image(path: str):
    import cv2

    p = Path(path)
    if not p.is_file():
        raise InputError(f"image '{p}': no such file")
    img = cv2.imread(str(p), cv2.IMREAD_COLOR)
    if img is None:
        raise InputError(f"image '{p}': not a readable image")
    return img


def markers(args: argparse.Namespace) -> int:
    layout = _layout(args)
    if not args.json and not args.output:
        raise InputError("say what to make: --json (the layout) or -o FILE.pdf (printable sheets)")
    if args.json:
        print(dump_json(layout.to_json()))
    if args.output:
        from calibration.sheets import write_sheets

        out = _writable(args.output, "output")
        try:
            n = write_sheets(out, layout, args.paper)
        except OSError as exc:
            raise InputError(f"output '{out}': cannot write it ({exc.strerror or exc})") from None
        if not args.json:  # stdout carries the JSON alone when both are asked for
            print(f"wrote {out}: {n} pages ({args.paper}), corner markers "
                  f"{', '.join(str(m.id) for m in layout.corners)} and ruler tags "
                  f"{', '.join(str(m.id) for m in layout.ruler_markers)}. Print at 100% and check the 100 mm line.")
    return 0


def calibrate_camera(args: argparse.Namespace) -> int:
    import cv2

    from calibration.camera import BoardSpec, calibrate_camera_images, fov_deg

    board = BoardSpec.parse(args.board, args.square_mm)
    out = _writable(args.output, "output")
    images = []
    for path in args.images:
        img = cv2.imread(path, cv2.IMREAD_GRAYSCALE) if Path(path).is_file() else None
        images.append((path, img))
    result = calibrate_camera_images(images, board)
    result.intrinsics.save(out)
    intr = result.intrinsics
    fx, fy = fov_deg(intr)
    lines = [f"wrote {out}: {intr.image_size[0]}x{intr.image_size[1]}, RMS reprojection error "
             f"{intr.rms_px:.3f} px from {len(result.used)} image(s), field of view {fx:.0f} x {fy:.0f} deg, "
             f"board coverage {result.coverage:.0%} of the picture"]
    for r in result.rejected:
        lines.append(f"  rejected {r.name}: {r.reason}")
    for w in result.warnings:
        lines.append(f"  warning: {w}")
    print("\n".join(lines))
    return 0


def calibrate(args: argparse.Namespace) -> int:
    from calibration.camera import CameraIntrinsics
    from calibration.table import calibrate_table

    frame = _read_image(args.image)
    size = (frame.shape[1], frame.shape[0])
    intr = CameraIntrinsics.load(args.intrinsics, image_size=size) if args.intrinsics else None
    out = _writable(args.output, "output")
    px_per_mm = getattr(args, "px_per_mm", None) or 1.0
    if not 0.1 <= px_per_mm <= 10:
        raise InputError("--px-per-mm must be between 0.1 and 10")
    cal = calibrate_table(frame, intr, _layout(args), rectified_px_per_mm=px_per_mm)
    disks_image = getattr(args, "measure_disks", None)
    if disks_image:
        from calibration.disk_sizes import measure_disk_diameters

        sizes = measure_disk_diameters(_read_image(disks_image), cal)
        cal = cal.with_disk_diameters(sizes.diameters_mm)
    cal.save(out)
    print(summary(cal, out))
    return 0


def summary(cal, out: Path | str | None = None) -> str:
    """The calibration's quality, for people: residuals per marker, battlefield size, ruler check."""
    lines = []
    if out is not None:
        lines.append(f"wrote {out}")
    lens = ("WITHOUT lens intrinsics" if cal.intrinsics is None else
            "lens distortion estimated from the markers" if cal.intrinsics.source == "markers" else
            "with lens intrinsics")
    lines.append(f"table calibration for {cal.image_size[0]}x{cal.image_size[1]} frames, {lens}; corner markers "
                 f"used: {', '.join(map(str, cal.markers_used))}")
    for m in cal.markers_rejected:
        lines.append(f"  marker {m.marker_id} rejected: {m.reason}")
    for mid in sorted({r.marker_id for r in cal.residuals}):
        rs = [r.residual_mm for r in cal.residuals if r.marker_id == mid]
        lines.append(f"  marker {mid}: corner residuals {', '.join(f'{v:.2f}' for v in rs)} mm")
    lines.append(f"residual mean {cal.residual_mean_mm:.3f} mm, max {cal.residual_max_mm:.3f} mm")
    bw, bh = cal.battlefield_mm
    lines.append(f"battlefield in use: {bw:.1f} x {bh:.1f} mm (scale from the {cal.scale_source})")
    if cal.battlefield_from_markers_mm is not None:
        mw, mh = cal.battlefield_from_markers_mm
        lines.append(f"battlefield from the markers' printed size: {mw:.1f} x {mh:.1f} mm (a coarse check, a few mm)")
    if cal.ruler is None:
        lines.append("ruler: not seen (put the ruler with tags 4 and 5 on the table to check the scale)")
    else:
        r = cal.ruler
        lines.append(f"ruler: measures {r.measured_length_mm:.1f} mm of {r.nominal_length_mm:g} mm "
                     f"(scale error {r.scale_error_percent:+.2f}%)")
        if r.band_limits_mm is not None:
            lines.append("ruler band marks: " + ", ".join(f"{v:.1f}" for v in r.band_limits_mm) + " mm")
    if getattr(cal, "disk_diameters_mm", None):
        lines.append("disk diameters: --disk-diameters-mm " + ",".join(f"{v:.1f}" for v in cal.disk_diameters_mm))
    for w in cal.warnings:
        lines.append(f"warning: {w}")
    rw, rh = cal.rectified_size
    lines.append(f"rectified view: {rw}x{rh} px at {cal.rectified_px_per_mm:g} px/mm")
    return "\n".join(lines)
