"""A stack of three on the page, in a real browser, on a laptop and a phone: every disk labelled, no two labels
overlapping (labels moved off a covered or small disk carry a leader line), and the lens listing the stack bottom
to top with each disk's role from the report. Every wait is for a state the page shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from webui.feeds import SceneFileFeed

from test_webui_browser import CHROMIUM, LAPTOP, PHONE, Server, browser, click_shape, open_page, scene_file  # noqa: F401 (fixtures)
from test_webui_browser import shot as page_shot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

STACK = ["d1", "d2", "d3"]  # the skirmish's stack of three, bottom to top (z 0, 1, 2)


def rects(page, selector):
    return page.evaluate(f"""[...document.querySelectorAll({selector!r})].map((e) => {{
        const r = e.getBoundingClientRect(); return {{id: e.closest('[data-disk]').dataset.disk, x0: r.left, y0: r.top,
        x1: r.right, y1: r.bottom}}; }})""")


def overlapping(boxes):
    return [(a["id"], b["id"]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]]


def expected_roles(server):
    rep = server.app.extensions["tablesight.webui"].view().report
    out = {}
    for d in STACK:
        roles = []
        if any(p.pinned == d for p in rep.pins):
            roles.append("pinned")
        if any(p.pinner == d for p in rep.pins):
            roles.append("pinning")
        if d in rep.harried:
            roles.append("harried")
        out[d] = " ".join(roles)
    return out


@pytest.mark.parametrize("viewport, name", [(LAPTOP, "laptop"), (PHONE, "phone")])
def test_a_stack_of_three_is_legible_and_its_lens_lists_it_bottom_to_top(browser, scene_file, tmp_path, viewport, name):
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_page(browser, server.url, viewport=viewport, csp=True)
        scene = server.app.extensions["tablesight.webui"].view().scene
        assert [d.id for d in sorted(scene.disks, key=lambda d: d.z) if d.id in STACK] == STACK
        # every disk has a label, and no two labels overlap
        labels = rects(page, "g.disk-label text.label-text")
        assert sorted(b["id"] for b in labels) == sorted(d.id for d in scene.disks)
        assert overlapping(labels) == []
        # a label moved off its disk has a leader line to it
        for lab in page.locator('g.disk-label[data-leader="1"]').all():
            assert lab.locator("line.label-leader").count() == 1
        assert page.locator('g.disk-label[data-leader="1"]').count() >= 1  # the covered disks of the stack at least

        # a tap on the middle disk opens the lens: bottom to top, with each disk's role
        click_shape(page, 'g.disk[data-disk="d2"]')
        page.wait_for_selector("#lens:not([hidden]) #lens-list li")
        rows = page.locator("#lens-list li")
        assert [rows.nth(i).get_attribute("data-disk") for i in range(rows.count())] == STACK
        roles = expected_roles(server)
        assert {r.get_attribute("data-disk"): r.get_attribute("data-roles") for r in rows.all()} == roles
        assert roles["d2"] == "pinned pinning harried"  # the middle of the stack is all three
        assert "bottom" in rows.nth(0).inner_text() and "top" in rows.nth(2).inner_text()
        assert "pinned by d3" in rows.nth(1).inner_text() and "harried" in rows.nth(1).inner_text()
        # drawn enlarged: the three numbered, none hiding another
        numbers = rects(page, "#lens-svg g.lens-number")
        assert sorted(n["id"] for n in numbers) == STACK and overlapping(numbers) == []
        lens = page.locator("#lens-svg").bounding_box()
        table_px_per_mm = page.locator("#table").bounding_box()["width"] / float(page.get_attribute("#table", "viewBox").split()[2])
        lens_px_per_mm = lens["width"] / float(page.get_attribute("#lens-svg", "viewBox").split()[2])
        assert lens_px_per_mm > 1.5 * table_px_per_mm  # enlarged
        if viewport is PHONE:
            page.locator("#lens").scroll_into_view_if_needed()
            for b in page.locator("#lens button").all():
                assert b.bounding_box()["height"] >= 44
        page.evaluate("window.scrollTo(0, 0)")  # a full-page shot from the top (the sticky header stays on top)
        page_shot(page, f"webui-lens-{name}", full=viewport is PHONE)

        # a tap on a line selects that disk; the lens stays on the stack
        page.click('#lens-list button[data-disk="d3"]')
        page.wait_for_selector('#lens-list li[data-disk="d3"][aria-current="true"]')
        assert page.evaluate("document.body.dataset.lens") == " ".join(STACK)
        page.click("#lens-close")
        page.wait_for_selector("#lens", state="hidden")
        page.evaluate("window.scrollTo(0, 0)")  # the table in sight again, not under the phone's sticky header
        click_shape(page, 'g.disk[data-disk="d1"]')  # a new tap opens it again
        page.wait_for_selector("#lens:not([hidden])")
        page.keyboard.press("Escape")  # no selection: no lens
        page.wait_for_selector("#lens", state="hidden")
        click_shape(page, 'g.disk[data-disk="d5"]')  # a disk on its own has no lens
        page.wait_for_selector("#sel-ring")
        assert page.locator("#lens").is_hidden()
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()
