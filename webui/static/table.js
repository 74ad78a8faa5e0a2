/* tablesight — the table page. Plain JS + SVG, no build step. Coordinates in the SVG are table millimetres.
 *
 * Data flow: one EventSource on /api/events says when the table (or a correction) changed; the page then
 * fetches /api/view (corrected scene + report + health) once and redraws. Tapping a disk draws its range rings,
 * band tints and line-of-sight witnesses at once from the report's pairs, then fills in the rest (deviation
 * order, terrain under it) from /api/disk/<id>.
 */
(() => {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const params = new URLSearchParams(location.search);
  const token = params.get("token") || "";
  const meta = (n) => (document.querySelector(`meta[name="${n}"]`) || {}).content || "";
  const writeKey = meta("tablesight-write-key") || token;
  const BANDS = ["short", "medium", "long", "siege"];
  const BAND_COLOUR = { short: "#3ddc84", medium: "#ffd23f", long: "#ff8c42", siege: "#8c96a3" };
  const PLAYER_COLOURS = ["#ff4d5e", "#4c8dff", "#ffb000", "#c05cff", "#2ed1c0", "#ff7ac8"];
  const UNKNOWN_COLOUR = "#e8e8e8";
  const MARGIN = 40; // mm drawn around the battlefield (disks partly off the table stay visible)
  // Below this the camera's detection is marked "?" on the table. Chosen on the eye's tuning frames
  // (benchmarks/confidence.py): at 0.8 the mark catches half the disks the eye makes up there while marking under
  // 3 % of the real ones; at 0.6, the accepting level, it caught none.
  const LOW_CONFIDENCE = 0.8;
  // Borderline call kinds (report "borderline") in the players' words; range calls show with their disk only.
  const CALL_WORDS = { band: "range band", wholly_band: "wholly within", overlap: "overlap", los: "line of sight",
    deviation: "deviation tie", contest: "contest order", engagement: "fight", stacking: "which is on top",
    off_battlefield: "battlefield edge" };
  const RANGE_CALLS = new Set(["band", "wholly_band"]);
  const callWord = (k) => CALL_WORDS[k] || k.replace(/_/g, " ");

  const S = {
    view: null, key: null, selected: null, terrainSel: null, wholly: false,
    bg: localStorage.getItem("tablesight.bg") || "camera", fit: localStorage.getItem("tablesight.fit") === "1", details: new Map(), nameKeywords: {},
    melee: null, meleeStep: 0, meleeTargets: {}, highlight: null, frameKey: null, frameSize: null, units: new Map(),
  };

  // ---- small helpers ---------------------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  const withToken = (p) => (token ? p + (p.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : p);
  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const fmt = (v, nd = 1) => (v === null || v === undefined ? "–" : Number(v).toFixed(nd));
  function el(tag, attrs = {}, parent = null) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }
  async function getJSON(path) {
    const r = await fetch(withToken(path), { headers: token ? { "X-Tablesight-Token": token } : {} });
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw Object.assign(new Error(data.error || `HTTP ${r.status}`), { status: r.status });
    return data;
  }
  async function post(path, body) {
    const r = await fetch(withToken(path), {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Tablesight-Token": writeKey },
      body: JSON.stringify(body),
    });
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
    return data;
  }
  const prettyUnit = (u) => (!u ? "" : (S.units.get(u) || {}).name || u.replace(/[-_]+/g, " ").replace(/\b\w/g, (c) => c.toUpperCase()));
  function diskById(id) { return S.view && S.view.scene.disks.find((d) => d.id === id); }
  // A disk's unit name: the catalog's name for its unit key, else a name the source gave (unit_name), else none.
  const unitName = (d) => (d.unit ? prettyUnit(d.unit) : d.unit_name || "");
  function diskName(id) {
    const d = diskById(id);
    if (!d || !unitName(d)) return id;
    return d.unit === id ? unitName(d) : `${unitName(d)} (${id})`;  // a disk named by its unit key needs no id
  }
  function playerColour(pid) {
    if (!pid || !S.view) return UNKNOWN_COLOUR;
    const i = S.view.scene.players.findIndex((p) => p.id === pid);
    return i < 0 ? UNKNOWN_COLOUR : PLAYER_COLOURS[i % PLAYER_COLOURS.length];
  }
  const dot = (pid) => `<span class="dot" style="background:${playerColour(pid)}"></span>`;
  const nameChip = (id) => `<span class="chip target" data-disk="${esc(id)}" role="button" tabindex="0">${dot((diskById(id) || {}).player)}${esc(diskName(id))}</span>`;
  // The part of the table shown: all of it, or (Fit) a square around the disks and terrain, for a small fight
  // in one corner of a big table.
  function viewBox(sc) {
    const bf = sc.battlefield;
    const whole = [-MARGIN, -MARGIN, bf.width_mm + 2 * MARGIN, bf.height_mm + 2 * MARGIN];
    if (!S.fit || !sc.disks.length) return whole;
    const xs = [], ys = [];
    for (const d of sc.disks) { xs.push(d.x_mm - d.radius_mm, d.x_mm + d.radius_mm); ys.push(d.y_mm - d.radius_mm, d.y_mm + d.radius_mm); }
    for (const t of sc.terrain) for (const [x, y] of t.polygon_mm) { xs.push(x); ys.push(y); }
    const pad = 60, x0 = Math.min(...xs) - pad, x1 = Math.max(...xs) + pad, y0 = Math.min(...ys) - pad, y1 = Math.max(...ys) + pad;
    const side = Math.min(Math.max(x1 - x0, y1 - y0, 300), whole[2]);
    const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    return [cx - side / 2, cy - side / 2, side, side];
  }
  // Millimetres per screen pixel, so labels keep a readable size on a phone and on a laptop.
  function mmPerPx(vb) {
    const w = $("table").getBoundingClientRect().width || 600;
    return vb[2] / w;
  }

  // ---- health line ---------------------------------------------------------------------------------------------
  function renderHealth(h, busy) {
    if (!h) return;
    const src = h.source || "live";
    const parts = [`<span class="pill ${esc(src)}">${esc(src.toUpperCase())}</span>`];
    if (src === "live" || src === "lost") parts.push(`<span>${fmt(h.fps, 0)} fps</span>`, `<span>${fmt(h.latency_ms, 0)} ms</span>`);
    if (h.calibration_age_s !== null && h.calibration_age_s !== undefined) {
      const age = h.calibration_age_s;
      parts.push(`<span>calibrated ${age < 120 ? Math.round(age) + " s" : Math.round(age / 60) + " min"} ago</span>`);
    }
    if (h.calibration_error_mm !== null && h.calibration_error_mm !== undefined) parts.push(`<span>±${fmt(h.calibration_error_mm, 1)} mm</span>`);
    if (h.message) parts.push(`<span class="hmsg">${esc(h.message)}</span>`);
    $("health").innerHTML = parts.join("");
    $("busy").hidden = !busy;
  }

  // ---- drawing ---------------------------------------------------------------------------------------------------
  function engagementOrder(report) {
    const order = new Map();
    if (!report) return order;
    const seq = (report.melee_order && report.melee_order.sequence) || report.engagements.map((e) => e.id);
    seq.forEach((id, i) => order.set(id, i + 1));
    return order;
  }
  function contestOf(report, eid) {
    return (report.contests || []).find((c) => c.engagements.includes(eid));
  }

  function draw() {
    const v = S.view;
    const svg = $("table");
    if (!v) return;
    const sc = v.scene, rep = v.report, bf = sc.battlefield;
    const vb = viewBox(sc);
    const px = mmPerPx(vb);
    svg.setAttribute("viewBox", vb.join(" "));
    svg.style.aspectRatio = `${vb[2]} / ${vb[3]}`;
    // The redraw replaces every element: keep keyboard focus on the same disk or terrain piece.
    const act = document.activeElement;
    const refocus = act && svg.contains(act) ? (act.dataset.disk ? `g.disk[data-disk="${CSS.escape(act.dataset.disk)}"]` : act.dataset.terrain ? `polygon[data-terrain="${CSS.escape(act.dataset.terrain)}"]` : null) : null;
    svg.replaceChildren();
    const defs = el("defs", {}, svg);
    const mk = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "8", refY: "5", markerWidth: "4", markerHeight: "4", orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#fff", stroke: "#000", "stroke-width": "1" }, mk);

    const camera = S.bg === "camera" && v.has_frame && S.frameSize;
    // Background: the rectified camera image, or the felt.
    if (camera) {
      const g = v.frame_geometry || { origin_mm: [-MARGIN, -MARGIN], size_mm: [bf.width_mm + 2 * MARGIN, bf.height_mm + 2 * MARGIN] };
      el("image", {
        href: withToken(`/api/frame.jpg?v=${encodeURIComponent(S.frameKey)}`), x: g.origin_mm[0], y: g.origin_mm[1],
        width: g.size_mm[0], height: g.size_mm[1], preserveAspectRatio: "none",
      }, svg);
      el("rect", { x: 0, y: 0, width: bf.width_mm, height: bf.height_mm, fill: "none", stroke: "rgba(255,255,255,.5)", "stroke-width": px * 1.5, "stroke-dasharray": `${px * 6} ${px * 4}` }, svg);
    } else {
      el("rect", { x: vb[0], y: vb[1], width: vb[2], height: vb[3], fill: "#101316" }, svg);
      el("rect", { x: 0, y: 0, width: bf.width_mm, height: bf.height_mm, fill: "#2b4733", rx: 4 }, svg);
      const grid = el("g", { stroke: "rgba(255,255,255,.07)", "stroke-width": px }, svg);
      for (let x = 100; x < bf.width_mm; x += 100) el("line", { x1: x, y1: 0, x2: x, y2: bf.height_mm }, grid);
      for (let y = 100; y < bf.height_mm; y += 100) el("line", { x1: 0, y1: y, x2: bf.width_mm, y2: y }, grid);
    }

    // Deployment zones (when the scene has them): a faint band of the player's colour.
    for (const z of sc.deployment_zones || []) {
      el("polygon", { points: z.polygon_mm.map((p) => p.join(",")).join(" "), fill: playerColour(z.player), "fill-opacity": 0.07, stroke: playerColour(z.player), "stroke-opacity": 0.5, "stroke-width": px * 1.5, "stroke-dasharray": `${px * 10} ${px * 6}`, "pointer-events": "none", class: "zone" }, svg);
    }

    // Terrain with names.
    const tg = el("g", {}, svg);
    for (const t of sc.terrain) {
      const pts = t.polygon_mm.map((p) => p.join(",")).join(" ");
      const blocks = t.keywords.includes("blocks_los");
      const shape = el("polygon", {
        points: pts, class: "terrain-shape", "data-terrain": t.id,
        fill: camera ? "rgba(120,90,40,.18)" : (blocks ? "#3d5a2a" : "#5b5136"),
        stroke: S.terrainSel === t.id ? "#5eb3ff" : "#d9c38a", "stroke-width": px * (S.terrainSel === t.id ? 4 : 2.2),
        "stroke-dasharray": blocks ? null : `${px * 8} ${px * 5}`,
      }, tg);
      shape.setAttribute("tabindex", "0");
      shape.setAttribute("role", "button");
      shape.setAttribute("aria-label", `terrain ${t.name || t.id}`);
      shape.addEventListener("click", (ev) => { ev.stopPropagation(); selectTerrain(t.id); });
      shape.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectTerrain(t.id); } });
      const cx = t.polygon_mm.reduce((a, p) => a + p[0], 0) / t.polygon_mm.length;
      const cy = t.polygon_mm.reduce((a, p) => a + p[1], 0) / t.polygon_mm.length;
      const label = (t.name || t.id) + (t.keywords.length ? "" : " ?");
      const txt = el("text", { x: cx, y: cy, "text-anchor": "middle", "dominant-baseline": "middle", "font-size": px * 14, "font-weight": 700, fill: "#fff3cf", stroke: "#000", "stroke-width": px * 3, "paint-order": "stroke", "pointer-events": "none" }, tg);
      txt.textContent = label;
      if (t.keywords.length) {
        const kw = el("text", { x: cx, y: cy + px * 16, "text-anchor": "middle", "dominant-baseline": "middle", "font-size": px * 11, fill: "#e6dcc0", stroke: "#000", "stroke-width": px * 2.5, "paint-order": "stroke", "pointer-events": "none" }, tg);
        kw.textContent = t.keywords.map((k) => k.replace("_", " ")).join(" · ");
      }
    }

    const sel = S.selected && diskById(S.selected);
    const pairsOf = new Map();
    if (sel && rep) {
      for (const p of rep.pairs) {
        if (p.a === sel.id) pairsOf.set(p.b, { band: p.band, wholly: p.wholly_band, los: p.los, line: p.los_line_mm, d: p.distance_mm });
        else if (p.b === sel.id) pairsOf.set(p.a, { band: p.band, wholly: p.wholly_band_ba, los: p.los, line: p.los_line_mm && [p.los_line_mm[1], p.los_line_mm[0]], d: p.distance_mm });
      }
    }

    // Range rings from the selected disk's edge (limits are cumulative from the edge).
    if (sel) {
      const rg = el("g", { class: "sel-ring" }, svg);
      const lim = sc.range_bands_mm;
      const radii = [["long", lim.long], ["medium", lim.medium], ["short", lim.short]];
      for (const [band, l] of radii) {
        el("circle", { cx: sel.x_mm, cy: sel.y_mm, r: sel.radius_mm + l, fill: BAND_COLOUR[band], "fill-opacity": 0.07, stroke: BAND_COLOUR[band], "stroke-width": px * 2.5, "stroke-opacity": 0.95 }, rg);
      }
      for (const [band, l] of radii) {
        const t = el("text", { x: sel.x_mm, y: sel.y_mm - sel.radius_mm - l + px * 15, "text-anchor": "middle", "font-size": px * 13, "font-weight": 700, fill: BAND_COLOUR[band], stroke: "#000", "stroke-width": px * 3, "paint-order": "stroke" }, rg);
        t.textContent = `${band} ${Math.round(l / 10)} cm`;
      }
    }

    // Line of sight witnesses from the selected disk.
    if (sel) {
      const lg = el("g", { class: "sel-ring", id: "los-lines" }, svg);
      for (const [id, p] of pairsOf) {
        if (p.los && p.line) {
          el("line", { x1: p.line[0][0], y1: p.line[0][1], x2: p.line[1][0], y2: p.line[1][1], stroke: "#ffffff", "stroke-width": px * 1.6, "stroke-opacity": 0.6, "stroke-dasharray": `${px * 7} ${px * 4}`, class: "los-line", "data-to": id }, lg);
        }
      }
    }

    // Disks, lowest first so the top of a stack is drawn (and tapped) last.
    const dg = el("g", {}, svg);
    const order = engagementOrder(rep);
    const harried = new Set(rep ? rep.harried : []);
    const disks = [...sc.disks].sort((a, b) => a.z - b.z || a.id.localeCompare(b.id));
    const labels = [];
    for (const d of disks) {
      const g = el("g", { class: "disk", "data-disk": d.id, tabindex: 0, role: "button", "aria-label": `${diskName(d.id)}, ${d.player || "owner unknown"}` }, dg);
      const col = playerColour(d.player);
      const rel = pairsOf.get(d.id);
      const band = rel && (S.wholly ? rel.wholly : rel.band);
      let fill = camera ? "rgba(0,0,0,0.01)" : (d.player ? col : "#666") ;
      let fillOpacity = camera ? 1 : 0.35;
      if (band) { fill = BAND_COLOUR[band]; fillOpacity = camera ? 0.45 : 0.6; }
      el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm, fill, "fill-opacity": fillOpacity, stroke: "#000", "stroke-width": px * 5.5 }, g);
      el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm, fill: "none", stroke: col, "stroke-width": px * 3.2, "stroke-dasharray": d.player ? null : `${px * 6} ${px * 4}`, class: "outline", "data-band": band || "" }, g);
      if (harried.has(d.id)) {
        el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + px * 6, fill: "none", stroke: "#ff9f1c", "stroke-width": px * 3, "stroke-dasharray": `${px * 4} ${px * 3}`, class: "harried-mark" }, g);
      }
      if (rel && !rel.los) {
        const s = Math.min(d.radius_mm * 0.55, px * 14);
        const xg = el("g", { stroke: "#ff4040", "stroke-width": px * 4, "stroke-linecap": "round", class: "blocked-mark", "data-to": d.id }, g);
        el("line", { x1: d.x_mm - s, y1: d.y_mm - s, x2: d.x_mm + s, y2: d.y_mm + s }, xg);
        el("line", { x1: d.x_mm - s, y1: d.y_mm + s, x2: d.x_mm + s, y2: d.y_mm - s }, xg);
      }
      labels.push({ d, text: d.unit ? prettyUnit(d.unit).split(" ").map((w) => w[0]).join("").slice(0, 3) : d.id });
      if (d.confidence !== undefined && d.confidence < LOW_CONFIDENCE) {
        // The camera is unsure about this one: say so on the disk itself.
        const q = el("text", { x: d.x_mm - d.radius_mm * 0.72, y: d.y_mm - d.radius_mm * 0.72, "text-anchor": "middle", "dominant-baseline": "central", "font-size": px * 15, "font-weight": 800, fill: "#ffd23f", stroke: "#000", "stroke-width": px * 3, "paint-order": "stroke", class: "unsure-mark", "pointer-events": "none" }, g);
        q.textContent = "?";
      }
      if (d.corrected) {
        el("circle", { cx: d.x_mm + d.radius_mm * 0.72, cy: d.y_mm - d.radius_mm * 0.72, r: px * 4, fill: "#5eb3ff", stroke: "#000", "stroke-width": px }, g);
      }
      g.addEventListener("click", (ev) => { ev.stopPropagation(); selectDisk(d.id); });
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectDisk(d.id); } });
    }
    // Where the camera suspects a disk lying on another that it could not tell from a ring in the lower one's art.
    for (const s of sc.suspected_disks || []) {
      if (!diskById(s.on)) continue;
      const g = el("g", { class: "suspect-mark", "data-on": s.on, "pointer-events": "none" }, dg);
      el("circle", { cx: s.x_mm, cy: s.y_mm, r: s.radius_mm, fill: "none", stroke: "#ffd23f", "stroke-width": px * 2.5, "stroke-dasharray": `${px * 5} ${px * 4}` }, g);
      const q = el("text", { x: s.x_mm, y: s.y_mm, "text-anchor": "middle", "dominant-baseline": "central", "font-size": px * 15, "font-weight": 800, fill: "#ffd23f", stroke: "#000", "stroke-width": px * 3, "paint-order": "stroke" }, g);
      q.textContent = "?";
    }
    if (sel) {
      el("circle", { cx: sel.x_mm, cy: sel.y_mm, r: sel.radius_mm + px * 3, fill: "none", stroke: "#fff", "stroke-width": px * 3.5, class: "sel-ring", id: "sel-ring" }, svg);
    }
    const hl = rep && S.highlight && rep.engagements.find((e) => e.id === S.highlight);
    if (hl) {
      for (const id of [...hl.attackers, ...hl.defenders]) {
        const d = diskById(id);
        if (d) el("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + px * 5, fill: "none", stroke: hl.attackers.includes(id) ? "#ffffff" : "#5eb3ff", "stroke-width": px * 4, class: "eng-highlight", "pointer-events": "none" }, svg);
      }
    }

    // Pins as arrows (pinner -> pinned), engagement numbers in melee order, close calls.
    if (rep) {
      const pg = el("g", { "pointer-events": "none" }, svg);
      for (const p of rep.pins) {
        const a = diskById(p.pinner), b = diskById(p.pinned);
        if (!a || !b) continue;
        const dx = b.x_mm - a.x_mm, dy = b.y_mm - a.y_mm, L = Math.hypot(dx, dy) || 1;
        const len = Math.max(L, px * 18);
        const x2 = a.x_mm + dx / L * len, y2 = a.y_mm + dy / L * len;
        el("line", { x1: a.x_mm, y1: a.y_mm, x2, y2, stroke: "#000", "stroke-width": px * 7, "stroke-linecap": "round" }, pg);
        el("line", { x1: a.x_mm, y1: a.y_mm, x2, y2, stroke: p.enemy ? "#fff" : "#bbb", "stroke-width": px * 3.5, "stroke-dasharray": p.enemy ? null : `${px * 5} ${px * 4}`, "marker-end": "url(#arrow)", class: "pin-arrow" }, pg);
      }
      for (const e of rep.engagements) {
        // The badge sits beside the first attacker, on the side away from what it pins.
        const a = diskById(e.attackers[0]);
        const ds = e.defenders.map(diskById).filter(Boolean);
        if (!a || !ds.length) continue;
        const dx = ds.reduce((s, d) => s + d.x_mm, 0) / ds.length - a.x_mm;
        const dy = ds.reduce((s, d) => s + d.y_mm, 0) / ds.length - a.y_mm;
        const L = Math.hypot(dx, dy) || 1;
        const r = px * 12;
        const off = a.radius_mm + r * 0.6;
        const bx = a.x_mm - (dx / L) * off * 0.7 + (-dy / L) * off * 0.7;
        const by = a.y_mm - (dy / L) * off * 0.7 + (dx / L) * off * 0.7;
        const inContest = contestOf(rep, e.id);
        const badge = el("g", { class: "eng-badge", "data-engagement": e.id }, pg);
        el("circle", { cx: bx, cy: by, r, fill: inContest ? "#ffd23f" : "#fff", stroke: "#000", "stroke-width": px * 2.5 }, badge);
        const t = el("text", { x: bx, y: by, "text-anchor": "middle", "dominant-baseline": "central", "font-size": r * 1.3, "font-weight": 800, fill: "#111" }, badge);
        t.textContent = String(order.get(e.id) || "?");
      }
      for (const b of rep.borderline || []) {
        const a = diskById(b.a), c = b.b && diskById(b.b);
        if (!a) continue;
        const faint = RANGE_CALLS.has(b.kind) && !(S.selected && (b.a === S.selected || b.b === S.selected));
        if (faint) continue; // range calls are shown with the disk they concern (and in the Close calls tab)
        let x = a.x_mm, y = a.y_mm - a.radius_mm - px * 10;
        if (c) {
          el("line", { x1: a.x_mm, y1: a.y_mm, x2: c.x_mm, y2: c.y_mm, stroke: "#ffd23f", "stroke-width": px * 2, "stroke-dasharray": `${px * 3} ${px * 3}` }, pg);
          x = (a.x_mm + c.x_mm) / 2; y = (a.y_mm + c.y_mm) / 2;
        }
        const g = el("g", { class: "borderline-mark" }, pg);
        const text = `≈ ${callWord(b.kind)} ±${fmt(b.margin_mm, 1)}`;
        const w = px * 7.2 * text.length;
        el("rect", { x: x - w / 2, y: y - px * 10, width: w, height: px * 20, rx: px * 5, fill: "#ffd23f", stroke: "#000", "stroke-width": px }, g);
        const t = el("text", { x, y, "text-anchor": "middle", "dominant-baseline": "central", "font-size": px * 12, "font-weight": 700, fill: "#111" }, g);
        t.textContent = text;
      }
    }
    drawDiskLabels(svg, labels, sc.disks, px);
    drawRuler(svg, px);
    renderLegend();
    if (refocus) { const f = svg.querySelector(refocus); if (f) f.focus({ preventScroll: true }); }
    announce("drawn", { svg, px });
  }

  // ---- disk labels that never overlap -------------------------------------------------------------------------------
  // A label sits on its disk where the disk shows (not under a disk above it) and the label fits; otherwise — a
  // disk in a stack, a disk too small for it on a phone, a place another label took — it goes beside the disk, clear
  // of the other labels and, where room allows, of every disk, with a leader line to the part of the disk that shows.
  // Labels are placed top disk first, so the disk a finger lands on keeps its label on itself.
  const LABEL_PX = 12; // label font size in screen pixels
  function visibleAnchor(d, above) {
    // the point of the disk farthest inside the part no higher disk covers (its centre when nothing covers it)
    if (!above.length) return { x: d.x_mm, y: d.y_mm, clear: d.radius_mm };
    let best = null;
    for (const share of [0, 0.3, 0.55, 0.8]) {
      for (let k = 0; k < (share ? 16 : 1); k++) {
        const a = (k * Math.PI) / 8, x = d.x_mm + share * d.radius_mm * Math.cos(a), y = d.y_mm + share * d.radius_mm * Math.sin(a);
        let clear = d.radius_mm * (1 - share);
        for (const o of above) clear = Math.min(clear, Math.hypot(x - o.x_mm, y - o.y_mm) - o.radius_mm);
        if (!best || clear > best.clear + 1e-6) best = { x, y, clear };
      }
    }
    return best;
  }
  const boxesMeet = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
  function boxMeetsDisk(b, d) {
    const cx = Math.max(b.x0, Math.min(d.x_mm, b.x1)), cy = Math.max(b.y0, Math.min(d.y_mm, b.y1));
    return Math.hypot(cx - d.x_mm, cy - d.y_mm) < d.radius_mm;
  }
  function placeLabels(items, disks, px, obstacles = []) {
    const fs = px * LABEL_PX, h = fs * 1.35, placed = obstacles.map((box) => ({ box, obstacle: true }));
    const order = [...items].sort((a, b) => b.d.z - a.d.z || a.d.id.localeCompare(b.d.id));
    for (const it of order) {
      const d = it.d, w = fs * (0.62 * it.text.length + 0.6);
      const above = disks.filter((o) => o.z > d.z && Math.hypot(o.x_mm - d.x_mm, o.y_mm - d.y_mm) < o.radius_mm + d.radius_mm);
      const anchor = visibleAnchor(d, above);
      const boxAt = (x, y) => ({ x0: x - w / 2, x1: x + w / 2, y0: y - h / 2, y1: y + h / 2, x, y });
      const free = (b) => !placed.some((p) => boxesMeet(p.box, b));
      // on the disk: the label's box wholly on the part of the disk that shows
      const own = boxAt(anchor.x, anchor.y);
      // (a disk nothing covers takes a label as wide as itself; a covered one needs the whole box clear)
      const fits = above.length ? anchor.clear >= Math.hypot(w, h) / 2 : w <= 1.9 * d.radius_mm && h <= 1.3 * d.radius_mm;
      if (fits && free(own)) { placed.push({ d, text: it.text, box: own, anchor, leader: false }); continue; }
      // beside it: directions away from what covers it (or from the table's middle), nearer rings first
      const ox = above.length ? above.reduce((s, o) => s + o.x_mm, 0) / above.length : d.x_mm - 1;
      const oy = above.length ? above.reduce((s, o) => s + o.y_mm, 0) / above.length : d.y_mm - 1;
      const base = Math.atan2(anchor.y - oy, anchor.x - ox);
      let chosen = null, fallback = null;
      for (let ring = 0; ring < 24 && !chosen; ring++) {
        const dist = d.radius_mm + px * 8 + Math.hypot(w, h) / 2 + ring * h;
        for (let k = 0; k < 12 && !chosen; k++) {
          const a = base + (k % 2 ? 1 : -1) * Math.ceil(k / 2) * (Math.PI / 6);
          const b = boxAt(d.x_mm + dist * Math.cos(a), d.y_mm + dist * Math.sin(a));
          if (!free(b)) continue;
          if (!disks.some((o) => boxMeetsDisk(b, o))) chosen = b;
          else if (!fallback && ring >= 2) fallback = b;  // no room clear of every disk nearby: clear of labels only
        }
        if (!chosen && fallback && ring >= 6) chosen = fallback;
      }
      chosen = chosen || fallback || boxAt(d.x_mm, d.y_mm - d.radius_mm - h * (placed.length + 1));
      placed.push({ d, text: it.text, box: chosen, anchor, leader: true });
    }
    return placed.filter((p) => !p.obstacle);
  }
  function drawDiskLabels(svg, items, disks, px) {
    // the fight numbers and close-call tags already drawn are kept clear too
    const obstacles = [];
    for (const c of svg.querySelectorAll(".eng-badge circle")) {
      const x = +c.getAttribute("cx"), y = +c.getAttribute("cy"), r = +c.getAttribute("r");
      obstacles.push({ x0: x - r, x1: x + r, y0: y - r, y1: y + r });
    }
    for (const r of svg.querySelectorAll(".borderline-mark rect")) {
      const x = +r.getAttribute("x"), y = +r.getAttribute("y");
      obstacles.push({ x0: x, x1: x + +r.getAttribute("width"), y0: y, y1: y + +r.getAttribute("height") });
    }
    const g = el("g", { class: "disk-labels", "pointer-events": "none" }, svg);
    const fs = px * LABEL_PX;
    for (const p of placeLabels(items, disks, px, obstacles)) {
      const lg = el("g", { class: "disk-label", "data-disk": p.d.id, "data-leader": p.leader ? "1" : "0" }, g);
      const b = p.box;
      if (p.leader) {
        // the leader runs from the part of the disk that shows to the nearest point of the label's box
        const ex = Math.max(b.x0, Math.min(p.anchor.x, b.x1)), ey = Math.max(b.y0, Math.min(p.anchor.y, b.y1));
        el("line", { x1: p.anchor.x, y1: p.anchor.y, x2: ex, y2: ey, stroke: "#000", "stroke-width": px * 4, "stroke-linecap": "round" }, lg);
        el("line", { x1: p.anchor.x, y1: p.anchor.y, x2: ex, y2: ey, stroke: "#fff", "stroke-width": px * 1.6, class: "label-leader" }, lg);
        el("circle", { cx: p.anchor.x, cy: p.anchor.y, r: px * 2.6, fill: "#fff", stroke: "#000", "stroke-width": px }, lg);
        el("rect", { x: b.x0, y: b.y0, width: b.x1 - b.x0, height: b.y1 - b.y0, rx: px * 4, fill: "rgba(10,12,14,.82)", stroke: playerColour(p.d.player), "stroke-width": px * 1.5 }, lg);
      }
      const t = el("text", { x: b.x, y: b.y, "text-anchor": "middle", "dominant-baseline": "central", "font-size": fs, "font-weight": 700, fill: "#fff", stroke: "#000", "stroke-width": fs * 0.22, "paint-order": "stroke", class: "label-text" }, lg);
      t.textContent = p.text;
    }
  }

  function renderLegend() {
    const v = S.view;
    const items = v.scene.players.map((p) => `<span><span class="sw" style="border-color:${playerColour(p.id)}"></span>${esc(p.id)}</span>`);
    if (v.scene.disks.some((d) => !d.player)) items.push(`<span><span class="sw" style="border-color:${UNKNOWN_COLOUR};border-style:dashed"></span>owner unknown</span>`);
    if (S.selected && v.report) {
      // With a disk selected the legend counts the other disks per band (and those out of sight): the answer
      // at a glance on a phone, where the panel is below the table.
      const count = Object.fromEntries(BANDS.map((b) => [b, 0]));
      let hidden = 0;
      for (const p of v.report.pairs) {
        if (p.a !== S.selected && p.b !== S.selected) continue;
        count[S.wholly ? (p.a === S.selected ? p.wholly_band : p.wholly_band_ba) : p.band] += 1;
        if (!p.los) hidden += 1;
      }
      items.push(...BANDS.map((b) => `<span class="band-count" data-band="${b}"><span class="sw band" style="background:${BAND_COLOUR[b]}"></span>${b} <b>${count[b]}</b></span>`));
      items.push(`<span style="color:#ff6b6b">✕ no line of sight <b>${hidden}</b></span>`);
    }
    else items.push(`<span>→ pin</span><span>① fight order</span><span style="color:#ff9f1c">◌ harried</span>`);
    $("legend").innerHTML = items.join("");
  }

  // ---- selection and the disk panel -----------------------------------------------------------------------------
  function selectDisk(id) {
    if (S.selected !== id) S.flash = null;
    S.selected = id; S.terrainSel = null;
    announce("select", { disk: id });
    draw();
    showTab("pane-disk");
    renderDiskPanel();
    loadDetails(id);
  }
  function selectTerrain(id) {
    S.selected = null; S.terrainSel = id;
    draw();
    showTab("pane-disk");
    renderTerrainPanel();
  }
  function clearSelection() {
    if (!S.selected && !S.terrainSel) return;
    S.selected = null; S.terrainSel = null;
    announce("select", { disk: null });
    draw();
    showNoSelection();
  }
  // The disk and terrain panels are drawn again whenever something they show arrives (a disk's details, a new view,
  // the unit catalog), often while the player is typing in one of their fields. Drawing them from scratch replaced
  // that field with a new one that had lost the focus, so the rest of what was typed went nowhere (and a unit being
  // typed was wiped). redrawPanel(box, owner, html) draws `html` into `box` for `owner` (the disk or terrain piece
  // shown); the function it returns, called once the new controls are wired, gives the focus back to the control
  // that had it, and to each text field the text typed in it but not yet saved, with its caret — unless the panel
  // is now of another disk or piece, or the field's own value changed meanwhile (a save, a correction from another
  // device): then the field shows that (the players' field draws what was typed itself, from S.playersDraft).
  function redrawPanel(box, owner, html) {
    const same = box.dataset.owner === owner;
    const active = document.activeElement;
    const focused = same && active && active.id && box.contains(active) ? active.id : null;
    const typed = [];
    if (same) {
      for (const f of box.querySelectorAll("input[id]")) {
        if (f.type !== "text" || (f.value === f.defaultValue && f.id !== focused)) continue;
        typed.push({ id: f.id, value: f.value, shown: f.defaultValue, start: f.selectionStart, end: f.selectionEnd, dir: f.selectionDirection });
      }
    }
    box.innerHTML = html;
    box.dataset.owner = owner;
    return () => {
      for (const t of typed) {
        const f = document.getElementById(t.id);
        if (!f || !box.contains(f) || (f.defaultValue !== t.shown && f.value !== t.value)) continue;
        f.value = t.value;
        if (t.id === focused) { f.focus({ preventScroll: true }); f.setSelectionRange(t.start, t.end, t.dir); }
      }
      const f = focused && document.getElementById(focused);
      if (f && box.contains(f) && document.activeElement !== f) f.focus({ preventScroll: true });
    };
  }

  function showNoSelection() {
    $("disk-hint").hidden = false;
    $("disk-info").innerHTML = "";
  }

  async function loadDetails(id) {
    const key = `${S.key}/${id}`;
    if (!S.details.has(key)) {
      try { S.details.set(key, await getJSON(`/api/disk/${encodeURIComponent(id)}`)); }
      catch (e) { S.details.set(key, { error: e.message }); }
    }
    if (S.selected === id) renderDiskPanel();
  }

  function renderDiskPanel() {
    const v = S.view, d = diskById(S.selected);
    $("disk-hint").hidden = !!d;
    if (!d) { $("disk-info").innerHTML = ""; return; }
    const rep = v.report;
    const det = S.details.get(`${S.key}/${d.id}`);
    const h = [];
    h.push(`<h2>${esc(unitName(d) || "Unknown unit")}</h2>`);
    h.push(`<div class="sub">${dot(d.player)} ${esc(d.player || "owner unknown")} · disk ${esc(d.id)}${d.size ? " · " + esc(d.size) : ""} · Ø ${fmt(2 * d.radius_mm, 0)} mm${d.confidence !== undefined ? ` · camera ${Math.round(d.confidence * 100)}% sure` : ""}</div>`);
    if (d.confidence !== undefined && d.confidence < LOW_CONFIDENCE) h.push('<div><span class="chip warn">the camera is unsure about this disk: check it, correct it below</span></div>');
    if ((v.scene.suspected_disks || []).some((s) => s.on === d.id)) h.push('<div><span class="chip warn">a smaller disk may lie on this one (the dashed ?): from above the camera cannot tell it from a ring in the art. Lift it and put it back, and the camera sees it arrive</span></div>');
    if (d.corrected) h.push(`<div><span class="chip fixed">corrected: ${esc(d.corrected.join(", "))}</span></div>`);
    const cat = d.unit ? S.units.get(d.unit) : null;
    if (d.unit && !cat && S.units.size) h.push(`<div class="sub">“${esc(d.unit)}” is not in the unit catalog: its stats are unknown.</div>`);
    const st = Object.assign({}, cat ? cat.stats : {}, d.stats || {});
    if (Object.values(st).some((x) => x !== null && x !== undefined)) {
      h.push(`<div class="stats">${["move", "attack", "counter", "toughness", "vigor"].map((k) => `<div class="stat"><b>${st[k] ?? "–"}</b><span>${k}</span></div>`).join("")}</div>`);
    }
    if (d.tokens) h.push(`<div>${Object.entries(d.tokens).filter(([, n]) => n).map(([k, n]) => `<span class="chip">${esc(k)} ×${n}</span>`).join("") || '<span class="sub">no tokens</span>'}</div>`);
    const kws = [...new Set([...(cat ? cat.keywords : []), ...(d.keywords || [])])];
    if (kws.length) h.push(`<div>${kws.map((k) => `<span class="chip">${esc(k)}</span>`).join("")}</div>`);
    if (cat && cat.text) h.push(`<div class="sub" style="margin-top:.3rem">${esc(cat.text)}</div>`);
    if (rep) {
      const pins = rep.pins.filter((p) => p.pinner === d.id), by = rep.pins.filter((p) => p.pinned === d.id);
      const flags = [];
      if (rep.harried.includes(d.id)) flags.push('<span class="chip warn">harried</span>');
      for (const e of rep.engagements) {
        if (e.attackers.includes(d.id)) flags.push(`<span class="chip">attacker in ${esc(e.id)}</span>`);
        if (e.defenders.includes(d.id)) flags.push(`<span class="chip">defender in ${esc(e.id)}</span>`);
      }
      if (pins.length) flags.push(`<span class="sub">pins</span> ${pins.map((p) => nameChip(p.pinned)).join("")}`);
      if (by.length) flags.push(`<span class="sub">pinned by</span> ${by.map((p) => nameChip(p.pinner)).join("")}`);
      if (flags.length) h.push(`<div style="margin-top:.4rem">${flags.join(" ")}</div>`);

      h.push(`<h3>Range from its edge</h3>`);
      h.push(`<label class="toggle"><input type="checkbox" id="wholly" ${S.wholly ? "checked" : ""}> wholly within (the whole target inside the band)</label>`);
      const rel = [];
      for (const p of rep.pairs) {
        if (p.a !== d.id && p.b !== d.id) continue;
        const other = p.a === d.id ? p.b : p.a;
        rel.push({ id: other, band: S.wholly ? (p.a === d.id ? p.wholly_band : p.wholly_band_ba) : p.band, d: p.distance_mm, los: p.los });
      }
      rel.sort((a, b) => a.d - b.d);
      h.push('<div class="bands">');
      for (const b of BANDS) {
        const list = rel.filter((r) => r.band === b);
        if (!list.length) continue;
        h.push(`<div class="bandrow"><div class="bandname ${b}">${b}</div><div>${list.map((r) =>
          `<span class="target ${r.los ? "" : "blocked"}" data-disk="${esc(r.id)}" role="button" tabindex="0" title="${r.los ? "in line of sight" : "line of sight blocked"}">${dot((diskById(r.id) || {}).player)} ${esc(diskName(r.id))} <span class="mm">${fmt(r.d, 0)} mm${r.los ? "" : " · no LOS"}</span></span>`).join("")}</div></div>`);
      }
      h.push("</div>");
      if (!rel.length) h.push('<p class="sub">No other disk on the table.</p>');
      const calls = (rep.borderline || []).filter((b) => b.a === d.id || b.b === d.id);
      if (calls.length) h.push(`<h3>Close calls</h3>${calls.map(callHtml).join("")}`);
    } else {
      h.push(`<p class="msg bad">${esc(v.report_error || "no report")}</p>`);
    }
    h.push(`<h3>Deviation (this disk as the target)</h3>`);
    if (!det) h.push('<p class="sub" id="dev-pending">…</p>');
    else if (det.error) h.push(`<p class="msg bad">${esc(det.error)}</p>`);
    else if (det.deviation_error) h.push(`<p class="sub">${esc(det.deviation_error)}</p>`);
    else if (!det.deviation || !det.deviation.length) h.push('<p class="sub">No disk within short range: deviation has no effect.</p>');
    else h.push(`<ol class="dev" id="deviation">${det.deviation.map((c) => `<li>${nameChip(c.disk)} <span class="sub">${c.engaged ? `engaged · ${fmt(c.overlap_area_mm2, 0)} mm² overlap` : fmt(c.distance_mm, 0) + " mm away"}${c.margin_mm !== null && c.margin_mm !== undefined ? ` · <b class="chip warn">tie within ${fmt(c.margin_mm, 1)} mm</b>` : ""}</span></li>`).join("")}</ol><div class="sub">Several deviation results go down this list in order, starting again at the top.</div>`);
    if (det && det.terrain_under && det.terrain_under.length) {
      h.push(`<div class="sub">On terrain: ${det.terrain_under.map((t) => esc(terrainName(t))).join(", ")}</div>`);
    }
    h.push(correctionsHtml(d));
    const restore = redrawPanel($("disk-info"), `disk:${d.id}`, h.join(""));
    wireDiskPanel(d);
    restore();
  }
  function terrainName(id) {
    const t = S.view.scene.terrain.find((x) => x.id === id);
    return t ? (t.name || t.id) : id;
  }
  function callHtml(b) {
    const chip = (id) => (diskById(id) ? nameChip(id) : esc(id));  // a call may name a terrain piece too
    const who = b.b ? `${chip(b.a)} – ${chip(b.b)}` : chip(b.a);
    return `<div class="call"><b>${esc(callWord(b.kind))}</b> ${who}: within ${fmt(b.margin_mm, 1)} mm of flipping${b.note ? ` <span class="sub">(${esc(b.note)})</span>` : ""}</div>`;
  }

  function correctionsHtml(d) {
    const v = S.view;
    const players = v.scene.players.map((p) => `<option value="${esc(p.id)}" ${d.player === p.id ? "selected" : ""}>${esc(p.id)}</option>`).join("");
    const overlaps = v.report ? v.report.overlaps.filter((o) => o.upper === d.id || o.lower === d.id) : [];
    const stack = overlaps.map((o) => {
      const other = o.upper === d.id ? o.lower : o.upper;
      const onTop = o.upper === d.id ? "this disk is on top of" : "under";
      return `<div class="row"><span>${onTop} ${esc(diskName(other))}</span><button class="btn" data-swap="${esc(other)}" data-upper="${esc(o.upper)}" data-lower="${esc(o.lower)}">Swap: put ${esc(o.lower === d.id ? "this disk" : other)} on top</button></div>`;
    }).join("");
    return `<div class="fix" id="fix">
      <h3 style="margin-top:0">Correct the camera</h3>
      <label for="fix-owner">Owner</label>
      <div class="row"><select id="fix-owner"><option value="">unknown</option>${players}</select><button class="btn" id="fix-players-edit" title="players the camera cannot know">Players…</button></div>
      <div class="row" id="fix-players-row" ${S.playersDraft === undefined ? "hidden" : ""}><input type="text" id="fix-players" aria-label="the players, in initiative order" placeholder="in initiative order, e.g. orcs, empire" value="${esc(S.playersDraft ?? v.scene.players.slice().sort((a, b) => a.initiative - b.initiative).map((p) => p.id).join(", "))}" autocomplete="off" autocapitalize="off"><button class="btn" id="fix-players-save" aria-label="Save the players">Save</button></div>
      <label for="fix-unit">Unit (catalog key)</label>
      <div class="row"><input type="text" id="fix-unit" list="unit-keys" value="${esc(d.unit || "")}" placeholder="e.g. orc-boyz" autocomplete="off" autocapitalize="off" spellcheck="false"><datalist id="unit-keys">${[...S.units.values()].map((u) => `<option value="${esc(u.key)}">${esc(u.name)}</option>`).join("")}</datalist><button class="btn" id="fix-unit-save" aria-label="Save the unit">Save</button></div>
      ${stack ? `<label>Stack</label>${stack}` : ""}
      <div class="row" style="margin-top:.5rem"><button class="btn danger" id="fix-notdisk">Not a disk</button>${d.corrected ? '<button class="btn" id="fix-clear">Undo corrections</button>' : ""}</div>
      ${flashHtml()}</div>`;
  }

  // The outcome of the last correction, shown in the panel (which is redrawn when the view reloads).
  function flash(cls, text) {
    S.flash = { cls, text, until: Date.now() + 5000 };
    for (const m of [$("fix-msg"), $("calls-msg")]) if (m) { m.className = `msg ${cls}`; m.textContent = text; }
  }
  const flashHtml = (id = "fix-msg") => (S.flash && S.flash.until > Date.now() ? `<div class="msg ${S.flash.cls}" id="${id}">${esc(S.flash.text)}</div>` : `<div class="msg" id="${id}"></div>`);
  async function correct(path, body, okText) {
    try {
      await post(path, body);
      flash("good", okText);
      await loadView();
    } catch (e) {
      flash("bad", e.message);
    }
  }

  function wireDiskPanel(d) {
    const w = $("wholly");
    if (w) w.addEventListener("change", () => { S.wholly = w.checked; draw(); renderDiskPanel(); });
    for (const t of $("disk-info").querySelectorAll("[data-disk]")) t.addEventListener("click", () => selectDisk(t.dataset.disk));
    $("fix-owner").addEventListener("change", (e) => correct("/api/corrections/owner", { disk: d.id, player: e.target.value || null }, "Owner saved."));
    // The players' row stays open, with what was typed, when the panel is redrawn (details or a view arriving).
    $("fix-players-edit").addEventListener("click", () => {
      const row = $("fix-players-row");
      row.hidden = !row.hidden;
      S.playersDraft = row.hidden ? undefined : $("fix-players").value;
    });
    $("fix-players").addEventListener("input", (e) => { S.playersDraft = e.target.value; });
    $("fix-players-save").addEventListener("click", () => {
      const ids = $("fix-players").value.split(/[\s,]+/).filter(Boolean);
      S.playersDraft = undefined;
      correct("/api/corrections/players", { players: ids.map((id, i) => ({ id, initiative: i + 1 })) }, "Players saved.");
    });
    const saveUnit = () => correct("/api/corrections/unit", { disk: d.id, unit: $("fix-unit").value.trim() || null }, "Unit saved.");
    $("fix-unit-save").addEventListener("click", saveUnit);
    $("fix-unit").addEventListener("keydown", (e) => { if (e.key === "Enter") saveUnit(); });
    for (const b of document.querySelectorAll("[data-swap]")) {
      b.addEventListener("click", () => correct("/api/corrections/on-top", { upper: b.dataset.lower, lower: b.dataset.upper }, "Stack order saved."));
    }
    $("fix-notdisk").addEventListener("click", async () => {
      await correct("/api/corrections/not-a-disk", { disk: d.id, not_disk: true }, "Removed.");
      clearSelection();
    });
    const c = $("fix-clear");
    if (c) c.addEventListener("click", () => correct("/api/corrections/clear", { disk: d.id }, "Corrections undone."));
  }

  // The rulebook's piece names and their keywords, read once at start; the name preview waits for them.
  let nameKeywordsReady = Promise.resolve();
  function renderTerrainPanel() {
    const t = S.view.scene.terrain.find((x) => x.id === S.terrainSel);
    $("disk-hint").hidden = !!t;
    if (!t) { $("disk-info").innerHTML = ""; return; }
    // A view that arrives while a name is being typed redraws the panel: redrawPanel keeps what was typed.
    const restore = redrawPanel($("disk-info"), `terrain:${t.id}`, `<h2>${esc(t.name || "Unnamed terrain")}</h2>
      <div class="sub">terrain ${esc(t.id)}</div>
      <div>${t.keywords.map((k) => `<span class="chip">${esc(k.replace("_", " "))}</span>`).join("") || '<span class="sub">no keywords yet</span>'}</div>
      <div class="fix"><label for="terrain-name">Name (a rulebook piece's name adds its keywords)</label>
      <div class="row"><input type="text" id="terrain-name" data-terrain="${esc(t.id)}" value="${esc(t.name || "")}" placeholder="e.g. forest, hill, river"><button class="btn primary" id="terrain-save" aria-label="Save the name">Save</button></div>
      <div class="sub" id="terrain-preview"></div>${flashHtml()}</div>`);
    restore();
    const input = $("terrain-name");
    const preview = () => {
      const words = input.value.toLowerCase().match(/[a-z]+/g) || [];
      const kws = [...new Set(words.flatMap((w) => S.nameKeywords[w] || []))];
      // the server adds the name's keywords to the piece's own (a wood named keeps blocks_los and cover)
      const added = kws.filter((k) => !t.keywords.includes(k));
      $("terrain-preview").textContent = added.length ? "adds keywords: " + added.join(", ") : kws.length ? "keywords: " + kws.join(", ") : "no known word: no keywords added";
    };
    input.addEventListener("input", preview);
    preview();
    nameKeywordsReady.then(() => { if ($("terrain-name") === input) preview(); });
    const save = () => correct("/api/corrections/terrain", { terrain: t.id, name: input.value }, "Terrain named.");
    $("terrain-save").addEventListener("click", save);
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") save(); });
  }

  // ---- melee and close calls panes --------------------------------------------------------------------------
  function engagementHtml(e, n) {
    const side = (ids) => ids.map(nameChip).join("");
    return `<div class="eng${S.highlight === e.id ? " hl" : ""}" data-engagement="${esc(e.id)}" role="button" tabindex="0" aria-pressed="${S.highlight === e.id}" aria-label="fight ${esc(n || "")} (${esc(e.id)}): ring its disks on the table"><span class="num">${n}</span><b>${esc(e.id)}</b>
      <div><span class="sub">attackers</span> ${side(e.attackers)}</div>
      <div><span class="sub">defenders</span> ${side(e.defenders)}</div>${meleeStepHtml(e.id)}</div>`;
  }
  function meleeStepHtml(eid) {
    const m = S.melee;
    if (!m || !m.steps) return "";
    const idx = m.steps.findIndex((s) => s.engagement === eid);
    if (idx < 0 || idx >= S.meleeStep) return "";
    const st = m.steps[idx];
    const target = (s) => (s.options && s.options.length > 1
      ? `<select class="pick-target" data-disk="${esc(s.disk)}" aria-label="target of ${esc(s.disk)}">${s.options.map((o) => `<option value="${esc(o)}" ${o === s.target ? "selected" : ""}>${esc(diskName(o))}</option>`).join("")}</select>`
      : esc(diskName(s.target)));
    const strikes = (st.strikes || []).map((s) => `<div class="strike"><span class="timing">${esc(s.timing)}</span> ${esc(diskName(s.disk))} → ${target(s)}: ${s.damage === null || s.damage === undefined ? '<b>?</b> <span class="sub">(strength unknown)</span>' : `<b>${s.damage}</b> damage`}</div>`).join("");
    const dead = (st.casualties || []).length ? `<div class="strike" style="color:var(--bad)">casualties: ${st.casualties.map((x) => esc(diskName(x))).join(", ")}</div>` : "";
    const hurt = (st.wounded || []).length ? `<div class="strike" style="color:var(--warn)">wounded: ${st.wounded.map((x) => esc(diskName(x))).join(", ")}</div>` : "";
    return `<div class="step" style="margin-top:.35rem">${strikes || '<div class="sub">no strikes</div>'}${dead}${hurt}</div>`;
  }
  function renderMelee() {
    const v = S.view, rep = v.report, pane = $("pane-melee");
    if (!rep) { pane.innerHTML = `<p class="msg bad">${esc(v.report_error || "no report")}</p>`; return; }
    $("melee-count").textContent = rep.engagements.length || "";
    if (!rep.engagements.length) { pane.innerHTML = '<p class="hint">No engagements: no disk pins an enemy.</p>'; return; }
    const order = engagementOrder(rep);
    const seq = [...rep.engagements].sort((a, b) => (order.get(a.id) || 99) - (order.get(b.id) || 99));
    const done = new Set();
    const fp = rep.melee_order.first_player;
    const h = [`<p class="hint">Fights in the order to resolve them. Inside a contest the order is forced (top-down); ${fp ? `the first player (<b>${esc(fp)}</b>)` : "the first player"} picks the order of the rest.</p>`];
    for (const e of seq) {
      if (done.has(e.id)) continue;
      const c = contestOf(rep, e.id);
      if (c) {
        h.push(`<div class="contest"><div class="ctitle">Contest${c.harried && c.harried.length ? " — harried: " + c.harried.map((x) => esc(diskName(x))).join(", ") : ""}${c.players_call ? " — the players' call (the top-down order contradicts itself)" : ""}</div>`);
        for (const e2 of seq.filter((x) => c.engagements.includes(x.id))) { h.push(engagementHtml(e2, order.get(e2.id))); done.add(e2.id); }
        h.push("</div>");
      } else { h.push(engagementHtml(e, order.get(e.id))); done.add(e.id); }
    }
    const m = S.melee;
    h.push('<div class="row" style="margin-top:.6rem">');
    if (!m) h.push('<button class="btn primary" id="melee-start">Resolve step by step</button>');
    else if (m.error) h.push(`<p class="msg bad">${esc(m.error)}</p><button class="btn" id="melee-start">Try again</button>`);
    else {
      const n = m.steps.length;
      h.push(`<button class="btn" id="melee-prev" ${S.meleeStep <= 0 ? "disabled" : ""}>◀ Back</button><button class="btn primary" id="melee-next" ${S.meleeStep >= n ? "disabled" : ""}>Next step ▶</button><span class="sub">${S.meleeStep}/${n}</span><button class="btn" id="melee-reset">Close</button>`);
    }
    h.push("</div>");
    if (m && !m.error && S.meleeStep >= m.steps.length) {
      h.push(`<div class="row"><button class="btn primary" id="melee-record">${esc(recordLabel())}</button></div>`);
      h.push(`<div class="call"><b>After the melee</b>: casualties ${m.casualties.length ? m.casualties.map((x) => esc(diskName(x))).join(", ") : "none"}; wounded ${m.wounded && m.wounded.length ? m.wounded.map((x) => esc(diskName(x))).join(", ") : "none"}.</div>`);
      if (m.missing && m.missing.length) h.push(`<div class="call"><b>Unknown numbers</b>: ${m.missing.map((x) => `${esc(diskName(x.disk))}: ${esc(x.note || x.stat)}`).join("; ")}. Set the unit (Disk tab) or add it to the catalog.</div>`);
    }
    pane.innerHTML = h.join("");
    for (const t of pane.querySelectorAll("[data-disk]")) t.addEventListener("click", () => selectDisk(t.dataset.disk));
    const on = (id, f) => { const b = $(id); if (b) b.addEventListener("click", f); };
    const meleeQuery = () => Object.entries(S.meleeTargets).map(([d, t]) => `target=${encodeURIComponent(d + ":" + t)}`).join("&");
    const fetchMelee = async (step) => {
      try { const q = meleeQuery(); S.melee = await getJSON("/api/melee" + (q ? "?" + q : "")); S.meleeStep = step; }
      catch (e) { S.melee = { error: e.status === 404 ? "Step-by-step resolution needs the melee book, which this server does not have." : e.message }; }
      renderMelee();
    };
    on("melee-start", () => { S.meleeTargets = {}; fetchMelee(0); });
    for (const sel of pane.querySelectorAll("select.pick-target")) {
      sel.addEventListener("change", () => { S.meleeTargets[sel.dataset.disk] = sel.value; fetchMelee(S.meleeStep); });
    }
    on("melee-record", recordMelee);
    if ($("melee-record")) loadBookState();
    for (const card of pane.querySelectorAll(".eng")) {
      card.addEventListener("click", (ev) => {
        if (ev.target.closest("select, button, [data-disk]")) return;
        S.highlight = S.highlight === card.dataset.engagement ? null : card.dataset.engagement;
        draw(); renderMelee();
      });
    }
    on("melee-next", () => { S.meleeStep++; renderMelee(); });
    on("melee-prev", () => { S.meleeStep = Math.max(0, S.meleeStep - 1); renderMelee(); });
    on("melee-reset", () => { S.melee = null; S.meleeStep = 0; renderMelee(); });
  }

  // ---- recording the melee in the game book -----------------------------------------------------------------------
  // The button says what one press will do, from the book's state (read again each time it appears, so a reload
  // shows a melee already recorded): start a game with the table's players and record, record, or nothing more.
  function recordLabel() {
    const b = S.book;
    if (!b) return "Record in the game book";
    if (!b.started) return "Start a game with these players and record";
    if (b.melee_recorded) return `Recorded in the game book (round ${b.round})`;
    return `Record in the game book (round ${b.round})`;
  }
  function updateRecordButton(message) {
    const btn = $("melee-record");
    if (!btn) return;
    btn.textContent = message || recordLabel();
    btn.disabled = !!(S.book && S.book.melee_recorded);
  }
  async function loadBookState() {
    try { S.book = await getJSON("/api/book"); } catch (e) { S.book = null; }
    updateRecordButton();
  }
  async function recordMelee() {
    const btn = $("melee-record");
    if (!btn || btn.disabled) return;
    btn.disabled = true;  // one press records once, however fast it is pressed again
    const players = [...S.view.scene.players].sort((x, y) => x.initiative - y.initiative).map((p, i) => ({ id: p.id, initiative: i + 1 }));
    try {
      if (!S.book) S.book = await getJSON("/api/book");
      if (!S.book.started) S.book = await post("/api/book/new", { players });
      S.book = (await post("/api/book/melee", { targets: S.meleeTargets })).book;
      updateRecordButton();
    } catch (e) {
      await loadBookState();
      if (!(S.book && S.book.melee_recorded)) updateRecordButton("Not recorded: " + e.message);
    }
  }

  function renderCalls() {
    const v = S.view, rep = v.report, pane = $("pane-calls");
    const h = [];
    if (!rep) h.push(`<p class="msg bad">${esc(v.report_error || "no report")}</p>`);
    else {
      const calls = rep.borderline || [];
      $("calls-count").textContent = calls.length || "";
      const tol = rep.tolerance_mm !== undefined ? ` (tolerance ${fmt(rep.tolerance_mm, 1)} mm)` : "";
      h.push(calls.length ? `<p class="hint">Calls a measurement error this small could flip${tol}. Check these by eye.</p>${calls.map(callHtml).join("")}` : `<p class="hint">No close calls: every call is clear of the measurement tolerance${tol}.</p>`);
      const off = rep.off_battlefield || [];
      if (off.length) h.push(`<h3>Off the battlefield</h3>${off.map((o) => `<div class="call">${nameChip(o.disk)} ${o.wholly ? "<b>wholly outside</b> (a casualty if it was activated)" : "partly outside"} <span class="sub">by ${fmt(Math.abs(o.margin_mm), 1)} mm</span></div>`).join("")}`);
      const control = (rep.terrain_control || []).filter((c) => c.disks.length);
      if (control.length) h.push(`<h3>Terrain control</h3>${control.map((c) => `<div class="row"><b>${esc(terrainName(c.terrain))}</b> <span>${c.controller ? `${dot(c.controller)} ${esc(c.controller)} controls it` : c.players.length > 1 ? "contested: " + c.players.map(esc).join(", ") : "nobody controls it"}${c.unknown_owner.length ? ` <span class="sub">(owner unknown: ${c.unknown_owner.map(esc).join(", ")})</span>` : ""}</span></div>`).join("")}`);
      const setup = rep.setup_violations || [];
      if (setup.length) h.push(`<details class="setup"><summary>Setup checks (deployment): ${setup.length}</summary>${setup.map((v) => `<div class="call"><b>${esc(v.kind.replace(/_/g, " "))}</b> ${esc(v.subject)}${v.other ? " – " + esc(v.other) : ""} <span class="sub">by ${fmt(Math.abs(v.margin_mm), 1)} mm${v.note ? " · " + esc(v.note) : ""}</span></div>`).join("")}</details>`);
    }
    if (v.hidden_disks && v.hidden_disks.length) {
      h.push(`<h3>Marked "not a disk"</h3>${v.hidden_disks.map((id) => `<div class="row"><span>${esc(id)}</span><button class="btn" data-restore="${esc(id)}">Restore</button></div>`).join("")}${flashHtml("calls-msg")}`);
    }
    pane.innerHTML = h.join("");
    for (const t of pane.querySelectorAll("[data-disk]")) t.addEventListener("click", () => selectDisk(t.dataset.disk));
    for (const b of pane.querySelectorAll("[data-restore]")) b.addEventListener("click", () => correct("/api/corrections/not-a-disk", { disk: b.dataset.restore, not_disk: false }, "Restored."));
  }

  // ---- taps near a disk ------------------------------------------------------------------------------------------
  // A tap on a disk selects it (its group takes the click). A tap that misses every disk but lands within
  // TAP_SLOP_PX of one selects the nearest: on a phone a small disk is smaller than a fingertip (44 px).
  const TAP_SLOP_PX = 22;
  function tableTap(ev) {
    const svg = $("table"), v = S.view;
    const m = svg.getScreenCTM();
    if (!v || !m) { clearSelection(); return; }
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(m.inverse());
    const slop = TAP_SLOP_PX * mmPerPx(viewBox(v.scene));
    let best = null, bestGap = Infinity;
    for (const d of v.scene.disks) {
      const gap = Math.hypot(p.x - d.x_mm, p.y - d.y_mm) - d.radius_mm;
      if (gap <= slop && gap < bestGap) { best = d; bestGap = gap; }
    }
    if (best) selectDisk(best.id);
    else clearSelection();
  }

  // ---- the two-point ruler -----------------------------------------------------------------------------------------
  // With *Ruler* on, a tap (or the start of a drag) sets one end, the next tap (or the drag's end) the other. An end
  // on or beside a disk snaps to that disk and measures from its edge, as the rules do (RB p.11, 18); two disks
  // give the report's own edge-to-edge distance and band. Anywhere else an end is that point of the table.
  const ruler = { on: false, a: null, b: null, down: null };
  function rulerEnd(ev) {
    const svg = $("table"), m = svg.getScreenCTM();
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(m.inverse());
    const slop = TAP_SLOP_PX * mmPerPx(viewBox(S.view.scene));
    let disk = null, best = Infinity;
    for (const d of [...S.view.scene.disks].sort((x, y) => y.z - x.z)) {  // topmost first
      const gap = Math.hypot(p.x - d.x_mm, p.y - d.y_mm) - d.radius_mm;
      if (gap <= 0) { disk = d; break; }
      if (gap <= slop && gap < best) { disk = d; best = gap; }
    }
    return disk ? { x: disk.x_mm, y: disk.y_mm, r: disk.radius_mm, disk: disk.id } : { x: p.x, y: p.y, r: 0, disk: null };
  }
  function rulerMeasure(a, b) {
    const rep = S.view.report;
    if (a.disk && b.disk && a.disk !== b.disk && rep) {
      const [lo, hi] = [a.disk, b.disk].sort();
      const pair = rep.pairs.find((q) => q.a === lo && q.b === hi);
      if (pair) return { mm: pair.distance_mm, band: pair.band };
    }
    const mm = Math.max(0, Math.hypot(a.x - b.x, a.y - b.y) - a.r - b.r);
    const lim = S.view.scene.range_bands_mm;
    return { mm, band: mm <= lim.short ? "short" : mm <= lim.medium ? "medium" : mm <= lim.long ? "long" : "siege" };
  }
  function rulerText() {
    if (!ruler.a) return "Ruler: tap or drag from one point or disk to another.";
    if (!ruler.b) return `Ruler: from ${ruler.a.disk ? diskName(ruler.a.disk) : "this point"} — now tap the other end.`;
    const r = rulerMeasure(ruler.a, ruler.b);
    const name = (e) => (e.disk ? diskName(e.disk) : "a point");
    return `${name(ruler.a)} to ${name(ruler.b)}: ${fmt(r.mm, 0)} mm edge to edge, ${r.band}`;
  }
  function drawRuler(svg, px) {
    const out = $("ruler-readout");
    if (out) { out.hidden = !ruler.on; out.textContent = ruler.on ? rulerText() : ""; }
    if (!ruler.on || !ruler.a) return;
    const g = el("g", { class: "ruler", "pointer-events": "none" }, svg);
    const mark = (e) => el("circle", { cx: e.x, cy: e.y, r: e.disk ? e.r + px * 4 : px * 5, fill: "none", stroke: "#fff", "stroke-width": px * 3, "stroke-dasharray": `${px * 2} ${px * 3}` }, g);
    mark(ruler.a);
    if (!ruler.b) return;
    mark(ruler.b);
    // the measured segment runs between the two edges along the line of centres
    const dx = ruler.b.x - ruler.a.x, dy = ruler.b.y - ruler.a.y, len = Math.hypot(dx, dy) || 1;
    const ux = dx / len, uy = dy / len;
    const x1 = ruler.a.x + ux * ruler.a.r, y1 = ruler.a.y + uy * ruler.a.r;
    const x2 = ruler.b.x - ux * ruler.b.r, y2 = ruler.b.y - uy * ruler.b.r;
    const r = rulerMeasure(ruler.a, ruler.b);
    el("line", { x1, y1, x2, y2, stroke: "#000", "stroke-width": px * 7, "stroke-linecap": "round" }, g);
    el("line", { x1, y1, x2, y2, stroke: BAND_COLOUR[r.band], "stroke-width": px * 4, "stroke-linecap": "round", class: "ruler-line" }, g);
    const t = el("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - px * 10, "text-anchor": "middle", "font-size": px * 15, "font-weight": 800, fill: BAND_COLOUR[r.band], stroke: "#000", "stroke-width": px * 3.5, "paint-order": "stroke", class: "ruler-label" }, g);
    t.textContent = `${fmt(r.mm, 0)} mm · ${r.band}`;
  }
  function wireRuler() {
    const svg = $("table"), btn = $("ruler-toggle");
    btn.addEventListener("click", () => {
      ruler.on = !ruler.on; ruler.a = ruler.b = null;
      btn.setAttribute("aria-pressed", String(ruler.on));
      svg.classList.toggle("measuring", ruler.on);
      draw();
    });
    // Capture phase: while measuring, taps set the ruler's ends instead of selecting disks or terrain.
    svg.addEventListener("pointerdown", (ev) => { if (ruler.on) ruler.down = { x: ev.clientX, y: ev.clientY, end: rulerEnd(ev) }; }, true);
    svg.addEventListener("click", (ev) => { if (ruler.on) { ev.stopPropagation(); ev.preventDefault(); } }, true);
    svg.addEventListener("pointerup", (ev) => {
      if (!ruler.on) return;
      const end = rulerEnd(ev), down = ruler.down;
      ruler.down = null;
      if (down && Math.hypot(ev.clientX - down.x, ev.clientY - down.y) > 12) { ruler.a = down.end; ruler.b = end; }  // a drag
      else if (!ruler.a || ruler.b) { ruler.a = end; ruler.b = null; }
      else ruler.b = end;
      draw();
    }, true);
  }

  // ---- the phone link and the rules reference (dialogs in templates/reference.html) -----------------------------
  function wireDialogs() {
    const open = (id) => { const d = $(id); if (d && !d.open) d.showModal(); };
    $("rules-open").addEventListener("click", () => open("rules-dialog"));
    $("phone-open").addEventListener("click", async () => {
      open("phone-dialog");
      const body = $("phone-body");
      try {
        const r = await getJSON("/api/phone");
        // The SVG is the server's own QR drawing (segno): numbers and paths only, no text from outside.
        body.innerHTML = r.svg
          ? `<div class="qr" role="img" aria-label="QR code of the table's address">${r.svg}</div><p class="sub">Scan it with the phone's camera, or type:</p>${r.urls.map((u) => `<p class="url"><code>${esc(u)}</code></p>`).join("")}`
          : `<p>${esc(r.why)}</p>`;
      } catch (e) {
        body.innerHTML = `<p class="msg bad">${esc(e.message)}</p>`;
      }
    });
  }

  function showTab(paneId) {
    for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b.dataset.pane === paneId));
    for (const p of document.querySelectorAll(".pane")) p.hidden = p.id !== paneId;
  }

  // ---- loading --------------------------------------------------------------------------------------------------
  function setBackgroundButtons() {
    const has = S.view && S.view.has_frame;
    $("bg-camera").disabled = !has;
    $("bg-camera").title = has ? "the rectified camera image" : "no camera image for this source";
    const cam = S.bg === "camera" && has;
    $("bg-camera").setAttribute("aria-pressed", String(cam));
    $("bg-map").setAttribute("aria-pressed", String(!cam));
  }

  function loadFrame(key) {
    return new Promise((resolve) => {
      const img = new Image();
      img.onload = () => { S.frameKey = key; S.frameSize = [img.naturalWidth, img.naturalHeight]; resolve(true); };
      img.onerror = () => resolve(false);
      img.src = withToken(`/api/frame.jpg?v=${encodeURIComponent(key)}`);
    });
  }

  function updateBanner() {
    const v = S.view;
    if (!v) return;
    const banner = $("banner");
    if (v.health.source === "demo") { banner.hidden = false; banner.className = "banner"; banner.innerHTML = '<b>Demo table</b> — no camera connected<span class="long">; a looping synthetic game. Start <code>tablesight serve --camera 0 --calibration table.json</code> to watch your own table</span>.'; }
    else if (v.health.source === "lost") { banner.hidden = false; banner.className = "banner bad"; banner.textContent = "The camera is lost — showing the last still table while it reconnects. " + (v.health.message || ""); }
    else if (v.report_error) { banner.hidden = false; banner.className = "banner bad"; banner.textContent = v.report_error; }
    else banner.hidden = true;
  }

  // While the rules are at work on a new table the page keeps the last report (of an earlier version of the
  // table), marked as such and drawn faded, instead of blanking the overlays.
  function renderReportState(v) {
    let box = $("report-state");
    if (!box) {
      box = document.createElement("div");
      box.id = "report-state";
      box.className = "report-state";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      document.querySelector(".table-wrap").appendChild(box);
    }
    const computing = v.report_state === "computing";
    document.body.dataset.reportState = computing ? (v.report ? "stale" : "computing") : "ready";
    $("table").classList.toggle("stale", computing && !!v.report);
    box.hidden = !computing;
    if (!computing) return;
    box.textContent = v.report
      ? `Computing the rules for this table… showing the report of the table as it was (version ${v.report_version})`
      : "Computing the rules for this table…";
  }

  let loading = null;
  let recheck = null;            // the pending re-check of a view whose report is still being computed
  const RECHECK_MS = 1000;
  async function loadView() {
    if (loading) return loading;
    loading = (async () => {
      try {
        const v = await getJSON("/api/view");
        if (v.has_frame && S.frameKey !== v.key) await loadFrame(v.key);
        if (v.key !== S.key) { S.melee = null; S.meleeStep = 0; S.meleeTargets = {}; }
        if (S.highlight && !(v.report && v.report.engagements.some((e) => e.id === S.highlight))) S.highlight = null;
        S.view = v; S.key = v.key;
        if (S.selected && !diskById(S.selected)) S.selected = null;
        if (S.terrainSel && !v.scene.terrain.some((t) => t.id === S.terrainSel)) S.terrainSel = null;
        setBackgroundButtons();
        renderHealth(v.health, v.busy);
        updateBanner();
        renderReportState(v);
        $("disk-hint").textContent = v.scene.disks.length
          ? "Tap a disk to see its ranges, line of sight and deviation targets. Tap a terrain piece to name it."
          : v.version === 0 ? "Waiting for the table to be still: the camera has not committed a picture yet." : "No disks on the table.";
        fitTable();
        draw();
        if (S.selected) { renderDiskPanel(); loadDetails(S.selected); }
        else if (S.terrainSel) renderTerrainPanel();
        else showNoSelection();  // the selected disk may be gone ("not a disk", off the table): no stale panel
        renderMelee();
        renderCalls();
        document.body.dataset.viewKey = v.key;
        announce("view", { view: v });
      } catch (e) {
        if (e.status === 401) { $("banner").hidden = false; $("banner").className = "banner bad"; $("banner").textContent = e.message; }
        else renderHealth({ source: "lost", message: "cannot reach the server: " + e.message }, false);
      } finally {
        loading = null;
        // A change announced while this load was under way: fetch again so the page ends on the newest view.
        if (S.wantKey && S.wantKey !== S.key) { S.wantKey = null; loadView(); }
        // A report still being computed is announced when it is done; should that announcement be missed (the
        // event stream reconnecting, or announced just before this view was taken), ask again meanwhile.
        else if (S.view && S.view.report_state === "computing" && !recheck) {
          recheck = setTimeout(() => { recheck = null; if (S.view && S.view.report_state === "computing") loadView(); },
            RECHECK_MS);
        }
      }
    })();
    return loading;
  }

  function connect() {
    const es = new EventSource(withToken("/api/events"));
    es.addEventListener("state", (ev) => {
      const data = JSON.parse(ev.data);
      if (data.error) { renderHealth({ source: "lost", message: "the table feed failed: " + data.error }, false); return; }
      renderHealth(data.health, data.busy);
      if (S.view && data.health) { S.view.health = data.health; updateBanner(); }
      if (data.key !== S.key) { S.wantKey = data.key; loadView(); }
    });
    es.onerror = () => renderHealth({ source: "lost", message: "connection to the server lost — reconnecting" }, false);
  }

  // ---- other scripts of the page (game.js) ------------------------------------------------------------------
  // They hear "tablesight:view" (a new view), "tablesight:drawn" (the table was redrawn: draw over it) and
  // "tablesight:select" (the selected disk), and use the same requests and names through window.tablesight.
  function announce(what, detail) { document.dispatchEvent(new CustomEvent("tablesight:" + what, { detail })); }
  window.tablesight = { getJSON, post, withToken, diskName, playerColour, esc, view: () => S.view, selected: () => S.selected,
    selectDisk, showTab, bandColour: (b) => BAND_COLOUR[b], placeLabels };

  // ---- wiring ---------------------------------------------------------------------------------------------------
  for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.pane));
  $("bg-camera").addEventListener("click", () => { S.bg = "camera"; localStorage.setItem("tablesight.bg", "camera"); setBackgroundButtons(); draw(); });
  $("bg-map").addEventListener("click", () => { S.bg = "map"; localStorage.setItem("tablesight.bg", "map"); setBackgroundButtons(); draw(); });
  $("fit").setAttribute("aria-pressed", String(S.fit));
  $("fit").addEventListener("click", () => {
    S.fit = !S.fit;
    localStorage.setItem("tablesight.fit", S.fit ? "1" : "0");
    $("fit").setAttribute("aria-pressed", String(S.fit));
    draw();
  });
  $("table").addEventListener("click", tableTap);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") clearSelection(); });
  // Names, chips and cards that take a tap are buttons for the keyboard too: Enter or Space taps them (native
  // buttons and the table's shapes answer these keys themselves).
  document.addEventListener("keydown", (e) => {
    if ((e.key !== "Enter" && e.key !== " ") || e.defaultPrevented) return;
    const t = e.target;
    if (!(t instanceof HTMLElement) || t.localName === "button" || t.getAttribute("role") !== "button") return;
    e.preventDefault();
    t.click();
  });
  if (token) $("calib-link").href = withToken("calibration");
  // The table fits the window's height on a laptop: measure what sits above it.
  function fitTable() {
    const top = $("table").getBoundingClientRect().top + window.scrollY;
    document.documentElement.style.setProperty("--chrome", `${Math.round(top + 40)}px`);
  }
  window.addEventListener("resize", fitTable);
  let resizeTimer = null;
  new ResizeObserver(() => { clearTimeout(resizeTimer); resizeTimer = setTimeout(draw, 60); }).observe($("table"));
  wireDialogs();
  wireRuler();
  nameKeywordsReady = getJSON("/api/corrections").then((c) => { S.nameKeywords = c.terrain_name_keywords || {}; }).catch(() => {});
  getJSON("/api/catalog").then((c) => {
    for (const u of c.units || []) S.units.set(u.key, u);
    if (S.view) { draw(); if (S.selected) renderDiskPanel(); }
  }).catch(() => {}); // no melee book on this server: units are shown by their keys
  loadView().then(connect);
})();
