"""The screenshots of docs/webui.md (and the README's first one), taken again by one command.

Run: .venv/bin/python scripts/docs_screenshots.py   (writes docs/img/; needs /usr/bin/chromium; about a minute)

- `webui-laptop.jpg`, `webui-phone.jpg`: the demo table (seed 7, ground truth, on its camera image), a disk of a
  stack selected.
- `webui-game-{armies,activation,melee,end,over}-{laptop,phone}.png`: a game played from the page, phase by
  phase, on the skirmish table as a camera first sees it (every owner unknown, each disk with its border colour,
  tests/webui/armies_scene.py): the armies named with one tap each, round 1's activation (command cards revealed,
  a disk activated), its melee walked and recorded, the end phase, then rounds 2-5 to the end screen.

Laptop: 1366x900. Phone: 375x812 at device scale 2 with a touch screen (the game's phases: the whole page), saved
at CSS size (375 px wide) to keep the files small.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "webui"))  # the skirmish table as a camera first sees it

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENS = {
    "laptop": {"viewport": {"width": 1366, "height": 900}, "device_scale_factor": 1},
    "phone": {"viewport": {"width": 375, "height": 812}, "device_scale_factor": 2, "has_touch": True,
              "is_mobile": True},
}
KIB = 1024


class Served:
    """The companion on 127.0.0.1 and a free port, in a thread of this process."""

    def __init__(self, feed, data_dir: Path):
        from werkzeug.serving import make_server

        from webui.app import create_app

        self.feed = feed
        self.app = create_app(feed, data_dir)
        self.httpd = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.feed.stop()
        self.app.extensions["tablesight.webui"].stop()


class Shots:
    def __init__(self, out: Path):
        self.out = out
        self.written: list[tuple[str, int]] = []

    def take(self, page, name: str, screen: str, jpeg: bool = False, full: bool = True) -> None:
        page.evaluate("window.scrollTo(0, 0)")  # the sticky header would land mid-page otherwise
        page.wait_for_timeout(150)  # let the last redraw paint
        path = self.out / f"{name}-{screen}.{'jpg' if jpeg else 'png'}"
        opts = {"quality": 80, "type": "jpeg"} if jpeg else {"type": "png"}
        page.screenshot(path=str(path), full_page=full and screen == "phone", scale="css", **opts)
        self.written.append((path.name, path.stat().st_size))


def open_page(context, url):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("g.disk")
    page.errors = errors
    return page


def book_step(page, key: str) -> None:
    """A keyboard shortcut of the Game tab, and wait until the game book has changed."""
    before = page.evaluate("document.body.dataset.bookEvents")
    page.keyboard.press(key)
    page.wait_for_function(f"document.body.dataset.bookEvents !== {before!r}")


def wait_phase(page, round_: int, phase: str) -> None:
    page.wait_for_selector(f'#game-phase[data-phase="{phase}"]')
    page.wait_for_function(f"document.querySelector('#game-round b').textContent === '{round_}'")


def demo_shots(browser, shots: Shots) -> None:
    from webui.feeds import DemoFeed

    served = Served(DemoFeed(seed=7, item_s=600.0), Path(tempfile.mkdtemp(prefix="docs-shots-")) / "data")
    try:
        v = served.app.extensions["tablesight.webui"].view()
        stacked = next(p.pinned for p in v.report.pins)  # a disk under another: labels beside, the lens open
        for screen, profile in SCREENS.items():
            context = browser.new_context(bypass_csp=True, **profile)
            page = open_page(context, served.url)
            page.click("#bg-camera")
            page.wait_for_selector("#table image")
            page.locator(f'g.disk[data-disk="{stacked}"]').dispatch_event("click")
            page.wait_for_selector("#sel-ring")
            page.wait_for_selector("#lens-close")
            shots.take(page, "webui", screen, jpeg=True, full=False)
            assert not page.errors, page.errors
            context.close()
    finally:
        served.close()


def game_shots(browser, shots: Shots, screen: str) -> None:
    from armies_scene import unknown_owner_scene
    from webui.feeds import SceneFileFeed

    tmp = Path(tempfile.mkdtemp(prefix="docs-shots-"))
    doc, truth = unknown_owner_scene()
    (tmp / "scene.json").write_text(json.dumps(doc))
    served = Served(SceneFileFeed(tmp / "scene.json", poll_s=0.1), tmp / "data")
    try:
        context = browser.new_context(bypass_csp=True, **SCREENS[screen])
        page = open_page(context, served.url)
        # Set up the armies: the tab opens by itself; the first army is named, the second is asked about.
        page.wait_for_selector("#pane-armies:not([hidden]) .army")
        armies = page.locator("#pane-armies .army")
        named = 0
        for i in range(armies.count()):
            disks = armies.nth(i).get_attribute("data-disks").split()
            owner = truth[disks[0]]
            if owner is None or len(disks) < 2:
                continue
            if named == 1:
                shots.take(page, "webui-game-armies", screen)
            page.click(f'#pane-armies .army-owner[data-army="{i}"][data-player="{owner}"]')
            page.wait_for_selector(f'#pane-armies .army[data-army="{i}"][data-player="{owner}"]')
            named += 1
        # Round 1, activation: a game with the table's players, the cards revealed, one disk activated.
        book_step(page, "n")
        wait_phase(page, 1, "activation")
        page.keyboard.press("g")
        page.select_option("#card-orcs", "bold")
        page.select_option("#card-empire", "cunning")
        page.click("#game-reveal")
        page.wait_for_selector("#game-may [data-activate]")
        before = page.evaluate("document.body.dataset.bookEvents")
        page.locator("#game-may [data-activate]").first.click()
        page.wait_for_function(f"document.body.dataset.bookEvents !== {before!r}")
        page.wait_for_selector("#game-may [data-activate]")
        shots.take(page, "webui-game-activation", screen)
        # The melee phase: walked step by step, recorded once.
        book_step(page, "n")
        wait_phase(page, 1, "melee")
        page.keyboard.press("m")
        page.click("#melee-start")
        page.wait_for_selector("#melee-next")
        while page.locator("#melee-next").is_enabled():
            page.click("#melee-next")
        page.click("#melee-record")
        page.wait_for_function("/Recorded/.test(document.querySelector('#melee-record').textContent)")
        shots.take(page, "webui-game-melee", screen)
        # The end phase (tokens cleared), then rounds 2-5 to the end screen.
        book_step(page, "n")
        wait_phase(page, 1, "end")
        page.keyboard.press("g")
        page.wait_for_selector("#pane-game:not([hidden]) #game-next")
        shots.take(page, "webui-game-end", screen)
        for r in range(2, 6):
            for phase in ("activation", "melee", "end"):
                book_step(page, "n")
                wait_phase(page, r, phase)
        page.wait_for_selector("#pane-game:not([hidden]) #game-over")
        shots.take(page, "webui-game-over", screen)
        assert not page.errors, page.errors
        context.close()
    finally:
        served.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    a = ap.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"docs_screenshots: {CHROMIUM} is missing", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    shots = Shots(out)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        demo_shots(browser, shots)
        for screen in SCREENS:
            game_shots(browser, shots, screen)
        browser.close()
    big = [(n, s) for n, s in shots.written if s > 200 * KIB]
    for name, size in shots.written:
        print(f"{name}: {size / KIB:.0f} KiB")
    if big:
        print(f"docs_screenshots: over 200 KiB: {', '.join(n for n, _ in big)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
