/* tablesight — setting up the armies from the camera (the *Armies* tab). The server groups the disks by the colour
 * of their printed border (GET /api/armies, webui/armies.py); the page asks "these 9 are one army — whose?" and one
 * tap on a player writes the owner of every disk of that army (POST /api/armies/owner: the players' owner
 * corrections). Each army's disks can be given their unit by typing its first letters (GET /api/units, the
 * catalog's keys, names and aliases); *Save table* downloads the table as a scene file (GET /api/table/save) that
 * `tablesight serve --scene FILE` reopens.
 *
 * While the tab is open every disk is ringed in its army's colour (the colour the camera saw), the army in hand
 * thicker; the rings never take a tap. The tab opens by itself once, when the page first sees a table whose every
 * owner is unknown.
 */
(() => {
  "use strict";
  const T = window.tablesight;
  if (!T) return;
  const NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const esc = T.esc;
  const A = { doc: null, hl: 0, msg: "", msgBad: false, openUnits: new Set(), autoOpened: false, busy: false, lastPx: 1 };
  const pane = () => $("pane-armies");
  const shown = () => pane() && !pane().hidden;

  // ---- loading --------------------------------------------------------------------------------------------------
  let loading = null;
  async function refresh() {
    if (loading) return loading;
    loading = (async () => {
      try { A.doc = await T.getJSON("/api/armies"); }
      catch (e) { A.doc = { error: e.message }; }
      finally { loading = null; }
      render();
      drawMarks();
      // the page moved on to a newer table while this was asked: ask again, so the armies are of the table shown
      // (a newer answer than the page's view needs nothing: the page's next view asks again anyway)
      const v = T.view();
      const order = (k) => String(k).replace(/-computing$/, "").split(".").map(Number);  // [version, corrections]
      if (v && A.doc && A.doc.key) {
        const [pv, pr] = order(v.key), [av, ar] = order(A.doc.key);
        if (pv > av || (pv === av && pr > ar)) refresh();
      }
    })();
    return loading;
  }

  async function setOwner(i, player) {
    const army = A.doc && A.doc.armies && A.doc.armies[i];
    if (!army || A.busy) return;
    A.busy = true;
    try {
      await T.post("/api/armies/owner", { disks: army.disks, player: player || null });
      A.msg = player ? `${army.count === 1 ? "1 disk" : `${army.count} disks`}: ${player}.` : `${army.count} disks: owner unknown.`;
      A.msgBad = false;
      // the next army still without an owner is the one in hand
      const next = A.doc.armies.findIndex((a, k) => k !== i && !a.player && a.count > 1);
      if (player && next >= 0) A.hl = next;
    } catch (e) { A.msg = e.message; A.msgBad = true; }
    finally { A.busy = false; }
    await refresh();
  }

  // ---- the pane -------------------------------------------------------------------------------------------------
  function question(a) {
    if (a.player) return a.count === 1 ? `This disk is ${a.player}'s` : `These ${a.count} are ${a.player}'s army`;
    if (a.count === 1) return "This disk looks like no army — whose?";
    return `These ${a.count} are one army — whose?`;
  }
  function armyHtml(a, i, players) {
    const named = a.disks.filter((id) => unitOf(id)).length;
    const buttons = players.map((p) => `<button type="button" class="btn army-owner${a.player === p ? " primary" : ""}" data-army="${i}" data-player="${esc(p)}" aria-pressed="${a.player === p}"><span class="dot" style="background:${T.playerColour(p)}"></span>${esc(p)}</button>`).join("");
    const unknown = a.owners.some((o) => o.player) ? `<button type="button" class="btn army-owner faint" data-army="${i}" data-player="" aria-pressed="false">unknown</button>` : "";
    const mixed = !a.player && a.owners.some((o) => o.player)
      ? `<div class="sub">now: ${a.owners.map((o) => `${esc(o.player || "unknown")} ${o.count}`).join(", ")}</div>` : "";
    const rows = a.disks.map((id) => `<div class="unit-row"><span class="chip target" data-disk="${esc(id)}" role="button" tabindex="0">${esc(id)}</span><div class="ac">
      <input type="text" class="unit-in" data-disk="${esc(id)}" id="unit-in-${esc(id)}" value="${esc(unitOf(id))}" placeholder="unit: type its first letters" autocomplete="off" autocapitalize="off" spellcheck="false" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="unit-list-${esc(id)}" aria-label="unit of disk ${esc(id)}">
      <ul class="unit-list" role="listbox" id="unit-list-${esc(id)}" hidden></ul></div></div>`).join("");
    return `<div class="army${i === A.hl ? " hl" : ""}" data-army="${i}" data-disks="${esc(a.disks.join(" "))}" data-player="${esc(a.player || "")}">
      <div class="army-head" data-army-head="${i}" role="button" tabindex="0" aria-pressed="${i === A.hl}" title="ring this army on the table"><span class="swatch" style="background:${esc(a.colour)}" title="the border colour the camera saw"></span><b id="army-q-${i}">${esc(question(a))}</b></div>
      <div class="row" role="group" aria-labelledby="army-q-${i}">${buttons}${unknown}</div>${mixed}
      <details class="army-units" data-first="${esc(a.disks[0])}" ${A.openUnits.has(a.disks[0]) ? "open" : ""}><summary>Units (${named} of ${a.count} named)</summary>${rows}</details></div>`;
  }
  function unitOf(id) {
    const v = T.view();
    const d = v && v.scene.disks.find((x) => x.id === id);
    return (d && d.unit) || "";
  }

  function render() {
    const p = pane();
    if (!p) return;
    // A redraw keeps the unit being typed (and where the caret is).
    const act = document.activeElement;
    const typing = act && act.classList && act.classList.contains("unit-in") && p.contains(act)
      ? { disk: act.dataset.disk, value: act.value, at: act.selectionStart } : null;
    const doc = A.doc;
    const h = ['<p class="hint">The camera grouped the disks by the colour of their border. Tap the player each army belongs to: one tap names every disk of it.</p>'];
    if (!doc) h.push('<p class="sub">…</p>');
    else if (doc.error) h.push(`<p class="msg bad">${esc(doc.error)}</p>`);
    else {
      if (A.hl >= doc.armies.length) A.hl = 0;
      if (!doc.players.length) h.push('<p class="msg bad">The table has no players yet: name them with a disk\'s Players… (Disk tab).</p>');
      if (!doc.armies.length && !doc.no_colour.length) h.push('<p class="sub">No disks on the table.</p>');
      h.push(doc.armies.map((a, i) => armyHtml(a, i, doc.players)).join(""));
      if (doc.no_colour.length) h.push(`<div class="call">No border colour seen for ${doc.no_colour.map((id) => `<span class="chip target" data-disk="${esc(id)}" role="button" tabindex="0">${esc(id)}</span>`).join("")}: set their owner in the Disk tab.</div>`);
      const unknownLeft = doc.armies.filter((a) => !a.player).reduce((s, a) => s + a.count, 0);
      document.body.dataset.armiesUnowned = String(unknownLeft);
    }
    h.push(`<div class="msg ${A.msgBad ? "bad" : "good"}" id="armies-msg" role="status">${esc(A.msg)}</div>`);
    const href = T.withToken("api/table/save");
    h.push(`<h3>Save the table</h3><div class="row"><a class="btn" id="save-table" href="${esc(href)}" download>Save table</a><span class="sub">a scene file with the owners and units; reopen it with <code>tablesight serve --scene FILE</code></span></div>`);
    p.innerHTML = h.join("");
    wire(p);
    if (typing) {
      const again = $(`unit-in-${typing.disk}`);
      if (again) { again.value = typing.value; again.focus(); again.setSelectionRange(typing.at, typing.at); }
    }
  }

  function wire(p) {
    for (const b of p.querySelectorAll(".army-owner")) b.addEventListener("click", () => setOwner(Number(b.dataset.army), b.dataset.player));
    for (const h of p.querySelectorAll("[data-army-head]")) h.addEventListener("click", () => { A.hl = Number(h.dataset.armyHead); render(); drawMarks(); });
    for (const d of p.querySelectorAll("details.army-units")) {
      d.addEventListener("toggle", () => { if (d.open) A.openUnits.add(d.dataset.first); else A.openUnits.delete(d.dataset.first); });
    }
    for (const c of p.querySelectorAll(".chip[data-disk]")) c.addEventListener("click", () => T.selectDisk(c.dataset.disk));
    for (const inp of p.querySelectorAll("input.unit-in")) wireAutocomplete(inp);
  }

  // ---- unit names by their first letters (a combobox: arrows move, Enter picks, Escape closes) --------------------
  function wireAutocomplete(inp) {
    const list = $(`unit-list-${inp.dataset.disk}`);
    let found = [], at = -1, timer = null, asked = "";
    const close = () => { list.hidden = true; inp.setAttribute("aria-expanded", "false"); inp.removeAttribute("aria-activedescendant"); at = -1; };
    const show = () => {
      if (!found.length) { list.innerHTML = `<li class="none" role="option" aria-disabled="true">no unit starts with “${esc(asked)}”</li>`; }
      else list.innerHTML = found.map((u, i) => `<li role="option" id="opt-${esc(inp.dataset.disk)}-${i}" data-key="${esc(u.key)}" aria-selected="${i === at}">${esc(u.name)}${u.matched !== u.name ? ` <span class="sub">${esc(u.matched)}</span>` : ""} <span class="sub">${esc(u.key)}</span></li>`).join("");
      list.hidden = false;
      inp.setAttribute("aria-expanded", "true");
      if (at >= 0) inp.setAttribute("aria-activedescendant", `opt-${inp.dataset.disk}-${at}`);
      for (const li of list.querySelectorAll("li[data-key]")) {
        // pointerdown: the pick happens before the input loses focus and the list closes
        li.addEventListener("pointerdown", (e) => { e.preventDefault(); pick(li.dataset.key); });
      }
    };
    const ask = async () => {
      const text = inp.value.trim();
      if (!text) { found = []; close(); return; }
      asked = text;
      try { found = (await T.getJSON(`/api/units?prefix=${encodeURIComponent(text)}&limit=8`)).units; }
      catch (e) { found = []; }
      if (inp.value.trim() !== text || document.activeElement !== inp) return;  // typed on meanwhile, or left
      at = found.length ? 0 : -1;
      show();
    };
    const pick = async (key) => {
      close();
      inp.value = key;
      try {
        await T.post("/api/corrections/unit", { disk: inp.dataset.disk, unit: key });
        A.msg = `${inp.dataset.disk}: ${key}.`; A.msgBad = false;
      } catch (e) { A.msg = e.message; A.msgBad = true; }
      inp.blur();
      render();
    };
    inp.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(ask, 120); });
    inp.addEventListener("keydown", (e) => {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        if (!found.length) return;
        e.preventDefault();
        at = (at + (e.key === "ArrowDown" ? 1 : found.length - 1)) % found.length;
        show();
      } else if (e.key === "Enter") {
        e.preventDefault();
        if (found.length && !list.hidden) pick(found[Math.max(0, at)].key);
        else if (inp.value.trim()) pick(inp.value.trim());  // a key typed whole: the server checks it
      } else if (e.key === "Escape") { close(); e.stopPropagation(); }
    });
    inp.addEventListener("blur", () => setTimeout(close, 150));
  }

  // ---- the rings on the table ---------------------------------------------------------------------------------------
  function drawMarks(svg = $("table"), px = A.lastPx) {
    if (!svg) return;
    const old = svg.querySelector("#army-marks");
    if (old) old.remove();
    const v = T.view(), doc = A.doc;
    if (!shown() || !v || !doc || !doc.armies) return;
    const g = document.createElementNS(NS, "g");
    g.setAttribute("id", "army-marks");
    g.setAttribute("pointer-events", "none");  // the rings never take a tap meant for a disk
    const byId = new Map(v.scene.disks.map((d) => [d.id, d]));
    doc.armies.forEach((a, i) => {
      for (const id of a.disks) {
        const d = byId.get(id);
        if (!d) continue;
        const hl = i === A.hl;
        for (const [stroke, w] of [["#000", hl ? 8 : 5], [a.colour, hl ? 5 : 2.5]]) {
          const c = document.createElementNS(NS, "circle");
          const attrs = { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + px * 6, fill: "none", stroke, "stroke-width": px * w, class: "army-ring", "data-army": i, "data-disk": id };
          for (const [k, val] of Object.entries(attrs)) c.setAttribute(k, val);
          g.appendChild(c);
        }
      }
    });
    svg.appendChild(g);
  }

  // ---- wiring -------------------------------------------------------------------------------------------------------
  function onView(v) {
    if (!A.autoOpened && v.scene.disks.length && v.scene.disks.every((d) => !d.player) && !T.selected()) {
      A.autoOpened = true;  // once per page: a table whose every owner is unknown starts with the armies
      T.showTab("pane-armies");
    }
    refresh();
  }
  document.addEventListener("tablesight:view", (e) => onView(e.detail.view));
  // the first view may have arrived while this script was still loading
  if (T.view()) onView(T.view());
  document.addEventListener("tablesight:drawn", (e) => { A.lastPx = e.detail.px; drawMarks(e.detail.svg, e.detail.px); });
  if (pane()) new MutationObserver(() => drawMarks()).observe(pane(), { attributes: true, attributeFilter: ["hidden"] });
})();
