"""The game on the page, in a real browser: the armies set up from a table whose owners are unknown (one tap per
army), round and phase always in sight, command cards, the disks that may still activate ringed on the table, the
melee recorded once (a reload cannot record it twice), the end phase clearing tokens, victory points and
casualties, undo, keyboard shortcuts, and the game surviving a reload and a server restart. Every wait is for a state the page shows, never a fixed sleep."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rules.diskwars.shooting import activated_in_book
from rules.diskwars.turn import activation_status
from webui.feeds import SceneFileFeed

from test_webui_browser import CHROMIUM, LAPTOP, PHONE, Server, browser, click_shape, open_page  # noqa: F401 (browser: a fixture)
from test_webui_browser import shot_from_top as shot
from armies_scene import write_unknown_owner_scene
from test_webui_armies_browser import set_up_armies

HERE = Path(__file__).parent

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]


def may_activate(server) -> list[str]:
    """What the rules say, computed here from the server's own view and book: the page must ring exactly these."""
    v = server.app.extensions["tablesight.webui"].view()
    book = server.app.extensions["tablesight.book"].state()
    return sorted(s.disk for s in activation_status(v.scene, v.report, activated_in_book(book)) if s.may_activate)


def ringed(page) -> list[str]:
    rings = page.locator("#game-marks circle.may-activate")
    return sorted(rings.nth(i).get_attribute("data-disk") for i in range(rings.count()))


def wait_phase(page, round_, phase):
    page.wait_for_selector(f'#game-phase[data-phase="{phase}"]')
    page.wait_for_function(f"document.querySelector('#game-round b').textContent === '{round_}'")


def book_changed(page, before: str) -> None:
    page.wait_for_function(f"document.body.dataset.bookEvents !== '{before}'")


def press(page, key):
    before = page.evaluate("document.body.dataset.bookEvents")
    page.keyboard.press(key)
    book_changed(page, before)


def walk_the_melee(page):
    page.keyboard.press("m")
    page.click("#melee-start")
    page.wait_for_selector("#melee-next")
    while page.locator("#melee-next").is_enabled():
        page.click("#melee-next")
    page.wait_for_selector("#melee-record")


def test_a_whole_game_on_the_page_with_a_reload_and_a_server_restart(browser, tmp_path):
    # The table as the camera first sees it: every owner unknown, each disk with its border colour.
    scene_file = tmp_path / "scene.json"
    truth = write_unknown_owner_scene(scene_file)
    data = tmp_path / "data"
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), data)
    try:
        page = open_page(browser, server.url)
        # Set up the armies: one tap per army (the skirmish's owners, as corrections).
        assert len(set_up_armies(page, server, truth)) == 2
        page.wait_for_selector("#game-bar-new")  # no game yet: the bar says so and offers to start one
        page.click("#game-bar-new")
        wait_phase(page, "1", "activation")
        page.keyboard.press("g")
        page.wait_for_selector("#pane-game:not([hidden]) #game-reveal")
        assert "N" in page.locator("#game-keys").inner_text()  # the shortcuts are shown on the page

        # Command cards (RB p.7): orcs (first player) Bold, empire Cunning: Cunning resolves first.
        page.select_option("#card-orcs", "bold")
        page.select_option("#card-empire", "cunning")
        page.click("#game-reveal")
        page.wait_for_selector("#game-card-now")
        assert "empire" in page.locator("#game-card-now").inner_text()
        assert "empire" in page.locator("#game-turn").inner_text()

        # The table rings exactly the disks that may activate (RB p.8: not pinned, not activated).
        expected = may_activate(server)
        assert expected and "d1" not in expected  # d1 carries an activation token in the scene
        page.wait_for_function(f"document.querySelectorAll('#game-marks circle.may-activate').length === {len(expected)}")
        assert ringed(page) == expected
        shot(page, "webui-game-activation-laptop")

        # Select an empire disk on the table and activate it with the keyboard.
        empire_disk = next(d for d in expected
                           if server.app.extensions["tablesight.webui"].view().scene.disk(d).player == "empire")
        click_shape(page, f'g.disk[data-disk="{empire_disk}"]')
        press(page, "a")
        page.wait_for_function(
            f"!document.querySelector('#game-marks circle.may-activate[data-disk=\"{empire_disk}\"]')")
        assert ringed(page) == may_activate(server) and empire_disk not in ringed(page)
        press(page, "d")  # empire's card resolved: orcs' turn
        page.wait_for_function("document.querySelector('#game-turn').textContent.includes('orcs')")

        # A reload shows the same game: round, phase, whose card, the rings.
        page.reload()
        page.wait_for_selector("g.disk")
        wait_phase(page, "1", "activation")
        page.wait_for_function("document.querySelector('#game-turn').textContent.includes('orcs')")
        page.wait_for_function(f"document.querySelectorAll('#game-marks circle.may-activate').length === "
                               f"{len(may_activate(server))}")
        press(page, "d")

        # The melee phase: the fights are walked in the Melee tab and recorded once, even after a reload.
        press(page, "n")
        wait_phase(page, "1", "melee")
        assert page.locator("#game-marks").count() == 0  # no activation rings outside the activation phase
        walk_the_melee(page)
        page.click("#melee-record")
        page.wait_for_function("/Recorded|Not recorded/.test(document.querySelector('#melee-record').textContent)")
        assert "Recorded" in page.locator("#melee-record").inner_text()
        book = server.app.extensions["tablesight.book"].state()
        assert book["melee_recorded"]
        lost = {p["id"]: p["casualties"] for p in book["players"]}
        vp = {p["id"]: p["victory_points"] for p in book["players"]}
        page.reload()
        page.wait_for_selector("g.disk")
        wait_phase(page, "1", "melee")
        walk_the_melee(page)  # after a reload the page knows from the book: no second record is offered
        page.wait_for_selector("#melee-record:disabled")
        assert "in the game book" in page.locator("#melee-record").inner_text()
        # Even a request made by hand is refused by the book, which stays as it was.
        assert "already recorded" in page.evaluate(
            "fetch('/api/book/melee', {method: 'POST', headers: {'Content-Type': 'application/json',"
            " 'X-Tablesight-Token': document.querySelector('meta[name=\"tablesight-write-key\"]').content},"
            " body: '{}'}).then((r) => r.json()).then((d) => d.error)")
        assert server.app.extensions["tablesight.book"].state()["casualty_piles"] == book["casualty_piles"]
        page.keyboard.press("g")
        page.wait_for_selector("#pane-game:not([hidden]) #game-melee-state")
        assert "recorded" in page.locator("#game-melee-state").inner_text()
        shot(page, "webui-game-melee-laptop")
        for pid in ("orcs", "empire"):  # victory points and casualties per player, in the bar and the panel
            row = page.locator(f'#game-players tr[data-player="{pid}"]')
            assert row.locator(".vp").inner_text() == str(vp[pid])
            assert row.locator(".lost").inner_text() == str(lost[pid])
            assert f"{vp[pid]} VP" in page.locator(f'#game-bar .game-score[data-player="{pid}"]').inner_text()

        # End phase: every token but wounds comes off (RB p.10); undo brings the melee phase back.
        press(page, "n")
        wait_phase(page, "1", "end")
        assert all(d["activation"] == 0 and d["damage"] == 0 and d["power"] == 0
                   for d in server.app.extensions["tablesight.book"].state()["disks"])
        press(page, "u")
        wait_phase(page, "1", "melee")
        press(page, "n")
        wait_phase(page, "1", "end")
        page.close()
    finally:
        server.close()

    # The server restarts on the same data directory: the game goes on where it was.
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), data)
    try:
        page = open_page(browser, server.url, viewport=PHONE)
        wait_phase(page, "1", "end")
        # The reserve and a scenario point, entered on the page (RB p.11, 13).
        page.keyboard.press("g")
        page.click("#game-reserve-box summary")
        page.fill("#reserve-empire", "knights, handgunners")
        before = page.evaluate("document.body.dataset.bookEvents")
        page.click('[data-reserve="empire"]')
        book_changed(page, before)
        page.wait_for_function("document.querySelector('#game-players tr[data-player=\"empire\"] .reserve').textContent === '2'")
        before = page.evaluate("document.body.dataset.bookEvents")
        page.click('[data-vp="orcs"]')
        book_changed(page, before)
        state = server.app.extensions["tablesight.book"].state()
        vp_before = {p["id"]: p["victory_points"] for p in state["players"]}
        assert state["reserves"]["empire"] == ["knights", "handgunners"] and state["awards"][-1]["player"] == "orcs"
        shot(page, "webui-game-end-phone", full=True)
        for r in range(2, 6):
            press(page, "n")
            wait_phase(page, str(r), "activation")
            press(page, "n")
            wait_phase(page, str(r), "melee")
            press(page, "n")
            wait_phase(page, str(r), "end")
        page.wait_for_function("document.querySelector('#game-turn').textContent.includes('Game over')")
        state = server.app.extensions["tablesight.book"].state()
        assert state["game_over"] and state["result"]["winner"] in page.locator("#game-turn").inner_text()
        # After round 5 the reserve went to the casualty pile: one point each for orcs (RB p.11).
        assert {p["id"]: p["victory_points"] for p in state["players"]}["orcs"] == vp_before["orcs"] + 2
        assert [c["disk"] for c in state["casualty_piles"]["empire"] if c.get("from_reserve")] == ["knights", "handgunners"]
        page.keyboard.press("g")
        page.wait_for_selector("#pane-game:not([hidden]) #game-over")
        shot(page, "webui-game-over-phone", full=True)
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()


def test_the_game_bar_is_in_sight_on_a_laptop_and_a_phone(browser, tmp_path):
    scene_file = tmp_path / "scene.json"
    shutil.copy(HERE / "scene_webui_skirmish.json", scene_file)
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        server.app.extensions["tablesight.book"].new_game(["orcs", "empire"])
        for viewport in (LAPTOP, PHONE):
            page = open_page(browser, server.url, viewport=viewport, csp=True)  # the page's own CSP holds
            wait_phase(page, "1", "activation")
            box = page.locator("#game-bar").bounding_box()
            assert box["y"] + box["height"] <= viewport["height"] and box["width"] <= viewport["width"]
            # A ring never takes a tap meant for a disk: clicking a ringed disk selects it.
            first = ringed(page)[0] if page.locator("#game-marks circle").count() else None
            if first:
                page.click(f'g.disk[data-disk="{first}"]')
                page.wait_for_selector("#sel-ring")
            assert not page.errors, page.errors
            page.close()
    finally:
        server.close()


def test_shoot_from_the_page_rings_targets_by_band_and_marks_cover(browser, tmp_path):
    import json

    from rules.diskwars.shooting import ranged_attack

    doc = json.loads((HERE / "scene_webui_skirmish.json").read_text())
    for d in doc["disks"]:  # d7 on the forest (Cover), d6 behind it (no line of sight from d5)
        if d["id"] == "d7":
            d["x_mm"], d["y_mm"] = 280, 440
        if d["id"] == "d6":
            d["x_mm"], d["y_mm"] = 170, 560
    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(doc))
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_page(browser, server.url)
        v = server.app.extensions["tablesight.webui"].view()
        expected = ranged_attack(v.scene, "d5", report=v.report)  # what `tablesight shoot` prints
        click_shape(page, 'g.disk[data-disk="d5"]')
        page.wait_for_selector("#game-bar-shoot")
        page.keyboard.press("s")
        page.wait_for_selector("#pane-game:not([hidden]) #game-shot-title")
        # the rings are drawn when the shot's answer arrives, which may come after its title on a busy machine
        page.wait_for_function("n => document.querySelectorAll('#game-marks circle.shot-target').length === n",
                               arg=len(expected.targets))
        rings = page.locator("#game-marks circle.shot-target")
        shown = {rings.nth(i).get_attribute("data-disk"): rings.nth(i).get_attribute("data-band")
                 for i in range(rings.count())}
        assert shown == {t.target: t.band for t in expected.targets}
        covers = page.locator("#game-marks text.shot-cover")
        assert [covers.nth(i).get_attribute("data-disk") for i in range(covers.count())] == \
            [t.target for t in expected.targets if t.cover] == ["d7"]
        assert page.locator('#game-marks circle.shot-not[data-disk="d6"]').count() == 1  # no line of sight
        assert "cover" in page.locator('#game-shot-targets tr[data-target="d7"]').inner_text()
        shot(page, "webui-game-shoot-laptop")
        page.keyboard.press("Escape")
        page.wait_for_function("!document.querySelector('#game-marks circle.shot-target')")
        # A pinned disk cannot shoot (RB p.8): the reason, and no targets ringed.
        click_shape(page, 'g.disk[data-disk="d2"]')
        page.wait_for_selector("#game-bar-shoot")
        page.click("#game-bar-shoot")
        page.wait_for_selector("#game-shot-why")
        assert "pinned by d3" in page.locator("#game-shot-why").inner_text()
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()


def test_a_move_between_two_stable_scenes_is_shown_until_dismissed(browser, tmp_path):
    import json

    from rules.diskwars.movement import move_consequences
    from tablesight.scene import Scene

    doc = json.loads((HERE / "scene_webui_skirmish.json").read_text())
    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(doc))
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_page(browser, server.url)
        key = page.evaluate("document.body.dataset.viewKey")
        # d7 (orcs) flips from (150, 200) onto d1 (empire) at (420, 300): 266 mm, on top of it.
        moved = json.loads(json.dumps(doc))
        for d in moved["disks"]:
            if d["id"] == "d7":
                d["x_mm"], d["y_mm"], d["z"] = 400, 290, 3
        scene_file.write_text(json.dumps(moved))
        page.wait_for_function(f"document.body.dataset.viewKey !== '{key}'")
        page.wait_for_selector("#game-move")
        assert page.evaluate("document.body.dataset.moveChecked").endswith(":d7")
        expected = move_consequences(Scene.from_json(doc), Scene.from_json(moved))
        text = page.locator("#game-move").inner_text()
        assert expected.moved == "d7" and f"{expected.flips_needed} flips" in text
        assert [p.disk for p in expected.newly_pinned] == ["d1"] and "pins Empire Swordsmen (d1) (enemy)" in text
        shot(page, "webui-game-move-laptop")
        page.click("#game-move-dismiss")
        page.wait_for_function("!document.querySelector('#game-move')")
        # Two disks moved at once: not one move, nothing shown.
        key = page.evaluate("document.body.dataset.viewKey")
        both = json.loads(json.dumps(moved))
        for d in both["disks"]:
            if d["id"] in ("d5", "d4"):
                d["x_mm"] += 60
        scene_file.write_text(json.dumps(both))
        page.wait_for_function(f"document.body.dataset.viewKey !== '{key}'")
        version = page.evaluate("document.body.dataset.viewKey").split(".")[0]
        page.wait_for_function(f"document.body.dataset.moveChecked === '{version}:none'")
        assert page.locator("#game-move").count() == 0
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()


def test_the_deployment_check_rings_the_disks_that_break_it(browser, tmp_path):
    import json

    from rules.diskwars.deployment import check_deployment

    doc = json.loads((HERE / "scene_webui_skirmish.json").read_text())
    doc.pop("deployment_zones", None)  # no zones in the scene: the players give their edges on the page
    scene_file = tmp_path / "scene.json"
    scene_file.write_text(json.dumps(doc))
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_page(browser, server.url)
        page.keyboard.press("g")
        page.click("#game-deploy-box summary")
        page.select_option("#edge-orcs", "bottom")
        page.select_option("#edge-empire", "top")
        page.click("#game-deploy")
        page.wait_for_selector("#game-deploy-result")
        v = server.app.extensions["tablesight.webui"].view()
        expected = check_deployment(v.scene, edges={"orcs": "bottom", "empire": "top"})
        bad = page.locator("#game-marks circle.deploy-bad")
        assert sorted(bad.nth(i).get_attribute("data-disk") for i in range(bad.count())) == \
            sorted(d.disk for d in expected.disks if not d.ok)
        assert page.locator("#game-marks polygon.deploy-zone").count() == len(expected.zones) == 2
        assert "on an enemy zone" in page.locator('#game-deploy-result .call[data-disk="d7"]').inner_text()
        shot(page, "webui-game-deploy-laptop")
        page.click("#game-deploy-close")
        page.wait_for_function("!document.querySelector('#game-marks circle.deploy-bad')")
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()
