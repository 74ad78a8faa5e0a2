"""True-to-scale printable marker sheets (PDF).

The sheets are first laid out as a plan of simple shapes in page millimetres (origin top-left, y down), then
drawn with reportlab. Markers are vector squares, never images, so nothing is resampled: a marker's printed
size is exactly its layout size when the printer prints at 100%. The plan is also what the tests rasterise
and decode, so the drawing is checked, not only the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from calibration.layout import MarkerLayout, MarkerPlacement

PAPER_MM = {"a4": (210.0, 297.0), "letter": (215.9, 279.4)}
MM_TO_PT = 72.0 / 25.4
CHECK_LINE_MM = 100.0


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float
    fill: float | None = 0.0  # grey level 0 (black) .. 1 (white); None: outline only
    stroke: float | None = None  # outline grey level
    line_mm: float = 0.2


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    grey: float = 0.0
    line_mm: float = 0.3
    dash: bool = False


@dataclass(frozen=True)
class Text:
    x: float
    y: float  # baseline
    text: str
    size_pt: float = 10.0
    bold: bool = False
    align: str = "left"  # left | center


@dataclass(frozen=True)
class MarkerShape:
    """An ArUco marker drawn as a black square with white cells: `side` mm, top-left at (x, y)."""

    marker_id: int
    x: float
    y: float
    side: float


@dataclass
class Page:
    title: str
    items: list = field(default_factory=list)


def marker_cells(dictionary: str, marker_id: int) -> np.ndarray:
    """(n x n) booleans, True = white, border included, row 0 at the top of the printed marker."""
    d = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, dictionary))
    n = d.markerSize + 2
    return cv2.aruco.generateImageMarker(d, marker_id, n) > 127


def _check_line(page: Page, x: float, y: float) -> None:
    page.items.append(Line(x, y, x + CHECK_LINE_MM, y, line_mm=0.4))
    for k in range(11):
        tick = 4.0 if k % 5 == 0 else 2.0
        page.items.append(Line(x + 10 * k, y - tick, x + 10 * k, y, line_mm=0.25))
    page.items.append(Text(x + CHECK_LINE_MM + 4, y, "100 mm check: this line must measure exactly 100 mm.", 8))
    page.items.append(Text(x + CHECK_LINE_MM + 4, y + 4, "If not, reprint at 100% / 'Actual size' (no 'Fit to page').",
                           8))


def _corner_name(role: str) -> str:
    return role.split(":", 1)[1].replace("-", " ").upper()


def _tile(page: Page, layout: MarkerLayout, m: MarkerPlacement, x: float, y: float) -> None:
    """A corner marker on its tile, tile's top-left at (x, y), with cut line, label and corner pointer."""
    t, s = layout.tile_mm, layout.marker_mm
    margin = (t - s) / 2
    page.items.append(Box(x, y, t, t, fill=None, stroke=0.6, line_mm=0.15))
    page.items.append(MarkerShape(m.id, x + margin, y + margin, s))
    # The tile's inner corner (touching the battlefield) is the one facing the table centre.
    role = m.role.split(":", 1)[1]
    cx = x + (t if "left" in role else 0.0)
    cy = y + (t if "top" in role else 0.0)
    dx = 1.0 if "left" in role else -1.0
    dy = 1.0 if "top" in role else -1.0
    for k in (1.0, 2.0):
        page.items.append(Line(cx + dx * 1.5 * k, cy, cx + dx * 6 * k, cy, line_mm=0.35))
        page.items.append(Line(cx, cy + dy * 1.5 * k, cx, cy + dy * 6 * k, line_mm=0.35))
    page.items.append(Text(x, y - 4, f"Marker {m.id}: {_corner_name(m.role)} corner", 12, bold=True))
    # The whole caption under the tile, so no sentence is split around the marker.
    for k, line in enumerate(_tile_caption(s, t)):
        page.items.append(Text(x, y + t + 5 + 4 * k, line, 7.5))


def _tile_caption(marker_mm: float, tile_mm: float) -> tuple[str, ...]:
    return (f"{marker_mm:g} mm marker on a {tile_mm:g} mm tile. Cut along the grey line.",
            "The corner with the double tick touches the battlefield corner; the tile lies outside the",
            "battlefield, printed side up, upright: this label's side towards the map's top.")


def _guide_page(layout: MarkerLayout, paper: tuple[float, float]) -> Page:
    pw, ph = paper
    page = Page("How to lay out the markers")
    x0 = 20.0
    page.items.append(Text(x0, 22, "tablesight markers: how to lay them out", 16, bold=True))
    lines = [
        "1. Print every page at 100% ('Actual size'). Check the 100 mm line below with a ruler.",
        f"2. Cut out the four corner tiles ({layout.tile_mm:g} mm). Put each one OUTSIDE its battlefield corner,",
        "   touching the corner only at its inner corner (the double tick), edges in line with the battlefield edges.",
        f"3. Stick ruler tags 4 and 5 on the {layout.ruler_length_mm:g} mm range ruler's ends (tags 6 and 7 on its"
        " band marks, optional).",
        "4. Run: tablesight calibrate FRAME.jpg --intrinsics camera.json -o table.json",
    ]
    for k, s in enumerate(lines):
        page.items.append(Text(x0, 32 + 5 * k, s, 8.5))
    _check_line(page, x0, 64.0)
    # The map: battlefield scaled down with the tiles at its corners.
    scale = 50.0 / max(layout.width_mm, layout.height_mm)
    mx, my = x0 + layout.tile_mm * scale + 10, 82.0
    bw, bh = layout.width_mm * scale, layout.height_mm * scale
    page.items.append(Box(mx, my, bw, bh, fill=0.85, stroke=0.0, line_mm=0.3))
    page.items.append(Text(mx + bw / 2, my + bh / 2, f"battlefield {layout.width_mm:g} x {layout.height_mm:g} mm", 7,
                           align="center"))
    page.items.append(Text(mx + bw / 2, my - 7, "top edge of the map", 7, align="center"))
    for m in layout.corners:
        (ax, ay) = m.corners_mm[0]
        t = layout.tile_mm
        margin = (t - layout.marker_mm) / 2
        tx, ty = mx + (ax - margin) * scale, my + (ay - margin) * scale
        page.items.append(Box(tx, ty, t * scale, t * scale, fill=None, stroke=0.0, line_mm=0.2))
        page.items.append(MarkerShape(m.id, tx + margin * scale, ty + margin * scale, layout.marker_mm * scale))
        lx = tx - 4 if ax < 0 else tx + t * scale + 1.5
        page.items.append(Text(lx, ty + t * scale / 2 + 1.5, f"{m.id}", 8, bold=True))
    page.items.append(Text(mx + bw + 14, my + 4, "Corner markers 0-3 (ids), seen from above.", 8))
    page.items.append(Text(mx + bw + 14, my + 9, "Table origin (0, 0): the top-left battlefield", 8))
    page.items.append(Text(mx + bw + 14, my + 14, "corner, next to marker 0; x right, y down.", 8))
    # The close-up: one corner marker against the battlefield corner, at 1:1 scale.
    t = layout.tile_mm
    m2 = layout.corners[2]
    cx, cy = pw - 15.0 - t, ph - t - 10.0
    felt_top = my + bh + 16.0
    page.items.append(Box(x0, felt_top, cx - x0, cy - felt_top, fill=0.8))
    page.items.append(Text(x0 + 4, felt_top + 8, f"True size: marker {m2.id} at the battlefield's bottom-right corner",
                           9, bold=True))
    page.items.append(Text(x0 + 4, felt_top + 16, "battlefield (felt)", 8))
    page.items.append(Text(x0 + 4, cy - 10, "the tile's inner corner touches the battlefield corner ->", 8))
    page.items.append(Text(x0 + 4, cy - 5, "its edges continue the battlefield's edges (dashed)", 8))
    _tile_plain(page, layout, m2, cx, cy)
    page.items.append(Line(cx, cy, cx, cy + 25, grey=0.3, line_mm=0.2, dash=True))
    page.items.append(Line(cx, cy, cx + 25, cy, grey=0.3, line_mm=0.2, dash=True))
    return page


def _tile_plain(page: Page, layout: MarkerLayout, m: MarkerPlacement, x: float, y: float) -> None:
    t, s = layout.tile_mm, layout.marker_mm
    page.items.append(Box(x, y, t, t, fill=None, stroke=0.6, line_mm=0.15))
    page.items.append(MarkerShape(m.id, x + (t - s) / 2, y + (t - s) / 2, s))


def _corner_pages(layout: MarkerLayout, paper: tuple[float, float]) -> list[Page]:
    pw, ph = paper
    pages = []
    t = layout.tile_mm
    for pair in (layout.corners[0:2], layout.corners[2:4]):
        page = Page("Corner markers " + " and ".join(str(m.id) for m in pair))
        x = (pw - t) / 2
        for k, m in enumerate(pair):
            _tile(page, layout, m, x, 30.0 + k * (t + 40.0))
        _check_line(page, 20.0, ph - 16.0)
        pages.append(page)
    return pages


def _ruler_page(layout: MarkerLayout, paper: tuple[float, float]) -> Page:
    pw, ph = paper
    page = Page("Ruler tags")
    page.items.append(Text(20, 22, "Ruler tags", 16, bold=True))
    page.items.append(Text(20, 30, f"Cut each tag along the grey line ({layout.ruler_width_mm:g} mm square) "
                                   "and stick it "
                                   f"on the {layout.ruler_length_mm:g} mm range ruler,", 8.5))
    page.items.append(Text(20, 35, "the tag's top edge along the ruler's top edge, reading from the start end to the "
                                   "other end.", 8.5))
    w = layout.ruler_width_mm
    y = 50.0
    for tag in layout.ruler_markers:
        (u0, v0) = tag.corners_mm[0]
        x = 20.0
        page.items.append(Box(x, y, w, w, fill=None, stroke=0.6, line_mm=0.15))
        page.items.append(MarkerShape(tag.id, x + v0, y + v0, tag.side_mm))
        what = {
            "ruler:start": f"the ruler's START end: tag's outer edge {u0:g} mm from the end",
            "ruler:end": f"the ruler's other END: tag's outer edge "
                         f"{layout.ruler_length_mm - u0 - tag.side_mm:g} mm from the end",
            "ruler:band-short": f"optional: centred on the short/medium band mark ({u0 + tag.side_mm / 2:g} mm)",
            "ruler:band-medium": f"optional: centred on the medium/long band mark ({u0 + tag.side_mm / 2:g} mm)",
        }.get(tag.role, tag.role)
        page.items.append(Text(x + w + 6, y + 10, f"Tag {tag.id}", 11, bold=True))
        page.items.append(Text(x + w + 6, y + 16, what, 8.5))
        page.items.append(Text(x + w + 6, y + 21, f"{tag.side_mm:g} mm marker", 7.5))
        y += w + 12.0
    rx, ry = 20.0, y + 6.0
    rs = (pw - 40.0) / layout.ruler_length_mm
    page.items.append(Text(rx, ry - 4,
                           f"Where the tags go on the {layout.ruler_length_mm:g} mm ruler (drawn at {rs:.0%}):",
                           8, bold=True))
    page.items.append(Box(rx, ry, layout.ruler_length_mm * rs, layout.ruler_width_mm * rs, fill=0.9, stroke=0.0))
    for tag in layout.ruler_markers:
        (u0, v0) = tag.corners_mm[0]
        page.items.append(MarkerShape(tag.id, rx + u0 * rs, ry + v0 * rs, tag.side_mm * rs))
        page.items.append(Text(rx + (u0 + tag.side_mm / 2) * rs, ry + layout.ruler_width_mm * rs + 4,
                               f"{tag.id}" + (" (optional)" if tag.role.startswith("ruler:band") else ""), 7,
                               align="center"))
    page.items.append(Text(rx, ry + layout.ruler_width_mm * rs + 9, "start end (tag 4)  ->  far end (tag 5)", 7))
    _check_line(page, 20.0, ph - 16.0)
    return page


def sheet_plan(layout: MarkerLayout, paper: str = "a4") -> tuple[tuple[float, float], list[Page]]:
    """The pages (in page mm) for `paper` ("a4" or "letter")."""
    size = PAPER_MM[paper]
    return size, [_guide_page(layout, size), *_corner_pages(layout, size), _ruler_page(layout, size)]


def write_sheets(path: str | Path, layout: MarkerLayout, paper: str = "a4", compress: bool = True) -> int:
    """Write the PDF; returns the number of pages."""
    from reportlab.pdfgen import canvas

    (pw, ph), pages = sheet_plan(layout, paper)
    c = canvas.Canvas(str(path), pagesize=(pw * MM_TO_PT, ph * MM_TO_PT), pageCompression=1 if compress else 0,
                      invariant=1)
    c.setTitle("tablesight marker sheets")
    for page in pages:
        for item in page.items:
            _draw(c, item, ph, layout.dictionary)
        c.showPage()
    c.save()
    return len(pages)


def _draw(c, item, ph: float, dictionary: str) -> None:
    k = MM_TO_PT
    if isinstance(item, MarkerShape):
        cells = marker_cells(dictionary, item.marker_id)
        n = cells.shape[0]
        cell = item.side / n
        c.setFillGray(0.0)
        c.rect(item.x * k, (ph - item.y - item.side) * k, item.side * k, item.side * k, stroke=0, fill=1)
        c.setFillGray(1.0)
        for r in range(n):
            # Merge runs of white cells in a row into one rectangle: no hairline seams between cells.
            col = 0
            while col < n:
                if not cells[r, col]:
                    col += 1
                    continue
                start = col
                while col < n and cells[r, col]:
                    col += 1
                x = item.x + start * cell
                y = item.y + r * cell
                c.rect(x * k, (ph - y - cell) * k, (col - start) * cell * k, cell * k, stroke=0, fill=1)
    elif isinstance(item, Box):
        c.setLineWidth(item.line_mm * k)
        if item.fill is not None:
            c.setFillGray(item.fill)
        if item.stroke is not None:
            c.setStrokeGray(item.stroke)
        c.rect(item.x * k, (ph - item.y - item.h) * k, item.w * k, item.h * k,
               stroke=1 if item.stroke is not None else 0, fill=1 if item.fill is not None else 0)
    elif isinstance(item, Line):
        c.setLineWidth(item.line_mm * k)
        c.setStrokeGray(item.grey)
        c.setDash(2, 2) if item.dash else c.setDash()
        c.line(item.x1 * k, (ph - item.y1) * k, item.x2 * k, (ph - item.y2) * k)
        c.setDash()
    elif isinstance(item, Text):
        c.setFillGray(0.0)
        c.setFont("Helvetica-Bold" if item.bold else "Helvetica", item.size_pt)
        if item.align == "center":
            c.drawCentredString(item.x * k, (ph - item.y) * k, item.text)
        else:
            c.drawString(item.x * k, (ph - item.y) * k, item.text)


def rasterize_plan(page: Page, paper: tuple[float, float], dictionary: str, px_per_mm: float = 6.0,
                   text: bool = False) -> np.ndarray:
    """The page's boxes and markers as a grey image: what the printer should produce. `text`: add the text in a
    rough stand-in font and the lines (a layout preview; the PDF's own fonts differ)."""
    pw, ph = paper
    img = np.full((int(round(ph * px_per_mm)), int(round(pw * px_per_mm))), 255, np.uint8)

    def fill(x, y, w, h, g):
        q = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]]) * px_per_mm
        cv2.fillPoly(img, [np.round(q * 16).astype(np.int32)], int(round(g * 255)), cv2.LINE_AA, shift=4)

    for it in page.items:
        if isinstance(it, Box) and it.fill is not None:
            fill(it.x, it.y, it.w, it.h, it.fill)
        elif isinstance(it, MarkerShape):
            cells = marker_cells(dictionary, it.marker_id)
            n = cells.shape[0]
            cell = it.side / n
            fill(it.x, it.y, it.side, it.side, 0.0)
            for r in range(n):
                for col in range(n):
                    if cells[r, col]:
                        fill(it.x + col * cell, it.y + r * cell, cell, cell, 1.0)
        elif text and isinstance(it, Box) and it.stroke is not None:
            q = np.array([[it.x, it.y], [it.x + it.w, it.y + it.h]]) * px_per_mm
            cv2.rectangle(img, tuple(int(v) for v in q[0]), tuple(int(v) for v in q[1]), int(it.stroke * 255), 1)
        elif text and isinstance(it, Line):
            cv2.line(img, (int(it.x1 * px_per_mm), int(it.y1 * px_per_mm)),
                     (int(it.x2 * px_per_mm), int(it.y2 * px_per_mm)), int(it.grey * 255), 1)
        elif text and isinstance(it, Text):
            scale = it.size_pt * 0.3528 * 0.72 * px_per_mm / 22.0
            (tw, _), _ = cv2.getTextSize(it.text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
            x = it.x * px_per_mm - (tw / 2 if it.align == "center" else 0)
            cv2.putText(img, it.text, (int(x), int(it.y * px_per_mm)), cv2.FONT_HERSHEY_SIMPLEX, scale, 0,
                        2 if it.bold else 1, cv2.LINE_AA)
    return img
