"""The phone link: the address a phone on the same network opens, as text and as a QR code for the laptop page.

`tablesight serve` puts the addresses it prints in `app.extensions["tablesight.phone_urls"]` when it listens on
the network (`--host 0.0.0.0`: each address carries the access token). Listening on 127.0.0.1 only, no phone can
reach the page: the route says so and how to share it instead of drawing a code that cannot work.
"""

from __future__ import annotations

from flask import Flask, Response, jsonify

PHONE_URLS = "tablesight.phone_urls"
NOT_SHARED = ("this page is served to this computer only: to open it on a phone, restart with "
              "'tablesight serve --host 0.0.0.0' (the address then carries an access token)")


def qr_svg(text: str) -> str:
    """A QR code of `text` as an inline SVG element (for the page to insert): black modules on white with the
    standard quiet zone."""
    import segno

    # error level M survives a screen's glare; the scale only sets the SVG's nominal size (it stays vector)
    return segno.make(text, error="m", micro=False).svg_inline(scale=6, border=4, dark="#000", light="#fff",
                                                               omitsize=True)


def register(app: Flask) -> None:
    @app.get("/api/phone")
    def api_phone() -> Response:
        urls = list(app.extensions.get(PHONE_URLS) or [])
        if not urls:
            return jsonify({"urls": [], "svg": None, "why": NOT_SHARED})
        return jsonify({"urls": urls, "svg": qr_svg(urls[0]), "why": None})
