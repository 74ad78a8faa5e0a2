"""The table page in a real browser: Debian's Chromium, headless, driven by Playwright against a real server.

Screenshots go to tests/artifacts/ (not committed). Skipped only when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import importlib

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api").expect  # waits for the page instead of reading it at once

from webui.app import create_app
from webui.feeds import DemoFeed, SceneFileFeed

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HERE = Path(__file__).parent
ARTIFACTS = HERE.parent / "artifacts"
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 375, "height": 812}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]


class Server:
    """The companion on 127.0.0.1 and a free port, in a thread of this process."""

    def __init__(self, feed, data_dir: Path, token: str | None = None, **app_kw):
        from werkzeug.serving import make_server

        self.feed = feed
        self.app = create_app(feed, data_dir, token=token, **app_kw)
        self.httpd = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.feed.stop()
        self.app.extensions["tablesight.webui"].stop()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def scene_file(tmp_path):
    p = tmp_path / "scene.json"
    shutil.copy(HERE / "scene_webui_skirmish.json", p)
    return p


@pytest.fixture
def server(scene_file, tmp_path):
    s = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    yield s
    s.close()


def open_page(browser, url, viewport=LAPTOP, scale=1, csp=False, before=None):
    """A page on `url`. Playwright's string predicates need eval, which the page's CSP forbids: tests that use
    them run with the CSP bypassed; `csp=True` keeps it, to check the page itself needs nothing it forbids.
    `before(page)` runs before the page loads (to route its requests)."""
    page = browser.new_page(viewport=viewport, device_scale_factor=scale, bypass_csp=not csp)
    if before is not None:
        before(page)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(url)
    page.wait_for_selector("g.disk")
    page.errors = errors
    return page


def click_shape(page, selector, position=None, tries=4):
    """A forced click on a table shape: disks, terrain and labels overlap, so Playwright's hit check would refuse.
    A forced click does not wait, and a server event may redraw the table between finding the shape and clicking it
    (Playwright then reports the old, detached node "not visible"): the click is tried again on the redrawn shape."""
    from playwright.sync_api import Error

    for attempt in range(tries):
        shape = page.locator(selector)
        expect(shape).to_be_visible()
        try:
            shape.click(position=position, force=True, timeout=2000)
            return
        except Error:
            if attempt == tries - 1:
                raise


def shot(page, name, full=False):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)


def shot_from_top(page, name, full=False):
    """A screenshot for docs/webui.md, from the top of the page (a sticky header would land mid-page otherwise)."""
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, name, full=full)


def scene_pairs(server, disk_id):
    v = server.app.extensions["tablesight.webui"].view()
    return [p for p in v.report.pairs if disk_id in (p.a, p.b)]


def test_demo_page_shows_the_disks_on_the_camera_image(browser, tmp_path):
    importlib.import_module("vision.synth.sequence")
    feed = DemoFeed(item_s=600.0)  # the first stable moment only: nothing moves while the test looks
    s = Server(feed, tmp_path / "data")
    try:
        page = open_page(browser, s.url)
        scene = feed.state().scene
        assert page.locator("g.disk").count() == len(scene.disks)
        assert "Demo table" in page.locator("#banner").inner_text()
        assert page.locator("#health .pill").inner_text() == "DEMO"
        page.wait_for_selector("#table image")  # the rectified camera frame under the overlays
        assert page.locator("#bg-camera").get_attribute("aria-pressed") == "true"
        report = s.app.extensions["tablesight.webui"].view().report
        # A disk in a fight makes the most telling picture: rings, pins and numbers together.
        pick = report.engagements[0].attackers[0] if report.engagements else sorted(d.id for d in scene.disks)[0]
        click_shape(page, f'g.disk[data-disk="{pick}"]')
        page.wait_for_selector("#sel-ring")
        assert page.locator("line.los-line").count() + page.locator("g.blocked-mark").count() == len(scene.disks) - 1
        shot(page, "webui-demo-laptop")
        page.click("#bg-map")
        assert page.locator("#table image").count() == 0
        shot(page, "webui-demo-laptop-map")
        assert not page.errors
        page.close()
        phone = open_page(browser, s.url, viewport=PHONE, scale=2)
        click_shape(phone, f'g.disk[data-disk="{pick}"]')
        phone.wait_for_selector("#sel-ring")
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        shot(phone, "webui-demo-phone")
        phone.close()
    finally:
        s.close()


def test_click_on_a_disk_shows_range_rings_and_line_of_sight(browser, server):
    page = open_page(browser, server.url, csp=True)
    page.click('g.disk[data-disk="d2"]')
    page.wait_for_selector("#sel-ring")
    # Three rings, one per band, from the disk's edge: radius = disk radius + band limit.
    rings = page.locator("g.sel-ring circle")
    radii = sorted(float(rings.nth(i).get_attribute("r")) for i in range(rings.count()))
    assert radii == [pytest.approx(22 + 100), pytest.approx(22 + 200), pytest.approx(22 + 300)]
    pairs = scene_pairs(server, "d2")
    visible = [p for p in pairs if p.los]
    blocked = [p for p in pairs if not p.los]
    assert page.locator("line.los-line").count() == len(visible) > 0
    assert page.locator("g.blocked-mark").count() == len(blocked) > 0  # the forest hides the giant (d4)
    # Every other disk is tinted by its band.
    for p in pairs:
        other = p.b if p.a == "d2" else p.a
        assert page.locator(f'g.disk[data-disk="{other}"] circle.outline').get_attribute("data-band") == p.band
    panel = page.locator("#disk-info")
    assert "Orc Boyz" in panel.inner_text() or "orc" in panel.inner_text().lower()
    assert "harried" in panel.inner_text()
    page.wait_for_selector("#deviation li")
    assert page.locator("#deviation li").count() == 2
    # The legend counts the other disks per band.
    for band in ("short", "medium", "long", "siege"):
        n = sum(1 for p in pairs if p.band == band)
        assert page.locator(f'#legend .band-count[data-band="{band}"] b').inner_text() == str(n)
    # "Wholly within" retints by the wholly band.
    page.check("#wholly")
    for p in pairs:
        other, band = (p.b, p.wholly_band) if p.a == "d2" else (p.a, p.wholly_band_ba)
        assert page.locator(f'g.disk[data-disk="{other}"] circle.outline').get_attribute("data-band") == band
    shot(page, "webui-file-selected-laptop")
    assert not page.errors
    # The keyboard works too: Tab to a disk, Enter selects it, focus stays on it after the redraw.
    page.focus('g.disk[data-disk="d5"]')
    page.keyboard.press("Enter")
    page.wait_for_selector("#sel-ring")
    assert page.evaluate("document.activeElement.dataset.disk") == "d5"
    assert "d5" in page.locator("#disk-info").inner_text()
    # Escape clears the selection.
    page.keyboard.press("Escape")
    assert page.locator("#sel-ring").count() == 0
    assert not page.errors
    page.close()


def test_overlays_pins_engagements_harried_and_terrain(browser, server):
    page = open_page(browser, server.url)
    v = server.app.extensions["tablesight.webui"].view()
    assert page.locator("line.pin-arrow").count() == len(v.report.pins)
    badges = page.locator("g.eng-badge")
    assert badges.count() == len(v.report.engagements)
    order = {e: str(i + 1) for i, e in enumerate(v.report.melee_order.sequence)}
    for e in v.report.engagements:
        assert page.locator(f'g.eng-badge[data-engagement="{e.id}"] text').text_content() == order[e.id]
    assert page.locator("circle.harried-mark").count() == len(v.report.harried)
    # the camera's unsure disks, below 0.8 (d3 at 0.72, d6 at 0.45), carry a "?"; a sure one (d5 at 0.93) none
    unsure = sorted(d.id for d in v.scene.disks if d.confidence is not None and d.confidence < 0.8)
    assert unsure == ["d3", "d6"] and page.locator("text.unsure-mark").count() == 2
    assert page.locator('g.disk[data-disk="d6"] text.unsure-mark').count() == 1
    assert page.locator('g.disk[data-disk="d5"] text.unsure-mark').count() == 0
    # a disk the camera suspects lies on d4 (the scene's `suspected_disks`): a dashed "?" there, a word on d4's card
    assert page.locator('g.suspect-mark[data-on="d4"] circle').get_attribute("r") == "22"
    page.click('g.disk[data-disk="d4"]')
    assert "a smaller disk may lie on this one" in page.locator("#disk-info").inner_text()
    page.keyboard.press("Escape")
    assert "forest" in page.locator("#table").text_content()
    assert page.locator("polygon.zone").count() == len(v.scene.deployment_zones) == 2
    page.click("#tab-calls")
    summary = page.locator("details.setup summary")
    assert summary.inner_text() == f"Setup checks (deployment): {len(v.report.setup_violations)}"
    # Fit zooms to the disks and terrain; pressing it again shows the whole table.
    whole = page.locator("#table").get_attribute("viewBox")
    page.click("#fit")
    fitted = [float(v) for v in page.locator("#table").get_attribute("viewBox").split()]
    assert fitted[2] < 980 and fitted[2] == fitted[3]
    for d in v.scene.disks:
        assert fitted[0] <= d.x_mm - d.radius_mm and d.x_mm + d.radius_mm <= fitted[0] + fitted[2]
    page.click("#fit")
    assert page.locator("#table").get_attribute("viewBox") == whole
    page.close()


def test_a_correction_sticks_after_a_reload(browser, server, tmp_path):
    page = open_page(browser, server.url)
    page.click('g.disk[data-disk="d6"]')
    page.select_option("#fix-owner", "orcs")
    page.wait_for_function("document.querySelector('#fix-msg') && document.querySelector('#fix-msg').textContent.includes('saved')")
    page.reload()
    page.wait_for_selector("g.disk")
    outline = page.locator('g.disk[data-disk="d6"] circle.outline')
    colour_orcs = page.locator('g.disk[data-disk="d2"] circle.outline').get_attribute("stroke")
    assert outline.get_attribute("stroke") == colour_orcs
    page.click('g.disk[data-disk="d6"]')
    assert page.locator("#fix-owner").input_value() == "orcs"
    stored = json.loads((tmp_path / "data" / "corrections.json").read_text())
    assert stored["disks"]["d6"]["player"] == "orcs"
    # Not a disk: it disappears, survives a reload, and can be restored from the Close calls tab.
    page.click("#fix-notdisk")
    page.wait_for_function("!document.querySelector('g.disk[data-disk=\"d6\"]')")
    page.reload()
    page.wait_for_selector("g.disk")
    assert page.locator('g.disk[data-disk="d6"]').count() == 0
    page.click("#tab-calls")
    page.click('[data-restore="d6"]')
    page.wait_for_selector('g.disk[data-disk="d6"]')
    page.close()


def test_naming_terrain_gives_it_keywords(browser, server):
    """Was flaky: the rulebook's names arrive by a request of their own, and a preview computed before it answered
    said "no known word" (a redraw while typing also wiped the name). Now the preview waits for the names and a
    redraw keeps what was typed; the test waits for the page's answers instead of reading them at once. The names'
    request is held until the name is typed, so the slow order of the race happens every time."""
    held = []
    page = open_page(browser, server.url,
                     before=lambda p: p.route("**/api/corrections", lambda route: held.append(route)))
    click_shape(page, 'polygon[data-terrain="t2"]', position={"x": 8, "y": 8})
    page.fill("#terrain-name", "barranco")  # RB p.13: Rough, Dangerous
    for _ in range(1500):  # the route hears of the page's request while Playwright waits (30 s on a loaded machine)
        if held:
            break
        page.wait_for_timeout(20)
    assert len(held) == 1
    held[0].continue_()  # the names arrive after the typing
    expect(page.locator("#terrain-preview")).to_contain_text("rough")
    page.click("#terrain-save")
    page.wait_for_function("document.querySelector('#table').textContent.includes('barranco')")
    expect(page.locator("#table")).to_contain_text("rough")
    page.close()


def test_naming_terrain_keeps_its_keywords(browser, server):
    """Regression: naming the wood replaced its keywords: it lost blocks_los and cover."""
    page = open_page(browser, server.url)
    click_shape(page, 'polygon[data-terrain="t1"]', position={"x": 60, "y": 60})
    expect(page.locator("#terrain-name")).to_be_visible()
    page.fill("#terrain-name", "Rocas")  # RB p.13: Cover, Fortified
    expect(page.locator("#terrain-preview")).to_have_text("adds keywords: fortified")
    page.click("#terrain-save")
    expect(page.locator("#disk-info")).to_contain_text("blocks los")
    expect(page.locator("#disk-info")).to_contain_text("fortified")
    page.close()


def test_melee_panel_in_order_with_step_by_step_resolution(browser, server):
    page = open_page(browser, server.url)
    page.click("#tab-melee")
    engs = page.locator("#pane-melee .eng")
    v = server.app.extensions["tablesight.webui"].view()
    assert [engs.nth(i).get_attribute("data-engagement") for i in range(engs.count())] == list(v.report.melee_order.sequence)
    assert page.locator("#pane-melee .contest").count() == len(v.report.contests)
    page.click("#melee-start")
    page.wait_for_selector("#melee-next")
    page.click("#melee-next")
    page.wait_for_selector("#pane-melee .strike")
    assert "→" in page.locator("#pane-melee .strike").first.inner_text()
    # Tapping an engagement rings its disks on the table.
    first = v.report.engagement(v.report.melee_order.sequence[0])
    page.locator("#pane-melee .eng").first.click(position={"x": 5, "y": 5})
    assert page.locator("circle.eng-highlight").count() == len(first.attackers) + len(first.defenders)
    while page.locator("#melee-next").is_enabled():
        page.click("#melee-next")
    assert "After the melee" in page.locator("#pane-melee").inner_text()
    shot(page, "webui-file-melee-laptop")
    # No game in the book yet: the button says so, and one press starts it and records the melee.
    expect(page.locator("#melee-record")).to_have_text("Start a game with these players and record")
    page.click("#melee-record")
    expect(page.locator("#melee-record")).to_have_text("Recorded in the game book (round 1)")
    book = server.app.extensions["tablesight.book"]
    assert book.state()["melee_recorded"] and book.state()["started"]
    page.close()


def _melee_to_its_end(page):
    page.click("#tab-melee")
    page.click("#melee-start")
    page.wait_for_selector("#melee-next")
    while page.locator("#melee-next").is_enabled():
        page.click("#melee-next")


def test_melee_is_recorded_with_one_click_and_only_once_after_a_reload(browser, server):
    """Regression: recording took two presses (the first only offered to start a game), and after a reload the
    page offered to record the same melee again, and the book took it twice."""
    book = server.app.extensions["tablesight.book"]
    page = open_page(browser, server.url)
    _melee_to_its_end(page)
    page.click("#melee-record")
    expect(page.locator("#melee-record")).to_be_disabled()
    expect(page.locator("#melee-record")).to_have_text("Recorded in the game book (round 1)")
    records = [e for e in book.events() if e["kind"] == "record_melee"]
    assert len(records) == 1
    page.reload()
    page.wait_for_selector("g.disk")
    _melee_to_its_end(page)
    expect(page.locator("#melee-record")).to_have_text("Recorded in the game book (round 1)")
    expect(page.locator("#melee-record")).to_be_disabled()
    page.locator("#melee-record").click(force=True)  # pressed anyway: still once
    assert len([e for e in book.events() if e["kind"] == "record_melee"]) == 1
    page.close()


def test_not_a_disk_closes_the_disk_panel(browser, server):
    """Regression: "Not a disk" removed the disk from the table but left its panel open, stale."""
    page = open_page(browser, server.url)
    page.click('g.disk[data-disk="d7"]')
    expect(page.locator("#disk-info h2")).to_be_visible()
    page.click("#fix-notdisk")
    page.wait_for_function("!document.querySelector('g.disk[data-disk=\"d7\"]')")
    expect(page.locator("#disk-info")).to_be_empty()
    expect(page.locator("#disk-hint")).to_be_visible()
    page.close()


def test_a_page_that_misses_the_report_done_event_still_shows_the_new_report(browser, server, monkeypatch):
    """Regression: a page given a view whose report was still being computed waited for the event saying it was
    done; with that event missed (here: no event stream at all) it kept showing the old report."""
    import webui.app as appmod

    monkeypatch.setattr(appmod, "REPORT_WAIT_S", 0.05)
    comp = server.app.extensions["tablesight.webui"]
    page = open_page(browser, server.url, before=lambda p: p.route("**/api/events*", lambda route: route.abort()))
    page.click("#tab-melee")
    expect(page.locator("#pane-melee .hint")).to_contain_text("the first player (orcs)")
    gate, real = threading.Event(), comp._report_builder
    comp._report_builder = lambda scene: real(scene) if gate.wait(10) else None
    page.click('g.disk[data-disk="d1"]')
    page.click("#fix-players-edit")
    page.fill("#fix-players", "empire, orcs")
    page.click("#fix-players-save")
    page.wait_for_function("document.body.dataset.reportState === 'stale'")
    gate.set()
    page.click("#tab-melee")
    expect(page.locator("#pane-melee .hint")).to_contain_text("the first player (empire)")
    page.close()


def _hold_first(held):
    """A route handler that holds the first request (the test lets it go on) and lets any later one through."""
    return lambda route: held.append(route) if not held else route.continue_()


def _wait_held(page, held):
    for _ in range(1500):  # the route hears of the page's request while Playwright waits (30 s on a loaded machine)
        if held:
            return
        page.wait_for_timeout(20)
    raise AssertionError("the page never asked")


def test_the_players_typed_while_the_disk_details_arrive_are_the_ones_saved(browser, server):
    """Regression (it made test_a_page_that_misses_the_report_done_event_still_shows_the_new_report flaky): the disk
    panel is drawn again when the disk's details arrive, and the field being typed in was replaced by a new one without
    the focus. What was typed after that went nowhere, so Save sent the players half typed or in their old order (the
    test's `fill` focuses the field, then inserts the text: a redraw between the two lost all of it, and the page then
    showed, rightly, the report of the unchanged order). The details' request is held until the typing has begun,
    so the redraw falls in the middle of it every time."""
    held = []
    page = open_page(browser, server.url, before=lambda p: p.route("**/api/disk/d1", _hold_first(held)))
    page.click('g.disk[data-disk="d1"]')
    _wait_held(page, held)
    page.click("#fix-players-edit")
    page.click("#fix-players")
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("empire,")
    held[0].continue_()  # the details arrive mid-word: the panel is drawn again
    expect(page.locator("#dev-pending")).to_have_count(0)
    page.keyboard.type(" orcs")
    expect(page.locator("#fix-players")).to_have_value("empire, orcs")
    assert page.evaluate("document.activeElement.id") == "fix-players"
    page.click("#fix-players-save")
    expect(page.locator("#fix-msg")).to_contain_text("Players saved")
    assert [p["id"] for p in server.app.extensions["tablesight.webui"].corrections.to_json()["players"]] == [
        "empire", "orcs"]
    page.click("#tab-melee")
    expect(page.locator("#pane-melee .hint")).to_contain_text("the first player (empire)")
    assert not page.errors
    page.close()


def test_a_unit_typed_while_the_disk_details_arrive_is_kept(browser, server):
    """The same redraw wiped a unit key being typed (its field shows the stored unit) and took the focus away."""
    held = []
    page = open_page(browser, server.url, before=lambda p: p.route("**/api/disk/d3", _hold_first(held)))
    page.click('g.disk[data-disk="d3"]')
    _wait_held(page, held)
    page.click("#fix-unit")
    page.keyboard.type("lanceros-de-")
    held[0].continue_()
    expect(page.locator("#dev-pending")).to_have_count(0)
    page.keyboard.type("la-milicia")
    expect(page.locator("#fix-unit")).to_have_value("lanceros-de-la-milicia")
    assert page.evaluate("document.activeElement.id") == "fix-unit"
    page.keyboard.press("Enter")
    expect(page.locator("#fix-msg")).to_contain_text("Unit saved")
    assert server.app.extensions["tablesight.webui"].corrections.to_json()["disks"]["d3"]["unit"] == "lanceros-de-la-milicia"
    assert not page.errors
    page.close()


def test_players_dialog_changes_the_initiative(browser, server):
    """Regression: the Players... dialog saved the order, but the first player (initiative) stayed the same."""
    page = open_page(browser, server.url)
    page.click("#tab-melee")
    expect(page.locator("#pane-melee .hint")).to_contain_text("the first player (orcs)")
    page.click('g.disk[data-disk="d1"]')
    page.click("#fix-players-edit")
    page.fill("#fix-players", "empire, orcs")
    page.click("#fix-players-save")
    page.click("#tab-melee")
    expect(page.locator("#pane-melee .hint")).to_contain_text("the first player (empire)")
    page.close()


def test_a_table_change_is_pushed_to_the_page(browser, server, scene_file):
    page = open_page(browser, server.url)
    key = page.evaluate("document.body.dataset.viewKey")
    doc = json.loads(scene_file.read_text())
    doc["disks"] = [d for d in doc["disks"] if d["id"] != "d7"]
    scene_file.write_text(json.dumps(doc))
    st = scene_file.stat()
    os.utime(scene_file, (st.st_atime, st.st_mtime + 5))
    page.wait_for_function(f"document.body.dataset.viewKey !== {json.dumps(key)}", timeout=10000)
    assert page.locator('g.disk[data-disk="d7"]').count() == 0
    page.close()


def test_a_suspicion_goes_with_the_disk_it_was_on(browser, server, scene_file):
    page = open_page(browser, server.url)
    assert page.locator('g.suspect-mark[data-on="d4"]').count() == 1
    key = page.evaluate("document.body.dataset.viewKey")
    doc = json.loads(scene_file.read_text())
    doc["disks"] = [d for d in doc["disks"] if d["id"] != "d4"]     # the scene still names d4 in suspected_disks
    scene_file.write_text(json.dumps(doc))
    st = scene_file.stat()
    os.utime(scene_file, (st.st_atime, st.st_mtime + 5))
    page.wait_for_function(f"document.body.dataset.viewKey !== {json.dumps(key)}", timeout=10000)
    assert page.locator("g.suspect-mark").count() == 0
    assert not page.errors
    page.close()


def test_a_slow_report_keeps_the_last_report_on_the_page(browser, scene_file, tmp_path, monkeypatch):
    """A table change whose report takes long: the page draws the new table at once and keeps the last report's
    overlays, faded and marked "computing" with the version they belong to, until the new report arrives."""
    import webui.app as appmod
    from rules.diskwars.report import build_report

    monkeypatch.setattr(appmod, "REPORT_WAIT_S", 0.05)
    hold, gate = threading.Event(), threading.Event()

    def builder(scene):
        if hold.is_set():
            gate.wait(20)
        return build_report(scene)

    s = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data", report_builder=builder)
    try:
        page = open_page(browser, s.url)
        page.wait_for_function("document.body.dataset.reportState === 'ready'")
        assert page.locator("#report-state").is_hidden()
        pins = page.locator("line.pin-arrow").count()
        assert pins > 0
        version = s.app.extensions["tablesight.webui"].view().version
        hold.set()
        doc = json.loads(scene_file.read_text())
        for d in doc["disks"]:
            if d["id"] == "d7":
                d["x_mm"] += 60.0
        scene_file.write_text(json.dumps(doc))
        st = scene_file.stat()
        os.utime(scene_file, (st.st_atime, st.st_mtime + 5))
        page.wait_for_function("document.body.dataset.reportState === 'stale'", timeout=10000)
        # the new table at once ...
        assert page.locator('g.disk[data-disk="d7"] circle').first.get_attribute("cx") == "210"
        # ... with the last report still drawn, faded, and said to be of the earlier table
        assert page.locator("line.pin-arrow").count() == pins
        assert "stale" in page.locator("#table").get_attribute("class")
        box = page.locator("#report-state")
        assert box.is_visible()
        assert "Computing the rules" in box.inner_text() and f"version {version}" in box.inner_text()
        shot(page, "report-computing")
        gate.set()
        page.wait_for_function("document.body.dataset.reportState === 'ready'", timeout=10000)
        assert page.locator("#report-state").is_hidden()
        assert "stale" not in (page.locator("#table").get_attribute("class") or "")
        assert not page.errors
        page.close()
    finally:
        gate.set()
        s.close()


def test_phone_viewport(browser, server):
    page = open_page(browser, server.url, viewport=PHONE, scale=2)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]  # nothing sticks out sideways
    box = page.locator("#table").bounding_box()
    assert box["width"] >= PHONE["width"] - 24
    page.click('g.disk[data-disk="d1"]')
    page.wait_for_selector("#sel-ring")
    assert "Empire Swordsmen" in page.locator("#disk-info").inner_text()
    assert not page.locator("#fix-players-row").is_visible()  # regression: a flex row ignored [hidden]
    page.click("#fix-players-edit")
    assert page.locator("#fix-players-row").is_visible()
    # Buttons are big enough to hit with a thumb.
    for sel in ("#bg-map", "#tab-melee", "#fix-unit-save"):
        assert page.locator(sel).bounding_box()["height"] >= 36
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "webui-file-phone", full=True)
    page.close()


def test_token_server_page_works_with_the_token_in_its_address(browser, scene_file, tmp_path):
    s = Server(SceneFileFeed(scene_file), tmp_path / "data", token="tok-123")
    try:
        page = browser.new_page(viewport=LAPTOP, bypass_csp=True)
        page.goto(s.url)
        assert "Access token needed" in page.content()
        page = open_page(browser, s.url + "?token=tok-123")
        page.click('g.disk[data-disk="d6"]')
        page.select_option("#fix-owner", "empire")
        page.wait_for_function("document.querySelector('#fix-msg').textContent.includes('saved')")
        assert s.app.extensions["tablesight.webui"].view().scene.disk("d6").player == "empire"
        page.close()
    finally:
        s.close()


def test_calibration_page_says_not_available_for_a_scene_file(browser, server):
    page = browser.new_page(viewport=PHONE, bypass_csp=True)
    page.goto(server.url)
    page.wait_for_selector("g.disk")
    page.click("#calib-link")
    page.wait_for_selector(".na")
    assert "not available for this source" in page.locator(".na").inner_text()
    page.click("#table-link")
    page.wait_for_selector("g.disk")
    page.close()


def test_calibration_page_of_a_camera_source(browser, tmp_path):
    """An image folder through the vision pipeline: the page shows the annotated frame and the numbers."""
    cv2 = pytest.importorskip("cv2")
    importlib.import_module("vision.live")
    seq = importlib.import_module("vision.synth.sequence").demo_sequence(7)
    from calibration.table import TableCalibration, calibrate_table
    from vision.live import LiveTable
    from vision.sources import open_source
    from webui.camera import CameraFeed

    frames = tmp_path / "frames"
    frames.mkdir()
    frame = seq[0][0]
    for i in range(3):
        cv2.imwrite(str(frames / f"frame_{i:03d}.png"), frame)
    cal = calibrate_table(frame)
    feed = CameraFeed(LiveTable(open_source(images=str(frames)), cal), tmp_path / "data")
    s = Server(feed, tmp_path / "data")
    try:
        page = browser.new_page(viewport=LAPTOP, bypass_csp=True)
        page.goto(s.url + "calibration")
        page.wait_for_selector("#calib-frame")
        page.wait_for_function("document.querySelector('#calib-frame').naturalWidth > 0")
        text = page.locator("#calib").inner_text()
        for m in sorted({r.marker_id for r in cal.residuals}):
            assert f"marker {m}" in text
        assert f"{cal.residual_max_mm:.2f}" in text
        page.click("#measure")
        page.wait_for_function("document.querySelector('#measure-msg').textContent.includes('small')")
        assert "--disk-diameters-mm" in page.locator("#measure-msg").inner_text()
        shot(page, "webui-calibration-laptop", full=True)
        page.click("#recal")
        page.wait_for_function("document.querySelector('#recal-msg').textContent.includes('table.json')")
        assert isinstance(TableCalibration.load(tmp_path / "data" / "table.json"), TableCalibration)
        page.close()
    finally:
        s.close()


class _DemoTruthFeed:
    """The skirmish scene as the camera saw it, with a truth that differs: one disk missed (d8), one phantom (d7),
    the stack d2/d3 the other way up."""

    kind = "demo"

    def __init__(self):
        from dataclasses import replace

        from tablesight.scene import Disk, load_scene
        from vision.live import Health, LiveState

        seen = load_scene(HERE / "scene_webui_skirmish.json")
        z = {"d2": 2, "d3": 1}
        disks = [replace(d, z=z.get(d.id, d.z)) for d in seen.disks if d.id != "d7"]
        self.truth = replace(seen, disks=tuple(disks) + (Disk("d8", 300.0, 450.0, 22.0, player="orcs"),))
        self._state = LiveState(1, seen, False, None, Health("demo", 4.0, 20.0, None, None, "demo table"))

    def start(self): pass
    def stop(self): pass
    def state(self): return self._state
    def wait_for_change(self, after_version, timeout_s): return self._state
    def truth_for(self, version): return self.truth


def test_demo_truth_toggle_marks_what_the_camera_got_wrong(browser, server, tmp_path):
    s = Server(_DemoTruthFeed(), tmp_path / "demo-data")
    try:
        page = open_page(browser, s.url, csp=True)
        page.wait_for_selector("#truth-seg:not([hidden])")
        assert page.locator("#truth-toggle").get_attribute("aria-pressed") == "false"
        assert page.locator("#truth-layer").count() == 0
        page.click("#truth-toggle")
        page.wait_for_selector("#truth-layer")
        assert page.locator("#truth-toggle").get_attribute("aria-pressed") == "true"
        assert page.locator("circle.truth-disk").count() == 7
        assert page.locator("g.disagreement-missed").count() == 1
        assert page.locator("g.disagreement-phantom").count() == 1
        assert page.locator("g.disagreement-order").count() == 1
        assert page.locator("#truth-summary").inner_text().startswith(
            "The camera against the truth: 1 missed, 1 phantom, 1 wrong order")
        # the truth is drawn over the disks but never takes a tap meant for one
        page.click('g.disk[data-disk="d3"]')
        page.wait_for_selector("#sel-ring")
        shot(page, "webui-demo-truth-laptop")
        # it stays on after a reload, and goes with a second tap
        page.reload()
        page.wait_for_selector("#truth-layer")
        page.click("#truth-toggle")
        page.wait_for_function("!document.getElementById('truth-layer')")
        assert page.locator("#truth-summary").is_hidden()
        assert not page.errors
        page.close()
        phone = open_page(browser, s.url, viewport=PHONE, scale=2)
        phone.click("#truth-toggle")
        phone.wait_for_selector("#truth-layer")
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        shot(phone, "webui-demo-truth-phone")
        phone.close()
    finally:
        s.close()
    # a source without a truth offers no toggle
    page = open_page(browser, server.url)
    page.wait_for_function("document.body.dataset.viewKey")
    assert page.locator("#truth-seg").is_hidden()
# -- legible at the table: the rules reference, the phone link, tap targets -------------------------------------

def test_rules_reference_is_one_tap_away(browser, server):
    for viewport in (LAPTOP, PHONE):
        page = open_page(browser, server.url, viewport=viewport, csp=True)
        page.click("#rules-open")
        dialog = page.locator("#rules-dialog")
        expect(dialog).to_be_visible()
        for words in ("Swift", "Harried", "Blocks LOS", "Cover", "Elevated", "End"):
            expect(dialog).to_contain_text(words)
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert page.errors == []
        page.close()


def test_phone_link_shows_a_qr_code_on_the_laptop_page(browser, server):
    from webui.phone import PHONE_URLS

    page = open_page(browser, server.url, csp=True)
    page.click("#phone-open")  # served on this computer only: it says how to share the table
    expect(page.locator("#phone-body")).to_contain_text("--host 0.0.0.0")
    page.keyboard.press("Escape")
    server.app.extensions[PHONE_URLS] = ["http://192.168.1.20:8650/?token=" + "t" * 32]
    page.click("#phone-open")
    expect(page.locator("#phone-body .qr svg")).to_be_visible()
    expect(page.locator("#phone-body")).to_contain_text("http://192.168.1.20:8650/?token=")
    box = page.locator("#phone-body .qr svg").bounding_box()
    assert box["width"] >= 150 and abs(box["width"] - box["height"]) < 1  # big enough to scan, square
    shot(page, "webui-phone-link-laptop")
    assert page.errors == []
    page.close()


def test_tap_targets_are_at_least_44_px_on_a_phone(browser, server):
    page = open_page(browser, server.url, viewport=PHONE, scale=2)
    page.click('g.disk[data-disk="d1"]')
    expect(page.locator("#fix")).to_be_visible()
    small = page.evaluate("""() => [...document.querySelectorAll(
        'header button, header a, .tabs button, #disk-info button, #disk-info select, #disk-info input[type=text], #disk-info [data-disk]')]
      .filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden')
      .map((e) => ({ id: e.id || e.textContent.trim().slice(0, 20), h: e.getBoundingClientRect().height }))
      .filter((b) => b.h < 44)""")
    assert small == []
    page.close()


# For every point of the table: the disk the page gives a tap to, against the topmost disk lying there (scene).
_TAP_OWNERS = """() => {
  const svg = document.getElementById('table'), m = svg.getScreenCTM(), r = svg.getBoundingClientRect();
  const disks = [...document.querySelectorAll('g.disk')].map((g) => {
    const c = g.querySelector('circle');
    return { id: g.dataset.disk, x: +c.getAttribute('cx'), y: +c.getAttribute('cy'), r: +c.getAttribute('r') };
  });  // drawn bottom to top
  const mmPerPx = 1 / m.a, wrong = [];
  for (let sy = r.top + 3; sy < r.bottom; sy += 5) for (let sx = r.left + 3; sx < r.right; sx += 5) {
    const p = new DOMPoint(sx, sy).matrixTransform(m.inverse());
    let top = null, nearEdge = false;
    for (const d of disks) {
      const dist = Math.hypot(p.x - d.x, p.y - d.y);
      if (Math.abs(dist - d.r) < 1.5 * mmPerPx) nearEdge = true;
      if (dist < d.r) top = d.id;
    }
    if (nearEdge) continue;
    const el = document.elementFromPoint(sx, sy), g = el && el.closest('g.disk');
    const got = g ? g.dataset.disk : null;
    if (got !== top) wrong.push([Math.round(p.x), Math.round(p.y), top, got, el && el.getAttribute('class')]);
  }
  return wrong;
}"""


def test_decorations_never_take_a_tap_meant_for_a_disk(browser, server):
    """Harried rings, outlines, line-of-sight crosses and fight marks are drawn around and over disks: a tap on a
    disk's own area goes to that disk (the topmost there), and a tap beside every disk goes to none of them."""
    v = server.app.extensions["tablesight.webui"].view()
    assert v.report.harried  # the test scene has a harried disk, ringed
    for viewport in (LAPTOP, PHONE):
        page = open_page(browser, server.url, viewport=viewport)
        page.click('g.disk[data-disk="d1"]')  # range colours, line-of-sight marks and lines drawn too
        expect(page.locator("#disk-info h2")).to_be_visible()
        assert page.evaluate(_TAP_OWNERS) == []
        page.close()


def test_a_tap_just_beside_a_small_disk_selects_it_on_a_phone(browser, server):
    page = open_page(browser, server.url, viewport=PHONE, scale=2)
    # A point 15 px outside the smallest disk's edge, on the side away from every other disk and terrain piece.
    target = page.evaluate("""() => {
      const svg = document.getElementById('table'), m = svg.getScreenCTM();
      const disks = [...document.querySelectorAll('g.disk')].map((g) => {
        const c = g.querySelector('circle');
        return { id: g.dataset.disk, x: +c.getAttribute('cx'), y: +c.getAttribute('cy'), r: +c.getAttribute('r') };
      });
      const small = disks.reduce((a, b) => (b.r < a.r ? b : a));
      for (let k = 0; k < 16; k++) {
        const t = (2 * Math.PI * k) / 16, reach = small.r + 15 / m.a;
        const p = new DOMPoint(small.x + reach * Math.cos(t), small.y + reach * Math.sin(t)).matrixTransform(m);
        const el = document.elementFromPoint(p.x, p.y);
        const clear = disks.every((d) => d === small || Math.hypot(small.x + reach * Math.cos(t) - d.x, small.y + reach * Math.sin(t) - d.y) - d.r > 30 / m.a);
        const free = el && svg.contains(el) && !el.closest('g.disk, [data-terrain]');
        if (free && clear) return { id: small.id, x: p.x, y: p.y, rpx: small.r * m.a };
      }
      return null;
    }""")
    assert target is not None and target["rpx"] < 22  # smaller than a fingertip on this screen
    page.mouse.click(target["x"], target["y"])
    expect(page.locator("#disk-info .sub").first).to_contain_text(f"disk {target['id']}")
    page.close()


def _screen(page, x_mm, y_mm):
    """The screen point of a table point (mm)."""
    return page.evaluate(f"""() => {{
      const p = new DOMPoint({x_mm}, {y_mm}).matrixTransform(document.getElementById('table').getScreenCTM());
      return [p.x, p.y];
    }}""")


def test_ruler_measures_edge_to_edge_between_disks_and_points(browser, server):
    v = server.app.extensions["tablesight.webui"].view()
    pair = v.report.pair("d5", "d7")
    page = open_page(browser, server.url)
    page.click("#ruler-toggle")
    expect(page.locator("#ruler-readout")).to_contain_text("tap or drag")
    # Two taps on two disks: the report's own edge-to-edge distance and band; nothing gets selected.
    page.mouse.click(*_screen(page, 700, 160))
    page.mouse.click(*_screen(page, 150, 200))
    readout = page.locator("#ruler-readout")
    expect(readout).to_contain_text(f"{round(pair.distance_mm)} mm edge to edge, {pair.band}")
    expect(page.locator("text.ruler-label")).to_have_text(f"{round(pair.distance_mm)} mm · {pair.band}")
    expect(page.locator("#disk-hint")).to_be_visible()
    # A drag from a disk to a bare point of the table: from the disk's edge to the point.
    a, b = _screen(page, 640, 700), _screen(page, 640, 832)  # d6 (r 32) to 100 mm below its edge
    page.mouse.move(*a)
    page.mouse.down()
    page.mouse.move(*b, steps=5)
    page.mouse.up()
    expect(readout).to_contain_text("mm edge to edge, short")
    mm = int(readout.inner_text().split(": ")[1].split(" mm")[0])
    assert abs(mm - 100) <= 2  # a pixel of the pointer is about a millimetre here
    # Off again: taps select disks as before.
    page.click("#ruler-toggle")
    expect(readout).to_be_hidden()
    page.click('g.disk[data-disk="d7"]')
    expect(page.locator("#disk-info .sub").first).to_contain_text("disk d7")
    page.close()
