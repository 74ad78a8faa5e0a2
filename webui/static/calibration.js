/* tablesight — the calibration page: what the table calibration says about itself, and a recalibrate button. */
(() => {
  "use strict";
  const token = new URLSearchParams(location.search).get("token") || "";
  const writeKey = (document.querySelector('meta[name="tablesight-write-key"]') || {}).content || token;
  const withToken = (p) => (token ? p + (p.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : p);
  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const fmt = (v, nd = 2) => (v === null || v === undefined || Number.isNaN(Number(v)) ? "–" : Number(v).toFixed(nd));
  const $ = (id) => document.getElementById(id);
  if (token) $("table-link").href = withToken("./");

  async function getJSON(p) {
    const r = await fetch(withToken(p));
    const d = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw new Error(d.error || `HTTP ${r.status}`);
    return d;
  }

  function rows(obj, unit) {
    return Object.entries(obj || {}).map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num">${typeof v === "number" ? fmt(v) + (unit || "") : esc(JSON.stringify(v))}</td></tr>`).join("");
  }

  const kept = {};
  function render(c, h) {
    for (const id of ["measure-msg", "recal-msg"]) { const el = $(id); if (el && el.innerHTML) kept[id] = { cls: el.className, html: el.innerHTML }; }
    const pill = `<span class="pill ${esc(h.source)}">${esc(String(h.source).toUpperCase())}</span>`;
    $("health").innerHTML = pill + (h.message ? `<span>${esc(h.message)}</span>` : "");
    const box = $("calib");
    if (!c.available) {
      box.innerHTML = `<p class="na">Calibration is ${esc(c.reason)}.</p>
        <p class="hint">With a camera: print the markers (<code>tablesight markers -o markers.pdf</code>), lay them at the
        battlefield's corners, then <code>tablesight calibrate FRAME.jpg -o table.json</code> and
        <code>tablesight serve --camera 0 --calibration table.json</code>.</p>`;
      return;
    }
    const cal = c.calibration || {};
    const res = cal.residuals || [];
    const byMarker = new Map();
    for (const r of res) {
      const m = byMarker.get(r.marker) || { max: 0, used: r.used };
      m.max = Math.max(m.max, r.residual_mm);
      byMarker.set(r.marker, m);
    }
    const resRows = [...byMarker.entries()].sort((a, b) => a[0] - b[0]).map(([id, m]) =>
      `<tr><td>marker ${id}</td><td class="num ${m.used ? (m.max < 1.5 ? "ok" : "notok") : "notok"}">${fmt(m.max)} mm${m.used ? "" : " (rejected)"}</td></tr>`).join("");
    const ruler = cal.ruler;
    const rulerHtml = ruler ? `<table class="kv">
        <tr><td>measured length</td><td class="num">${fmt(ruler.measured_length_mm, 1)} mm of ${fmt(ruler.nominal_length_mm, 0)}</td></tr>
        <tr><td>scale error</td><td class="num ${Math.abs(ruler.scale_error_percent) < 0.5 ? "ok" : "notok"}">${fmt(ruler.scale_error_percent)} %</td></tr>
        ${ruler.band_limits_mm ? `<tr><td>band marks</td><td class="num">${ruler.band_limits_mm.map((v) => fmt(v, 0)).join(" / ")} mm</td></tr>` : ""}
        <tr><td>scale from</td><td class="num">${esc(cal.scale_source || "markers")}</td></tr></table>` : '<p class="sub">the ruler was not seen at calibration</p>';
    const disks = cal.disk_diameters_mm;
    const drift = c.drift;
    const warn = (cal.warnings || []).map((w) => `<div class="call">${esc(w)}</div>`).join("");
    box.innerHTML = `<div class="calib-grid">
      <div>${c.frame_url ? `<img id="calib-frame" alt="camera frame with the detected markers and ruler" src="${esc(withToken(c.frame_url))}">` : '<p class="na">No camera frame yet.</p>'}${warn}</div>
      <div>
        <h3>Marker residuals (worst corner)</h3><table class="kv">${resRows || '<tr><td colspan="2" class="sub">none recorded</td></tr>'}
          <tr><td>mean / max</td><td class="num">${fmt(cal.residual_mean_mm)} / ${fmt(cal.residual_max_mm)} mm</td></tr></table>
        <h3>Ruler scale check</h3>${rulerHtml}
        <h3>Disk sizes</h3>${disks ? `<table class="kv">${["small", "medium", "large"].map((k, i) => `<tr><td>${k}</td><td class="num">Ø ${fmt(disks[i], 1)} mm</td></tr>`).join("")}</table>` : '<p class="sub">not measured: the defaults 44 / 64 / 89 mm apply</p>'}
        <h3>Drift</h3>${drift ? `<table class="kv"><tr><td>state</td><td class="num ${drift.status === "ok" ? "ok" : drift.status === "moved" || drift.status === "stale" ? "notok" : ""}">${esc(drift.status)}</td></tr>
          <tr><td>shift</td><td class="num">${fmt(drift.shift_mm)} mm</td></tr><tr><td>checks / recalibrations</td><td class="num">${drift.checks} / ${drift.recalibrations}</td></tr>
          <tr><td colspan="2" class="sub">${esc(drift.message)}</td></tr></table>` : '<p class="sub">no drift monitor for this source</p>'}
        <h3>Age</h3><p>${c.age_s !== null && c.age_s !== undefined ? fmt(c.age_s / 60, 1) + " min" : esc(cal.created || "–")}; error ${fmt(c.error_mm)} mm</p>
        <button class="btn" id="measure" ${c.can_measure_disks ? "" : "disabled"}>Measure disk sizes now</button>
        <div class="sub">Lay a few disks of each size apart on the felt first.</div><div class="msg" id="measure-msg"></div>
        <button class="btn primary" id="recal" ${c.can_recalibrate ? "" : "disabled"}>Recalibrate from the current frame</button>
        <div class="msg" id="recal-msg"></div>
      </div></div>`;
    const mb = $("measure");
    if (mb) mb.addEventListener("click", async () => {
      mb.disabled = true; $("measure-msg").className = "msg"; $("measure-msg").textContent = "measuring…";
      try {
        const r = await fetch(withToken("/api/calibration/measure-disks"), { method: "POST", headers: { "Content-Type": "application/json", "X-Tablesight-Token": writeKey }, body: "{}" });
        const d = await r.json();
        if (!r.ok) throw new Error(d.error || `HTTP ${r.status}`);
        const m = d.measurement;
        $("measure-msg").className = "msg good";
        $("measure-msg").innerHTML = ["small", "medium", "large"].map((k) => `${k} Ø ${fmt(m.diameters_mm[k], 1)} mm ${m.measured[k] ? `(${m.counts[k]} disks, spread ${fmt(m.spread_mm[k], 1)} mm)` : "(default: none seen)"}`).join("<br>")
          + `<br>${d.applied ? "In use now." : `Use them with <code>--disk-diameters-mm ${esc(m.argument)}</code>.`}`;
      } catch (e) { $("measure-msg").className = "msg bad"; $("measure-msg").textContent = e.message; }
      mb.disabled = false;
    });
    // A refresh keeps the outcome of the last button press on show.
    for (const [id, msg] of Object.entries(kept)) { const el = $(id); if (el && msg) { el.className = msg.cls; el.innerHTML = msg.html; } }
    const b = $("recal");
    if (b) b.addEventListener("click", async () => {
      b.disabled = true; $("recal-msg").textContent = "recalibrating…";
      try {
        const r = await fetch(withToken("/api/calibration/recalibrate"), { method: "POST", headers: { "Content-Type": "application/json", "X-Tablesight-Token": writeKey }, body: "{}" });
        const d = await r.json();
        if (!r.ok) throw new Error(d.error || `HTTP ${r.status}`);
        $("recal-msg").className = "msg good"; $("recal-msg").textContent = d.message || "Recalibrated.";
        setTimeout(load, 1500);
      } catch (e) { $("recal-msg").className = "msg bad"; $("recal-msg").textContent = e.message; b.disabled = false; }
    });
  }

  async function load() {
    try { render(await getJSON("/api/calibration"), await getJSON("/api/health")); }
    catch (e) { $("calib").innerHTML = `<p class="msg bad">${esc(e.message)}</p>`; }
  }
  load();
  // Drift and calibration age change while serving: refresh on the server's events, at most every 5 s.
  let last = Date.now();
  const es = new EventSource(withToken("/api/events"));
  es.addEventListener("state", () => {
    if (Date.now() - last < 5000) return;
    last = Date.now();
    load();
  });
})();
