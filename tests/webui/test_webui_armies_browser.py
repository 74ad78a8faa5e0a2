"""Setting up the armies on the page, in a real browser: a table whose every owner is unknown opens on the
*Armies* tab, one tap per army names every disk of it, unit names come by typing their first letters, and *Save
table* downloads a scene file that reopens the same table. Every wait is for a state the page shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from armies_scene import write_unknown_owner_scene
from tablesight.scene import Scene
from webui.feeds import SceneFileFeed

from test_webui_browser import CHROMIUM, LAPTOP, PHONE, Server, browser, open_page  # noqa: F401 (browser: a fixture)
from test_webui_browser import shot as page_shot
from test_webui_browser import shot_from_top as shot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]


def set_up_armies(page, server, truth):
    """One tap per army on the Armies tab (opened by itself: every owner is unknown); returns the requests made."""
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and "/api/armies/owner" in r.url else None)
    page.wait_for_selector("#pane-armies:not([hidden]) .army")
    cards = page.locator("#pane-armies .army")
    wanted = []
    for i in range(cards.count()):
        disks = cards.nth(i).get_attribute("data-disks").split()
        owners = {truth[d] for d in disks}
        assert len(owners) == 1, (disks, owners)  # each army the page shows is one true army
        wanted.append((i, disks, owners.pop()))
    armies = [w for w in wanted if w[2] is not None]
    assert len(armies) == 2 and all(len(d) == 3 for _, d, _ in armies)
    assert "These 3 are one army — whose?" in cards.nth(armies[0][0]).inner_text()
    for i, disks, player in armies:
        page.click(f'#pane-armies .army-owner[data-army="{i}"][data-player="{player}"]')
        page.wait_for_selector(f'#pane-armies .army[data-army="{i}"][data-player="{player}"]')
    page.wait_for_function("document.body.dataset.armiesUnowned === '1'")  # d6: no army's colour, left unknown
    return posts


def test_one_tap_per_army_names_every_disk_and_units_come_by_first_letters(browser, tmp_path):
    scene_file = tmp_path / "scene.json"
    truth = write_unknown_owner_scene(scene_file)
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_page(browser, server.url)
        page.wait_for_selector("#pane-armies:not([hidden]) .army")
        # while the tab is open each disk is ringed in its army's colour; the rings take no tap
        page.wait_for_function("document.querySelectorAll('#army-marks circle.army-ring').length === 14")
        shot(page, "webui-armies-laptop")
        posts = set_up_armies(page, server, truth)
        assert len(posts) == 2  # one request per army, not per disk
        scene = server.app.extensions["tablesight.webui"].view().scene
        assert {d.id: d.player for d in scene.disks} == truth
        stored = server.app.extensions["tablesight.webui"].corrections.to_json()["disks"]
        assert {k: v["player"] for k, v in stored.items()} == {k: v for k, v in truth.items() if v}
        # the disks are outlined in their player's colour on the table now
        page.wait_for_function("!document.querySelector('g.disk[data-disk=\"d1\"] circle.outline').getAttribute('stroke-dasharray')")

        # d7's unit by its first letters: "orc b" offers the catalog's units whose name or alias starts so
        orcs = page.locator('#pane-armies .army[data-player="orcs"]')
        orcs.locator("summary").click()
        page.fill("#unit-in-d7", "orc b")
        page.wait_for_selector("#unit-list-d7:not([hidden]) li[data-key]")
        assert page.locator("#unit-list-d7 li[data-key]").first.get_attribute("data-key") == "pena-de-guerreroz-orkoz"
        assert page.get_attribute("#unit-in-d7", "aria-expanded") == "true"
        shot(page, "webui-armies-units-laptop")
        page.keyboard.press("Enter")
        page.wait_for_function("document.querySelector('#armies-msg').textContent.includes('d7')")
        assert server.app.extensions["tablesight.webui"].view().scene.disk("d7").unit == "pena-de-guerreroz-orkoz"

        # Save table: a scene file with the owners and units, that reopens as the same table
        with page.expect_download() as dl:
            page.click("#save-table")
        saved = tmp_path / "saved.scene.json"
        dl.value.save_as(saved)
        reopened = Scene.from_json(json.loads(saved.read_text()))
        assert {d.id: d.player for d in reopened.disks} == truth
        assert reopened.disk("d7").unit == "pena-de-guerreroz-orkoz"
        assert not page.errors, page.errors
        page.close()

        # on a phone: the same tab, its controls a fingertip tall
        page = open_page(browser, server.url, viewport=PHONE)
        page.click("#tab-armies")
        page.wait_for_selector("#pane-armies:not([hidden]) .army")
        for b in page.locator("#pane-armies .army-owner").all():
            assert b.bounding_box()["height"] >= 44
        page.locator("#pane-armies").scroll_into_view_if_needed()
        page_shot(page, "webui-armies-phone", full=True)
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()


def test_the_demo_table_seen_by_the_eye_is_set_up_with_one_tap_per_army(browser, tmp_path):
    """The real pipeline: the demo's rendered frame detected by the eye knows no owner; the page's armies are the
    true armies (matched to the truth as the truth overlay does), and one tap each names them all."""
    from vision.scene_match import match
    from webui.demo_eye import DemoEyeFeed

    feed = DemoEyeFeed(item_s=600.0)  # the first still table only: nothing moves while the test looks
    server = Server(feed, tmp_path / "data")
    try:
        page = open_page(browser, server.url)
        page.wait_for_selector("#pane-armies:not([hidden]) .army")
        page.wait_for_selector("#army-marks circle.army-ring")
        scene, truth = feed.state().scene, feed.truth_for(feed.state().version)
        true_owner = {d: truth.disk(t).player for d, t in match(truth, scene).items()}
        cards = page.locator("#pane-armies .army")
        assert cards.count() == 2
        shot(page, "webui-armies-demo-laptop")
        for i in range(2):
            disks = cards.nth(i).get_attribute("data-disks").split()
            owners = {true_owner[d] for d in disks if d in true_owner}
            assert len(owners) == 1
            player = owners.pop()
            page.click(f'#pane-armies .army-owner[data-army="{i}"][data-player="{player}"]')
            page.wait_for_selector(f'#pane-armies .army[data-army="{i}"][data-player="{player}"]')
        owned = {d.id: d.player for d in server.app.extensions["tablesight.webui"].view().scene.disks}
        assert all(owned[d] == p for d, p in true_owner.items())
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()
