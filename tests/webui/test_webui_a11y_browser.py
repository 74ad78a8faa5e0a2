"""The page for a screen reader and a keyboard, in a real browser: every control shown, in every tab, pane and
dialog, on a laptop and a phone, is exposed with a control's role and a non-empty name in Chromium's own
accessibility tree (what a screen reader reads), and can be reached with Tab; Tab reaches each tab of the panel
and Enter or Space opens it; the keyboard shortcuts of docs/webui.md do what they say.

A control is any element a player can act on: button, link, field, menu, disclosure, anything with a button role
or a tab stop, and any element the page's scripts gave a click handler (caught as they are attached, so a
clickable name or card that only a mouse can use is found too). The table's canvas itself is not one: its taps go
to the disks and terrain pieces, which are controls.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from webui.feeds import SceneFileFeed

from test_webui_browser import CHROMIUM, LAPTOP, PHONE, Server, browser, click_shape  # noqa: F401 (browser: a fixture)
from armies_scene import write_unknown_owner_scene
from test_webui_armies_browser import set_up_armies

HERE = Path(__file__).parent

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

INTERACTIVE = ("button, a[href], input, select, textarea, summary, [role=button], [role=option], [role=tab], "
               "[tabindex]:not([tabindex^='-'])")
# Roles a screen reader announces as something to act on (Chromium's names for them).
CONTROL_ROLES = {"button", "link", "tab", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch",
                 "slider", "spinbutton", "option", "menuitem", "DisclosureTriangle", "PopUpButton", "ListBox"}

# Before the page's scripts: remember every element that is given a click handler.
CLICKS = """
window.__clickable = new WeakSet();
const add = EventTarget.prototype.addEventListener;
EventTarget.prototype.addEventListener = function (type, ...rest) {
  if (type === "click" && this instanceof Element) window.__clickable.add(this);
  return add.call(this, type, ...rest);
};
"""

# The controls shown now, in document order, each tagged for the accessibility tree's lookup below.
SHOWN = """([selector, skip]) => {
  for (const e of document.querySelectorAll("[data-a11y-probe]")) e.removeAttribute("data-a11y-probe");
  const found = new Set(document.querySelectorAll(selector));
  for (const e of document.querySelectorAll("body *")) if (window.__clickable.has(e)) found.add(e);
  // on screen now: laid out, not hidden, not in a closed fold (content-visibility) or a closed dialog
  // (a modal dialog open: only its own controls; the page behind it is inert)
  const modal = document.querySelector("dialog:modal");
  const shown = (e) => !e.matches(skip) && (!modal || modal.contains(e))
    && e.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true});
  const out = [];
  const list = [...found].filter(shown).sort((a, b) => a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
  list.forEach((e, i) => {
    e.setAttribute("data-a11y-probe", String(i));
    const cls = typeof e.className === "string" ? e.className : (e.className && e.className.baseVal) || "";
    out.push({i, what: e.localName + (e.id ? "#" + e.id : "") + (cls ? "." + cls.trim().split(/\\s+/).join(".") : "")
                       + (e.dataset.disk ? `[data-disk=${e.dataset.disk}]` : ""),
              text: (e.textContent || "").trim().slice(0, 40), tabIndex: e.tabIndex,
              disabled: !!e.disabled, option: e.getAttribute("role") === "option"});
  });
  return out;
}"""


class Audit:
    """Checks the controls on a page against Chromium's accessibility tree (through the DevTools protocol)."""

    def __init__(self, page):
        self.page = page
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("DOM.enable")
        self.cdp.send("Accessibility.enable")
        self.problems: list[str] = []
        self.seen: dict[str, int] = {}

    def _tagged(self) -> tuple[list, list]:
        """The shown controls, tagged, and the DevTools nodes of those tags."""
        shown = self.page.evaluate(SHOWN, [INTERACTIVE, "svg#table"])
        root = self.cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = self.cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-a11y-probe]"})["nodeIds"]
        return shown, nodes

    def check(self, where: str) -> int:
        shown, nodes = self._tagged()
        # a redraw between the two looks (a server event landing after the last action) drops the tags: look
        # again once the page has had a moment to settle (a loaded machine sees it more often)
        for _ in range(5):
            if len(nodes) == len(shown):
                break
            self.page.wait_for_timeout(200)
            shown, nodes = self._tagged()
        assert len(nodes) == len(shown), where  # the page did not redraw between the two looks
        for node, c in zip(nodes, shown):
            attrs = self.cdp.send("DOM.getAttributes", {"nodeId": node})["attributes"]
            assert attrs[attrs.index("data-a11y-probe") + 1] == str(c["i"])
            ax = self.cdp.send("Accessibility.getPartialAXTree", {"nodeId": node, "fetchRelatives": False})["nodes"][0]
            role = (ax.get("role") or {}).get("value")
            name = str((ax.get("name") or {}).get("value") or "").strip()
            what = f"{where}: {c['what']} {c['text']!r}"
            if ax.get("ignored"):
                self.problems.append(f"{what}: shown but hidden from a screen reader")
            elif role not in CONTROL_ROLES:
                self.problems.append(f"{what}: announced as {role!r}, not as a control")
            elif not name:
                self.problems.append(f"{what}: no accessible name ({role})")
            if c["tabIndex"] < 0 and not c["disabled"] and not c["option"]:  # options: arrows from their field
                self.problems.append(f"{what}: not reachable with Tab")
            self.seen[role] = self.seen.get(role, 0) + 1
        return len(shown)


def open_audited(browser, url, viewport, scale):
    page = browser.new_page(viewport=viewport, device_scale_factor=scale, bypass_csp=True,
                            has_touch=viewport is PHONE)
    page.add_init_script(CLICKS)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("g.disk")
    page.errors = errors
    return page


def show_tab(page, tab):
    page.click(f"#tab-{tab}")
    page.wait_for_selector(f"#pane-{tab}:not([hidden])")


@pytest.mark.parametrize("viewport,scale", [(LAPTOP, 1), (PHONE, 2)], ids=["laptop", "phone"])
def test_a_screen_reader_names_every_control_in_every_pane_and_dialog(browser, tmp_path, viewport, scale):
    scene_file = tmp_path / "scene.json"
    truth = write_unknown_owner_scene(scene_file)  # every owner unknown: the Armies tab asks, then the game
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_audited(browser, server.url, viewport, scale)
        audit = Audit(page)
        counts = {}

        def look(where):
            counts[where] = audit.check(where)

        # The Armies tab opens by itself; its units fold with the catalog's suggestions.
        page.wait_for_selector("#pane-armies:not([hidden]) .army")
        look("armies: whose army")
        page.locator("#pane-armies details.army-units summary").first.click()
        first_unit = page.locator("#pane-armies input.unit-in").first
        first_unit.fill("or")
        page.wait_for_selector("#pane-armies .unit-list:not([hidden]) li[role=option]")
        look("armies: units by their first letters")
        first_unit.press("Escape")
        set_up_armies(page, server, truth)
        look("armies: named")

        # A disk on a stack: the disk panel, its corrections and the lens; the players' editor.
        click_shape(page, 'g.disk[data-disk="d3"]')
        page.wait_for_selector("#pane-disk:not([hidden]) #fix-owner")
        page.wait_for_selector("#lens-close")
        look("disk panel and lens")
        page.click("#fix-players-edit")
        page.wait_for_selector("#fix-players-row:not([hidden])")
        look("disk panel: players editor")
        page.keyboard.press("Escape")
        click_shape(page, 'polygon.terrain-shape[data-terrain="t2"]')
        page.wait_for_selector("#terrain-name")
        look("terrain panel")

        # Melee: the fights, then walked step by step (a menu where a disk picks whom it damages), recorded.
        show_tab(page, "melee")
        look("melee")
        page.click("#melee-start")
        page.wait_for_selector("#melee-next")
        while page.locator("#melee-next").is_enabled():
            page.click("#melee-next")
        page.wait_for_selector("#melee-record")
        look("melee: every step shown")
        show_tab(page, "calls")
        look("close calls")

        # The game: none yet, then the activation phase (cards, the folds), a card resolving, shooting.
        show_tab(page, "game")
        look("game: no game yet")
        page.click("#game-bar-new")
        page.wait_for_selector("#game-reveal")
        for summary in ("#game-reserve-box summary", "#game-deploy-box summary"):
            page.click(summary)
        page.wait_for_selector("#game-deploy-box[open] #game-deploy")
        look("game: activation, the cards to pick")
        page.select_option("#card-orcs", "bold")
        page.select_option("#card-empire", "cunning")
        page.click("#game-reveal")
        page.wait_for_selector("#game-card-now")
        page.wait_for_selector("#game-may [data-activate]")
        look("game: a card resolving")
        click_shape(page, 'g.disk[data-disk="d5"]')
        page.click("#game-bar-shoot")
        page.wait_for_selector("#pane-game:not([hidden]) #game-shot-title")
        look("game: shooting")
        page.click("#game-shot-close")

        # The header's tools: the ruler with a reading, the rules reference, the phone link (laptop).
        page.click("#ruler-toggle")
        for d in ("d1", "d5"):
            click_shape(page, f'g.disk[data-disk="{d}"]')
        page.wait_for_selector("#ruler-readout:not([hidden])")
        look("ruler")
        page.click("#ruler-toggle")
        page.click("#rules-open")
        page.wait_for_selector("#rules-dialog[open]")
        look("rules reference")
        page.keyboard.press("Escape")
        page.wait_for_selector("#rules-dialog:not([open])", state="attached")
        if page.locator("#phone-open").is_visible():
            page.click("#phone-open")
            page.wait_for_selector("#phone-dialog[open] #phone-body :is(p, div)")
            look("phone link")
            page.keyboard.press("Escape")

        # The calibration page, one link away.
        page.click("#calib-link")
        page.wait_for_load_state()
        page.wait_for_selector("main, body")
        look("calibration page")

        assert not audit.problems, "\n".join(audit.problems)
        # The walk saw what it meant to: the disks, the tabs, fields, menus, disclosures, links, options.
        assert {"button", "tab", "textbox", "combobox", "DisclosureTriangle", "link", "option"} <= set(audit.seen)
        assert all(counts.values()), counts
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()


def tab_to(page, predicate_js: str, limit: int = 400) -> bool:
    """Press Tab until the focused element satisfies `predicate_js` (a function of it); False if never."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"({predicate_js})(document.activeElement)"):
            return True
    return False


@pytest.mark.parametrize("viewport,scale", [(LAPTOP, 1), (PHONE, 2)], ids=["laptop", "phone"])
def test_tab_reaches_each_tab_and_enter_or_space_opens_it(browser, tmp_path, viewport, scale):
    scene_file = tmp_path / "scene.json"
    shutil.copy(HERE / "scene_webui_skirmish.json", scene_file)
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    try:
        page = open_audited(browser, server.url, viewport, scale)
        tabs = page.eval_on_selector_all(".tabs [role=tab]", "ts => ts.map((t) => t.id)")
        assert tabs == ["tab-disk", "tab-melee", "tab-calls", "tab-game", "tab-armies"]
        # From the page's start, in order, Enter and Space alternately; the Disk tab last (it is open at first).
        order = tabs[1:] + tabs[:1]
        for n, tab in enumerate(order):
            assert tab_to(page, f"(e) => e && e.id === {tab!r}"), f"Tab never reaches #{tab}"
            page.keyboard.press("Enter" if n % 2 == 0 else "Space")
            pane = page.get_attribute(f"#{tab}", "data-pane")
            page.wait_for_selector(f"#{pane}:not([hidden])")
            assert page.get_attribute(f"#{tab}", "aria-selected") == "true"
            assert page.eval_on_selector_all(".pane:not([hidden])", "ps => ps.map((p) => p.id)") == [pane]
        # A disk is reached with Tab too, and Enter selects it.
        assert tab_to(page, "(e) => e && e.matches && e.matches('g.disk[data-disk=\"d5\"]')")
        page.keyboard.press("Enter")
        page.wait_for_selector("#sel-ring")
        assert "d5" in page.locator("#disk-info").inner_text()
        # A name in the disk panel takes a tap: Tab reaches it, Space selects that disk (its panel follows).
        assert tab_to(page, "(e) => e && e.matches && e.matches('#disk-info .target[data-disk]')")
        other = page.evaluate("document.activeElement.dataset.disk")
        assert other != "d5"
        page.keyboard.press("Space")
        page.wait_for_function(f"document.querySelector('#disk-info .sub').textContent.includes('disk ' + {other!r})")
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()


def book_events(page) -> str:
    return page.evaluate("document.body.dataset.bookEvents")


def phase(page) -> tuple[str, str]:
    return (page.get_attribute("#game-phase", "data-phase"),
            page.locator("#game-round b").inner_text())


def test_the_documented_keyboard_shortcuts(browser, tmp_path):
    """Each key of the table in docs/webui.md, in the order a round uses them, on a laptop."""
    docs = (HERE.parent.parent / "docs" / "webui.md").read_text()
    documented = re.findall(r"^\| `([A-Z]|Esc)` \|", docs, flags=re.M)
    assert documented == ["N", "A", "S", "D", "M", "U", "G", "Esc"]
    scene_file = tmp_path / "scene.json"
    shutil.copy(HERE / "scene_webui_skirmish.json", scene_file)
    server = Server(SceneFileFeed(scene_file, poll_s=0.1), tmp_path / "data")
    book = server.app.extensions["tablesight.book"]
    try:
        page = open_audited(browser, server.url, LAPTOP, 1)
        page.wait_for_selector("#game-bar-new")
        done = set()

        def key(k, check):
            page.keyboard.press(k)
            check()
            done.add("Esc" if k == "Escape" else k.upper())

        # G opens the Game tab; N starts a game with the table's players.
        key("g", lambda: page.wait_for_selector("#pane-game:not([hidden])"))
        key("n", lambda: page.wait_for_selector('#game-phase[data-phase="activation"]'))
        assert book.state()["round"] == 1
        page.select_option("#card-orcs", "bold")
        page.select_option("#card-empire", "cunning")
        page.click("#game-reveal")
        page.wait_for_selector("#game-may [data-activate]")
        card = book.state()["card_turn"]
        mover = page.locator("#game-may [data-activate]").first.get_attribute("data-activate")
        # S shoots with the selected disk; Esc ends the shot and clears the selection.
        click_shape(page, f'g.disk[data-disk="{mover}"]')
        key("s", lambda: page.wait_for_selector("#pane-game:not([hidden]) #game-shot-title"))
        key("Escape", lambda: page.wait_for_selector("#sel-ring", state="detached"))
        assert page.locator("#game-shot-title").count() == 0
        # A activates the selected disk (an activation token in the book).
        click_shape(page, f'g.disk[data-disk="{mover}"]')
        key("a", lambda: page.wait_for_function(
            f"!document.querySelector('#game-may [data-activate=\"{mover}\"]')"))
        assert any(d["disk"] == mover and d["activation"] for d in book.state()["disks"])
        # D: the current card is resolved, the next player's card resolves.
        before = book_events(page)
        key("d", lambda: page.wait_for_function(f"document.body.dataset.bookEvents !== {before!r}"))
        assert book.state()["card_turn"] != card
        # M opens the Melee tab; N moves on to the melee phase; U undoes it.
        key("m", lambda: page.wait_for_selector("#pane-melee:not([hidden])"))
        before = book_events(page)
        key("n", lambda: page.wait_for_function(f"document.body.dataset.bookEvents !== {before!r}"))
        page.wait_for_selector('#game-phase[data-phase="melee"]')
        before = book_events(page)
        key("u", lambda: page.wait_for_function(f"document.body.dataset.bookEvents !== {before!r}"))
        page.wait_for_selector('#game-phase[data-phase="activation"]')
        assert book.state()["phase"] == "activation"
        # A key typed into a field is text, not a shortcut.
        show_tab(page, "game")
        page.click("#game-reserve-box summary")
        before = book_events(page)
        page.fill("#reserve-orcs", "")
        page.locator("#reserve-orcs").press("n")
        assert page.input_value("#reserve-orcs") == "n" and book_events(page) == before
        assert phase(page)[0] == "activation"
        assert done == set(documented)
        assert not page.errors, page.errors
        page.close()
    finally:
        server.close()
