"""The phone link (`GET /api/phone`): the address a phone opens, and its QR code, read back by a QR reader."""

from __future__ import annotations

import re

import numpy as np
import pytest

from webui.phone import NOT_SHARED, PHONE_URLS, qr_svg

TOKEN = "t" * 32


def rasterize_qr(svg: str, px: int = 8) -> np.ndarray:
    """The QR SVG that segno writes (one path of M/m/h commands: each 'h' a run of dark modules on the row at the
    current y) drawn as a grey image, `px` pixels a module."""
    size = int(re.search(r'viewBox="0 0 (\d+) (\d+)"', svg).group(1))
    scale = int(re.search(r"scale\((\d+)\)", svg).group(1))
    modules = size // scale
    path = re.search(r'class="qrline"[^>]*\sd="([^"]+)"', svg).group(1)
    img = np.full((modules * px, modules * px), 255, np.uint8)
    x = y = 0.0
    for cmd, args in re.findall(r"([MmHh])([^MmHh]*)", path):
        nums = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", args)]
        if cmd == "M":
            x, y = nums
        elif cmd == "m":
            x, y = x + nums[0], y + nums[1]
        elif cmd == "h":
            row = int(y)  # the stroke runs along the middle of its row of modules (y = row + 0.5)
            img[row * px:(row + 1) * px, int(x) * px:int(x + nums[0]) * px] = 0
            x += nums[0]
    return img


@pytest.mark.parametrize("url", [
    "http://192.168.1.20:8650/?token=" + TOKEN,
    "http://[fd00::5]:9000/?token=" + TOKEN,
    "http://10.0.0.7:8650/",
])
def test_the_qr_code_reads_back_as_the_address(url):
    import cv2

    found, _, _ = cv2.QRCodeDetector().detectAndDecode(rasterize_qr(qr_svg(url)))
    assert found == url


def test_phone_link_of_a_shared_server(make_client):
    c = make_client(token=TOKEN)
    url = f"http://192.168.1.20:8650/?token={TOKEN}"
    c.app.extensions[PHONE_URLS] = [url]
    doc = c.get("/api/phone").get_json()
    assert doc["urls"] == [url] and doc["why"] is None
    assert doc["svg"].startswith("<svg") and 'class="qrline"' in doc["svg"]
    # The link carries the access token: without it the route answers nothing.
    assert c.http.get("/api/phone", headers={"Host": "192.168.1.20:8650"}).status_code == 401


def test_phone_link_of_a_server_on_this_computer_only_says_how_to_share(client):
    doc = client.get("/api/phone").get_json()
    assert doc == {"urls": [], "svg": None, "why": NOT_SHARED}
    assert "--host 0.0.0.0" in doc["why"]
