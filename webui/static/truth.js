/* tablesight — the demo's ground truth on the table page (GET /api/demo/truth).
 *
 * The demo table is rendered and detected by the camera pipeline; the Truth toggle (shown for the demo table only)
 * draws the true disks over the detected ones and marks where they disagree: a missed disk, a phantom disk, a
 * wrong stacking order, with their count under the table. The choice is kept in the browser.
 *
 * table.js announces "tablesight:view" (a new view of the table) and "tablesight:drawn" (the table was redrawn:
 * the truth is drawn over it); its requests go through window.tablesight.
 */
(() => {
  "use strict";
  const T = window.tablesight;
  if (!T) return;
  const NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const WORDS = { missed: "missed", phantom: "phantom", order: "wrong order" };
  const COLOUR = { missed: "#ff3355", phantom: "#ff5cf0", order: "#ffb000" };
  const TRUTH = { on: localStorage.getItem("tablesight.truth") === "1", available: null, doc: null, loading: false,
    svg: null, px: 1 };

  function el(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    parent.appendChild(e);
    return e;
  }

  // The truth of the view on show: fetched when the view's version is new (the server keeps it per version).
  async function refresh(v) {
    if (!v || v.health.source !== "demo" || TRUTH.available === false) { $("truth-seg").hidden = true; return; }
    if (TRUTH.loading || (TRUTH.doc && TRUTH.doc.version === v.version)) return;
    TRUTH.loading = true;
    try {
      TRUTH.doc = await T.getJSON("/api/demo/truth");
      TRUTH.available = true;
    } catch (e) {
      if (e.status === 404) TRUTH.available = false;  // not the demo through the eye: no truth to show
    } finally {
      TRUTH.loading = false;
    }
    $("truth-seg").hidden = !TRUTH.available;
    $("truth-toggle").setAttribute("aria-pressed", String(TRUTH.on));
    redraw(); // a truth newer than the view is drawn when the page loads that view (the event stream says when)
  }

  function renderSummary(doc) {
    let box = $("truth-summary");
    if (!box) {
      box = document.createElement("div");
      box.id = "truth-summary";
      box.className = "truth-summary";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      document.querySelector(".table-wrap").appendChild(box);
    }
    box.hidden = !doc;
    if (!doc) return;
    const n = doc.summary;
    const parts = Object.keys(WORDS).map((k) => `${n[k] || 0} ${WORDS[k]}`);
    const total = (n.missed || 0) + (n.phantom || 0) + (n.order || 0);
    box.textContent = total
      ? `The camera against the truth: ${parts.join(", ")} (dashed: the true disks)`
      : "The camera sees the table as it truly is (dashed: the true disks)";
  }

  function draw(svg, px) {
    const old = svg.querySelector("#truth-layer");
    if (old) old.remove();
    const v = T.view();
    const doc = TRUTH.on && TRUTH.doc && v && TRUTH.doc.version === v.version && TRUTH.doc.truth ? TRUTH.doc : null;
    renderSummary(doc);
    if (!doc) return;
    const g = el("g", { id: "truth-layer", "pointer-events": "none" }, svg); // taps go to the detected disks
    for (const d of doc.truth.disks) {
      el("circle", { class: "truth-disk", "data-truth": d.id, cx: d.x_mm, cy: d.y_mm, r: d.radius_mm, fill: "none", stroke: "#7ff3ff", "stroke-width": px * 2, "stroke-dasharray": `${px * 5} ${px * 4}` }, g);
    }
    for (const m of doc.disagreements) {
      const mark = el("g", { class: `disagreement disagreement-${m.kind}`, "data-kind": m.kind }, g);
      const c = COLOUR[m.kind] || "#fff";
      // a wrong order is a small ring between the two disks: the stack under it stays readable
      el("circle", { cx: m.x_mm, cy: m.y_mm, r: m.kind === "order" ? px * 9 : m.radius_mm + px * 4, fill: "none", stroke: c, "stroke-width": px * 4 }, mark);
      if (m.kind === "phantom") {
        const r = m.radius_mm * 0.6;
        el("path", { d: `M${m.x_mm - r},${m.y_mm - r} L${m.x_mm + r},${m.y_mm + r} M${m.x_mm + r},${m.y_mm - r} L${m.x_mm - r},${m.y_mm + r}`, stroke: c, "stroke-width": px * 3 }, mark);
      }
      const label = m.kind === "missed" && m.hidden ? "missed (hidden)" : WORDS[m.kind] || m.kind;
      const y = m.kind === "order" ? m.y_mm - px * 22 : m.y_mm - m.radius_mm - px * 12;
      const w = px * 7.8 * label.length + px * 8;
      el("rect", { x: m.x_mm - w / 2, y: y - px * 10, width: w, height: px * 20, rx: px * 5, fill: c, stroke: "#000", "stroke-width": px }, mark);
      const t = el("text", { x: m.x_mm, y, "text-anchor": "middle", "dominant-baseline": "central", "font-size": px * 12, "font-weight": 700, fill: "#111" }, mark);
      t.textContent = label;
    }
  }

  function redraw() { if (TRUTH.svg) draw(TRUTH.svg, TRUTH.px); }

  document.addEventListener("tablesight:view", (e) => refresh(e.detail.view));
  document.addEventListener("tablesight:drawn", (e) => { TRUTH.svg = e.detail.svg; TRUTH.px = e.detail.px; draw(e.detail.svg, e.detail.px); });
  $("truth-toggle").addEventListener("click", () => {
    TRUTH.on = !TRUTH.on;
    localStorage.setItem("tablesight.truth", TRUTH.on ? "1" : "0");
    $("truth-toggle").setAttribute("aria-pressed", String(TRUTH.on));
    refresh(T.view());
    redraw();
  });
  if (T.view()) refresh(T.view());
})();
