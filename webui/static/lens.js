/* tablesight — the lens: tapping a disk of a stack (disks lying on one another, the report's `overlaps`) opens a
 * view of that stack drawn enlarged, numbered bottom to top, and listed bottom to top with each disk's role from
 * the report: pinned (by whom), pinning (whom) and harried. A tap on a line selects that disk; the lens stays
 * while the selection stays in the stack, and closes with its button, Escape or a tap elsewhere on the table.
 * It sits at the top of the Disk tab (beside the table on a laptop, under it on a phone), so it never hides a disk.
 */
(() => {
  "use strict";
  const T = window.tablesight;
  if (!T) return;
  const NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const esc = T.esc;
  const L = { closedFor: null };

  // The disks that lie on one another with the given one, directly or through others (bottom first).
  function stackOf(id, view) {
    const rep = view && view.report;
    if (!rep || !id) return [];
    const seen = new Set([id]), todo = [id];
    while (todo.length) {
      const a = todo.pop();
      for (const o of rep.overlaps || []) {
        const b = o.upper === a ? o.lower : o.lower === a ? o.upper : null;
        if (b && !seen.has(b)) { seen.add(b); todo.push(b); }
      }
    }
    const byId = new Map(view.scene.disks.map((d) => [d.id, d]));
    return [...seen].map((x) => byId.get(x)).filter(Boolean).sort((a, b) => a.z - b.z || a.id.localeCompare(b.id));
  }

  function roles(d, rep) {
    const out = [];
    const by = rep.pins.filter((p) => p.pinned === d.id), of = rep.pins.filter((p) => p.pinner === d.id);
    if (by.length) out.push({ role: "pinned", text: `pinned by ${by.map((p) => T.diskName(p.pinner)).join(", ")}` });
    if (of.length) out.push({ role: "pinning", text: `pinning ${of.map((p) => T.diskName(p.pinned)).join(", ")}` });
    if ((rep.harried || []).includes(d.id)) out.push({ role: "harried", text: "harried" });
    return out;
  }

  function el(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  // The stack enlarged: its disks bottom to top in their players' colours, pins as arrows, harried rings, and a
  // number on each (1 = bottom), placed like the table's labels so that none hides another.
  function drawStack(svg, stack, rep) {
    svg.replaceChildren();
    const x0 = Math.min(...stack.map((d) => d.x_mm - d.radius_mm)), x1 = Math.max(...stack.map((d) => d.x_mm + d.radius_mm));
    const y0 = Math.min(...stack.map((d) => d.y_mm - d.radius_mm)), y1 = Math.max(...stack.map((d) => d.y_mm + d.radius_mm));
    const side = Math.max(x1 - x0, y1 - y0) * 1.7;
    const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    svg.setAttribute("viewBox", [cx - side / 2, cy - side / 2, side, side].join(" "));
    const px = side / (svg.getBoundingClientRect().width || 240);
    const defs = el("defs", {}, svg);
    const mk = el("marker", { id: "lens-arrow", viewBox: "0 0 10 10", refX: "8", refY: "5", markerWidth: "4", markerHeight: "4", orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#fff", stroke: "#000", "stroke-width": "1" }, mk);
    el("rect", { x: cx - side / 2, y: cy - side / 2, width: side, height: side, fill: "#2b4733" }, svg);
    const harried = new Set(rep.harried || []);
    for (const d of stack) {
      const g = el("g", { class: "lens-disk", "data-disk": d.id }, svg);
      el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm, fill: "#20262c", stroke: "#000", "stroke-width": px * 5 }, g);
      el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm, fill: T.playerColour(d.player), "fill-opacity": 0.3, stroke: T.playerColour(d.player), "stroke-width": px * 3, "stroke-dasharray": d.player ? "" : `${px * 6} ${px * 4}` }, g);
      if (harried.has(d.id)) el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + px * 5, fill: "none", stroke: "#ff9f1c", "stroke-width": px * 2.5, "stroke-dasharray": `${px * 4} ${px * 3}` }, g);
      if (d.id === T.selected()) el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + px * 2, fill: "none", stroke: "#fff", "stroke-width": px * 2.5 }, g);
    }
    const ids = new Set(stack.map((d) => d.id)), byId = new Map(stack.map((d) => [d.id, d]));
    for (const p of rep.pins) {
      if (!ids.has(p.pinner) || !ids.has(p.pinned)) continue;
      const a = byId.get(p.pinner), b = byId.get(p.pinned);
      el("line", { x1: a.x_mm, y1: a.y_mm, x2: b.x_mm, y2: b.y_mm, stroke: "#000", "stroke-width": px * 6, "stroke-linecap": "round" }, svg);
      el("line", { x1: a.x_mm, y1: a.y_mm, x2: b.x_mm, y2: b.y_mm, stroke: "#fff", "stroke-width": px * 3, "marker-end": "url(#lens-arrow)", class: "lens-pin" }, svg);
    }
    const placed = T.placeLabels(stack.map((d, i) => ({ d, text: String(i + 1) })), stack, px);
    for (const p of placed) {
      const g = el("g", { class: "lens-number", "data-disk": p.d.id }, svg);
      const b = p.box;
      if (p.leader) el("line", { x1: p.anchor.x, y1: p.anchor.y, x2: b.x, y2: b.y, stroke: "#fff", "stroke-width": px * 1.5 }, g);
      el("circle", { cx: b.x, cy: b.y, r: (b.y1 - b.y0) * 0.62, fill: "#fff", stroke: "#000", "stroke-width": px * 1.5 }, g);
      const t = el("text", { x: b.x, y: b.y, "text-anchor": "middle", "dominant-baseline": "central", "font-size": px * 13, "font-weight": 800, fill: "#111" }, g);
      t.textContent = p.text;
    }
  }

  function box() {
    let lens = $("lens");
    if (!lens) {
      lens = document.createElement("section");
      lens.id = "lens";
      lens.className = "lens";
      lens.setAttribute("aria-label", "the stack, bottom to top");
      lens.hidden = true;
      // at the top of the Disk tab, beside the table on a laptop and under it on a phone: it never hides a disk
      const pane = $("pane-disk");
      pane.insertBefore(lens, pane.firstChild);
    }
    return lens;
  }

  function render() {
    const v = T.view(), sel = T.selected(), lens = box();
    const stack = v && v.report ? stackOf(sel, v) : [];
    const key = stack.map((d) => d.id).join(" ");
    if (stack.length < 2 || L.closedFor === key) { lens.hidden = true; lens.innerHTML = ""; document.body.dataset.lens = ""; return; }
    const rep = v.report;
    const n = stack.length;
    const rows = stack.map((d, i) => {
      const where = i === 0 ? "bottom" : i === n - 1 ? "top" : "";
      const rs = roles(d, rep);
      return `<li data-disk="${esc(d.id)}" data-roles="${esc(rs.map((r) => r.role).join(" "))}"${d.id === sel ? ' aria-current="true"' : ""}>
        <button type="button" class="lens-row" data-disk="${esc(d.id)}"><span class="lens-n">${i + 1}</span>
        <span class="lens-name"><span class="dot" style="background:${T.playerColour(d.player)}"></span><b>${esc(T.diskName(d.id))}</b>
        <span class="sub">${esc(d.player || "owner unknown")}${where ? " · " + where : ""}</span></span>
        <span class="lens-roles">${rs.map((r) => `<span class="chip role-${r.role}">${esc(r.text)}</span>`).join("") || '<span class="sub">free</span>'}</span></button></li>`;
    }).join("");
    lens.innerHTML = `<div class="lens-head"><b>Stack of ${n} — bottom to top</b><button type="button" class="btn lens-close" id="lens-close" aria-label="close the stack view">✕</button></div>
      <svg class="lens-svg" id="lens-svg" role="img" aria-label="the stack enlarged, numbered from the bottom"></svg>
      <ol class="lens-list" id="lens-list">${rows}</ol>`;
    lens.hidden = false;
    drawStack($("lens-svg"), stack, rep);
    document.body.dataset.lens = key;
    $("lens-close").addEventListener("click", () => { L.closedFor = key; render(); });
    for (const b of lens.querySelectorAll("button.lens-row")) b.addEventListener("click", () => T.selectDisk(b.dataset.disk));
  }

  document.addEventListener("tablesight:select", (e) => {
    if (e.detail.disk) L.closedFor = null;  // a new tap on a stack opens its lens again, even after it was closed
    render();
  });
  document.addEventListener("tablesight:view", () => render());
  if (T.view()) render();  // the first view may have arrived while this script was still loading
})();
