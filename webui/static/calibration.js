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

  function render(c, h) {
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
    const res = cal.residuals_mm || cal.residuals || {};
    const ruler = cal.ruler || cal.ruler_check || null;
    const disks = cal.disk_diameters_mm || cal.diameters_mm || null;
    const drift = c.drift;
    box.innerHTML = `<div class="calib-grid">
      <div>${c.frame_url ? `<img id="calib-frame" alt="camera frame with the detected markers and ruler" src="${esc(withToken(c.frame_url))}">` : '<p class="na">No camera frame yet.</p>'}</div>
      <div>
        <h3>Marker residuals</h3><table class="kv">${rows(res, " mm") || '<tr><td colspan="2" class="sub">none recorded</td></tr>'}</table>
        <h3>Ruler scale check</h3>${ruler ? `<table class="kv">${rows(ruler)}</table>` : '<p class="sub">the ruler was not seen at calibration</p>'}
        <h3>Disk sizes</h3>${disks ? `<table class="kv">${rows(disks, " mm")}</table>` : '<p class="sub">not measured: the defaults 44 / 64 / 89 mm apply</p>'}
        <h3>Drift</h3>${drift ? `<table class="kv">${rows(drift)}</table>` : '<p class="sub">no drift monitor for this source</p>'}
        <h3>Age</h3><p>${c.age_s !== null && c.age_s !== undefined ? fmt(c.age_s / 60, 1) + " min" : "–"}; error ${fmt(c.error_mm)} mm</p>
        <button class="btn primary" id="recal" ${c.can_recalibrate ? "" : "disabled"}>Recalibrate from the current frame</button>
        <div class="msg" id="recal-msg"></div>
      </div></div>`;
    const b = $("recal");
    if (b) b.addEventListener("click", async () => {
      b.disabled = true; $("recal-msg").textContent = "recalibrating…";
      try {
        const r = await fetch(withToken("/api/calibration/recalibrate"), { method: "POST", headers: { "Content-Type": "application/json", "X-Tablesight-Token": writeKey }, body: "{}" });
        const d = await r.json();
        if (!r.ok) throw new Error(d.error || `HTTP ${r.status}`);
        $("recal-msg").className = "msg good"; $("recal-msg").textContent = "Recalibrated.";
        load();
      } catch (e) { $("recal-msg").className = "msg bad"; $("recal-msg").textContent = e.message; b.disabled = false; }
    });
  }

  async function load() {
    try { render(await getJSON("/api/calibration"), await getJSON("/api/health")); }
    catch (e) { $("calib").innerHTML = `<p class="msg bad">${esc(e.message)}</p>`; }
  }
  load();
})();
