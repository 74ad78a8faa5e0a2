/* tablesight — the game on the table page: round and phase, command cards, the disks that may still activate
 * (ringed on the table), the melee recorded once, the end phase, victory points and casualties, undo, and
 * keyboard shortcuts; and a ranged attack from the selected disk (/api/shoot/<id>, the same code as
 * `tablesight shoot`): its targets ringed in their band's colour, cover marked; and what a move did when one disk
 * moved between two stable scenes (/api/move, as `tablesight move`), until dismissed; and the deployment check
 * (/api/deploy, as `tablesight deploy`) with the disks that break it ringed in red. Everything shown comes from the game book (/api/book, /api/book/turn), never from page
 * memory, so a reload, a second device or a restarted server shows the same game.
 *
 * table.js announces "tablesight:view" (a new view of the table), "tablesight:drawn" (the table was redrawn:
 * the rings are drawn over it) and "tablesight:select" (the selected disk); its requests and names are used
 * through window.tablesight.
 */
(() => {
  "use strict";
  const T = window.tablesight;
  if (!T) return;
  const NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const esc = T.esc;
  const PHASE_NAME = { activation: "Activation", melee: "Melee", end: "End" };
  const STRATEGIES = [["bold", "Bold"], ["direct", "Direct"], ["cunning", "Cunning"], ["slow", "Slow"]];
  const POLL_MS = 2000; // another device may change the book: look for new entries this often
  const KEYS = [["N", "next step of the round"], ["A", "activate the selected disk"], ["S", "shoot with the selected disk"], ["D", "the current card is resolved"],
    ["M", "the melee"], ["U", "undo the last book entry"], ["G", "this game panel"]];

  const G = { book: null, turn: null, selected: null, msg: "", msgBad: false, available: true, busy: false, shot: null,
    move: null, lastScene: null, lastVersion: null, deploy: null };

  const players = () => (G.book ? G.book.players : []);
  const result = () => (G.turn && G.turn.result) || (G.book && G.book.result) || null;
  const gameOver = () => { const r = result(); return !!(r && r.game_over); };

  // ---- loading ------------------------------------------------------------------------------------------------
  let loading = null;
  async function refresh() {
    if (loading) return loading;
    loading = (async () => {
      try {
        const [book, turn] = await Promise.all([T.getJSON("/api/book"), T.getJSON("/api/book/turn")]);
        G.book = book; G.turn = turn; G.available = true;
      } catch (e) {
        if (e.status === 503 || e.status === 404) G.available = false;
        else { G.msg = "game book: " + e.message; G.msgBad = true; }
      } finally { loading = null; }
      render();
    })();
    return loading;
  }

  async function act(path, body, okText) {
    if (G.busy) return;
    G.busy = true;
    try {
      await T.post(path, body || {});
      G.msg = okText || ""; G.msgBad = false;
    } catch (e) { G.msg = e.message; G.msgBad = true; }
    finally { G.busy = false; }
    await refresh();
  }

  // ---- the steps of the round ---------------------------------------------------------------------------------
  function startGame() {
    const v = T.view();
    const ps = v ? [...v.scene.players].sort((a, b) => a.initiative - b.initiative) : [];
    if (ps.length < 2) { G.msg = "The table's players are not known yet: name them in a disk's Players… dialog."; G.msgBad = true; render(); return; }
    act("/api/book/new", { players: ps.map((p, i) => ({ id: p.id, initiative: i + 1 })) }, "Game started: round 1, activation phase.");
  }
  function nextStep() {
    const b = G.book;
    if (!b || !b.started) { startGame(); return; }
    if (gameOver()) return;
    if (b.phase === "activation") act("/api/book/phase", { round: b.round, phase: "melee" }, `Round ${b.round}: melee phase.`);
    else if (b.phase === "melee") act("/api/book/end-phase", {}, "End phase: every token but wounds removed, command cards back in hand.");
    else if (b.round < (G.turn ? G.turn.rounds : 5)) act("/api/book/phase", { round: b.round + 1, phase: "activation" }, `Round ${b.round + 1}: activation phase.`);
  }
  function nextLabel() {
    const b = G.book;
    if (b.phase === "activation") return "To the melee phase";
    if (b.phase === "melee") return "End phase: clear the tokens";
    return `Start round ${b.round + 1}`;
  }
  function activate(disk) {
    if (!disk) { G.msg = "Select a disk on the table first."; G.msgBad = true; render(); return; }
    act("/api/book/activate", { disk }, `${T.diskName(disk)} activated.`);
  }
  function cardDone() {
    if (G.book && G.book.card_turn) act("/api/book/card-done", { player: G.book.card_turn }, `${G.book.card_turn}'s card resolved.`);
  }
  function revealCards() {
    const cards = {};
    for (const s of document.querySelectorAll("select.card-pick")) if (s.value) cards[s.dataset.player] = s.value;
    act("/api/book/cards", { cards }, "Cards revealed.");
  }
  function undo() {
    if (G.book && G.book.can_undo) act("/api/book/undo", { steps: 1 }, "The last book entry was undone.");
  }
  async function shoot(disk) {
    if (!disk) { G.msg = "Select the shooter on the table first."; G.msgBad = true; render(); return; }
    try { G.shot = await T.getJSON(`/api/shoot/${encodeURIComponent(disk)}`); G.msg = ""; G.msgBad = false; }
    catch (e) { G.shot = null; G.msg = e.message; G.msgBad = true; }
    openGame();
    render();
  }
  // One disk moved between the last two stable scenes: say what the move did (flips, new pins and Impact,
  // terrain entered, off the battlefield). No disk or several moved: nothing to say.
  async function checkMove(v) {
    const before = G.lastScene, version = v.version;
    if (G.lastVersion === version) return;
    G.lastScene = v.scene; G.lastVersion = version;
    if (!before || v.busy) return;
    try { G.move = await T.post("/api/move", { before, after: v.scene }); }
    catch (e) { document.body.dataset.moveChecked = `${version}:none`; return; }
    render();
    document.body.dataset.moveChecked = `${version}:${G.move.moved}`;
  }
  function moveHtml(m) {
    const parts = [`<b>${esc(T.diskName(m.moved))}</b> moved ${Number(m.distance_mm).toFixed(0)} mm: ${m.flips_needed} flip${m.flips_needed === 1 ? "" : "s"}`
      + (m.flip_budget === null ? "" : ` of ${m.flip_budget}${m.within_budget === false ? " — <b>more than its Move</b>" : ""}`)];
    for (const p of m.newly_pinned) parts.push(`pins ${esc(T.diskName(p.disk))}${p.enemy ? " (enemy)" : ""}${p.impact_damage ? ` — Impact ${p.impact_damage}` : ""}${p.fortified ? " (Fortified: no Impact)" : ""}`);
    for (const t of m.terrain_entered) if (t.entered) parts.push(`on ${esc(t.name || t.terrain)}${t.consequences.length ? ": " + t.consequences.map((c) => esc(c.text)).join("; ") : ""}`);
    for (const c of [...m.pinned_enemy_stop, ...m.rough_stop]) parts.push(esc(c.note));
    if (m.off_battlefield && m.off_battlefield.wholly) parts.push("<b>wholly off the battlefield: a casualty</b> (RB p.20)");
    return `<div class="game-move" id="game-move" role="status"><span>${parts.join(" · ")}</span> <button class="btn" id="game-move-dismiss" type="button">Dismiss</button></div>`;
  }
  async function checkDeployment() {
    const q = [...document.querySelectorAll("select.edge-pick")].filter((e) => e.value)
      .map((e) => "edge=" + encodeURIComponent(`${e.dataset.player}=${e.value}`)).join("&");
    try { G.deploy = await T.getJSON("/api/deploy" + (q ? "?" + q : "")); G.msg = ""; G.msgBad = false; }
    catch (e) { G.deploy = null; G.msg = e.message; G.msgBad = true; }
    render();
  }
  const PROBLEM = { disk_outside_zone: "not wholly inside its deployment zone", disk_in_enemy_zone: "on an enemy zone",
    disk_on_enemy_disk: "on an enemy disk" };
  function deployHtml() {
    const v = T.view(), d = G.deploy, h = ['<details id="game-deploy-box"' + (d ? " open" : "") + '><summary class="game-h">Deployment</summary>'];
    if (v && !(v.scene.deployment_zones || []).length) {
      h.push('<p class="sub">The scene has no deployment zones: say each player\'s edge (zones to medium range, RB p.13).</p>');
      for (const p of v.scene.players) {
        h.push(`<div class="row"><label class="card-label" for="edge-${esc(p.id)}">${esc(p.id)}</label><select class="edge-pick" id="edge-${esc(p.id)}" data-player="${esc(p.id)}"><option value="">edge?</option>${["top", "bottom", "left", "right"].map((e) => `<option value="${e}">${e}</option>`).join("")}</select></div>`);
      }
    }
    h.push('<div class="row"><button class="btn" id="game-deploy" type="button">Check the deployment</button>' + (d ? '<button class="btn" id="game-deploy-close" type="button">Hide</button>' : "") + "</div>");
    if (d) {
      const bad = d.disks.filter((x) => !x.ok);
      h.push(bad.length ? `<div id="game-deploy-result">${bad.map((x) => `<div class="call" data-disk="${esc(x.disk)}">${esc(T.diskName(x.disk))}: ${[...new Set(x.problems.map((p) => PROBLEM[p.kind] || p.note || p.kind))].map(esc).join("; ")}</div>`).join("")}</div>`
        : `<p class="call" id="game-deploy-result">Every disk is deployed correctly${d.zone_source === "none" ? " (no zones known)" : ""}.</p>`);
      for (const t of d.terrain_setup || []) h.push(`<div class="sub">${esc(t.note || t.kind)}</div>`);
    }
    h.push("</details>");
    return h.join("");
  }
  function closeShot() { if (G.shot) { G.shot = null; render(); } }
  function openGame() { T.showTab("pane-game"); }
  function openMelee() { T.showTab("pane-melee"); }

  // ---- drawing ------------------------------------------------------------------------------------------------
  function turnText() {
    const b = G.book;
    if (!b || !b.started) return "";
    const r = result();
    if (r && r.game_over) return r.winner ? `Game over — ${r.winner} wins` : "Game over";
    if (b.phase === "activation") {
      if (b.card_turn) return `${b.card_turn}'s command card`;
      const n = G.turn && G.turn.may_activate ? G.turn.may_activate.length : null;
      return n === null ? "reveal command cards" : `${n} disk${n === 1 ? "" : "s"} may still activate`;
    }
    if (b.phase === "melee") return b.melee_recorded ? "melee recorded" : "resolve the fights";
    return "tokens cleared";
  }

  function renderMove() {
    let box = $("game-move-box");
    if (!box) {
      box = document.createElement("div");
      box.id = "game-move-box";
      $("game-bar").after(box);
    }
    box.innerHTML = G.move ? moveHtml(G.move) : "";
    if ($("game-move-dismiss")) $("game-move-dismiss").addEventListener("click", () => { G.move = null; renderMove(); });
  }

  function renderBar() {
    const bar = $("game-bar");
    renderMove();
    if (!G.available) { bar.hidden = true; return; }
    bar.hidden = false;
    const b = G.book;
    const shootBtn = G.selected ? `<button class="btn" id="game-bar-shoot" type="button">Shoot with ${esc(T.diskName(G.selected))} (S)</button>` : "";
    const wireShoot = () => { if ($("game-bar-shoot")) $("game-bar-shoot").addEventListener("click", () => shoot(G.selected)); };
    if (!b || !b.started) {
      bar.innerHTML = `<span class="game-none">No game in the book.</span> <button class="btn" id="game-bar-new" type="button">Start a game</button>${shootBtn}`;
      $("game-bar-new").addEventListener("click", startGame);
      wireShoot();
      return;
    }
    const score = b.players.map((p) => `<span class="game-score" data-player="${esc(p.id)}"><span class="dot" style="background:${T.playerColour(p.id)}"></span>${esc(p.id)} <b>${p.victory_points}</b> VP · ${p.casualties} lost</span>`).join("");
    bar.innerHTML = `<span class="game-round" id="game-round">Round <b>${b.round}</b>/${G.turn ? G.turn.rounds : 5}</span>`
      + `<span class="game-phase" id="game-phase" data-phase="${esc(b.phase)}">${esc(PHASE_NAME[b.phase] || b.phase)} phase</span>`
      + `<span class="game-turn" id="game-turn">${esc(turnText())}</span>${score}`
      + `<button class="btn" id="game-bar-open" type="button" aria-label="open the game panel">Game ▸</button>`
      + shootBtn;
    $("game-bar-open").addEventListener("click", openGame);
    wireShoot();
  }

  function activationHtml() {
    const b = G.book, t = G.turn, h = [];
    const step = b.command_cards.filter((c) => c.round === b.round).slice(-1)[0];
    if (b.card_turn) {
      h.push(`<div class="call" id="game-card-now"><b>${esc(b.card_turn)}</b> resolves their <b>${esc(step.cards[b.card_turn])}</b> card: activate its disks, then say it is done.</div>`);
      h.push(`<p class="sub">Order: ${step.order.map((p) => (step.resolved.includes(p) ? `<s>${esc(p)}</s>` : esc(p))).join(" → ")}</p>`);
      h.push(`<div class="row"><button class="btn primary" id="game-card-done" type="button">Card resolved (D)</button></div>`);
    } else {
      h.push(`<p class="hint">Command cards (RB p.7): each player picks a strategy; they resolve Bold → Direct → Cunning → Bold, Slow last, ties by initiative.</p>`);
      for (const p of b.players) {
        h.push(`<div class="row"><label for="card-${esc(p.id)}" class="card-label">${esc(p.id)}</label><select class="card-pick" id="card-${esc(p.id)}" data-player="${esc(p.id)}"><option value="">no card</option>${STRATEGIES.map(([v, n]) => `<option value="${v}">${n}</option>`).join("")}</select></div>`);
      }
      h.push(`<div class="row"><button class="btn" id="game-reveal" type="button">Reveal the cards</button></div>`);
    }
    if (t && t.activation) {
      const may = t.activation.filter((a) => a.may_activate);
      const mine = (a) => !b.card_turn || a.player === b.card_turn;
      h.push(`<h3 class="game-h">May still activate (${may.length})</h3>`);
      h.push(may.length ? `<div class="row" id="game-may">${may.map((a) => `<button class="btn${mine(a) ? "" : " faint"}" type="button" data-activate="${esc(a.disk)}"><span class="dot" style="background:${T.playerColour(a.player)}"></span>${esc(T.diskName(a.disk))}</button>`).join("")}</div>`
        : '<p class="sub">none</p>');
      const not = t.activation.filter((a) => !a.may_activate);
      if (not.length) h.push(`<details><summary class="sub">Cannot activate (${not.length})</summary>${not.map((a) => `<div class="sub">${esc(T.diskName(a.disk))}: ${esc(a.why_not.join("; "))}</div>`).join("")}</details>`);
      if (t.activation_phase_over) h.push('<p class="call" id="game-activation-over">Every disk is activated or pinned: on to the melee phase (RB p.7).</p>');
    } else if (t && t.scene_error) h.push(`<p class="msg bad">${esc(t.scene_error)}</p>`);
    return h.join("");
  }

  function meleeHtml() {
    const b = G.book;
    if (b.melee_recorded) return `<p class="call" id="game-melee-state">The melee of round ${b.round} is recorded in the book.</p>`;
    return `<p class="hint" id="game-melee-state">Walk the fights in order in the Melee tab and record them there (once per round).</p>`
      + `<div class="row"><button class="btn" id="game-open-melee" type="button">Open the melee (M)</button></div>`;
  }

  function resultHtml(r) {
    const why = r.why === "eliminated" ? "every other player has no disk on the battlefield (RB p.11)" : "five rounds played (RB p.11)";
    return `<div class="call game-over" id="game-over"><b>Game over</b>: ${r.winner ? `<b>${esc(r.winner)}</b> wins` : "no winner"} — ${why}.`
      + `<ol>${r.standings.map((s) => `<li>${esc(s.player)}: ${s.victory_points} VP${s.eliminated ? " (eliminated)" : ""}</li>`).join("")}</ol></div>`;
  }

  function shotHtml(r) {
    const h = [`<h3 class="game-h" id="game-shot-title">Shooting: ${esc(T.diskName(r.shooter))}</h3>`];
    if (!r.can_shoot) h.push(`<p class="call" id="game-shot-why">Cannot shoot: ${esc(r.why_not)}</p>`);
    if (r.targets.length) {
      h.push(`<table class="game-table" id="game-shot-targets"><thead><tr><th scope="col">Target</th><th scope="col">Band</th><th scope="col">mm</th><th scope="col">Dice</th></tr></thead><tbody>`
        + r.targets.map((t) => `<tr data-target="${esc(t.target)}" data-band="${esc(t.band)}"><td>${esc(T.diskName(t.target))}</td><td><span class="dot" style="background:${T.bandColour(t.band)}"></span>${esc(t.band)}</td><td>${Number(t.distance_mm).toFixed(0)}</td><td>${t.dice ?? "?"}${t.cover ? " (cover −1)" : ""}${t.only_criticals ? " crits only" : ""}</td></tr>`).join("")
        + "</tbody></table>");
    }
    if (r.not_targets.length) h.push(`<details><summary class="sub">Not targets (${r.not_targets.length})</summary>${r.not_targets.map((n) => `<div class="sub">${esc(T.diskName(n.disk))}: ${esc(n.reason)}</div>`).join("")}</details>`);
    h.push('<div class="row"><button class="btn" id="game-shot-close" type="button">Done shooting</button></div>');
    return h.join("");
  }

  function renderPane() {
    const pane = $("pane-game");
    if (!pane) return;
    if (!G.available) { pane.innerHTML = '<p class="hint">This server keeps no game book.</p>'; return; }
    const b = G.book, h = [];
    if (!b || !b.started) {
      h.push('<p class="hint">The game book follows the five rounds: command cards, activations, the melee, the end phase, victory points.</p>');
      h.push('<div class="row"><button class="btn primary" id="game-new" type="button">Start a game with the table\'s players (N)</button></div>');
    } else {
      h.push(`<table class="game-table" id="game-players"><thead><tr><th scope="col">Player</th><th scope="col"><abbr title="initiative">Init.</abbr></th><th scope="col"><abbr title="victory points">VP</abbr></th><th scope="col"><abbr title="casualties">Lost</abbr></th><th scope="col">Reserve</th></tr></thead><tbody>`
        + b.players.map((p) => `<tr data-player="${esc(p.id)}"><td><span class="dot" style="background:${T.playerColour(p.id)}"></span>${esc(p.id)}</td><td>${p.initiative}</td>`
          + `<td class="nowrap"><span class="vp">${p.victory_points}</span> <button class="btn vp-btn" type="button" data-vp="${esc(p.id)}" aria-label="${esc(p.id)}: one victory point more (the scenario's objective)">+1</button></td>`
          + `<td class="lost">${p.casualties}</td><td class="reserve">${((b.reserves || {})[p.id] || []).length}</td></tr>`).join("")
        + "</tbody></table>");
      // The reserve (RB p.13): disks not deployed; after round 5 they count as casualties (RB p.11).
      h.push('<details id="game-reserve-box"><summary class="sub">Reserve (disks not deployed)</summary>'
        + b.players.map((p) => `<div class="row"><label class="card-label" for="reserve-${esc(p.id)}">${esc(p.id)}</label><input type="text" class="reserve-input" id="reserve-${esc(p.id)}" data-player="${esc(p.id)}" value="${esc(((b.reserves || {})[p.id] || []).join(", "))}" placeholder="disk names, comma-separated"><button class="btn" type="button" data-reserve="${esc(p.id)}" aria-label="Save ${esc(p.id)}'s reserve">Save</button></div>`).join("")
        + "</details>");
      for (const pid of (G.turn && G.turn.eliminated) || []) h.push(`<p class="call">${esc(pid)} has no disk on the battlefield: eliminated (RB p.11).</p>`);
      const r = result();
      if (r && r.game_over) h.push(resultHtml(r));
      else {
        h.push(`<h3 class="game-h">Round ${b.round}: ${esc(PHASE_NAME[b.phase] || b.phase)} phase</h3>`);
        if (b.phase === "activation") h.push(activationHtml());
        else if (b.phase === "melee") h.push(meleeHtml());
        else h.push('<p class="sub">Every token but wounds is off the disks; the command cards are back in hand (RB p.10).</p>');
        h.push(`<div class="row"><button class="btn primary" id="game-next" type="button">${esc(nextLabel())} (N)</button></div>`);
      }
      h.push(`<div class="row"><button class="btn" id="game-undo" type="button" ${b.can_undo ? "" : "disabled"}>Undo the last book entry (U)</button></div>`);
    }
    if (G.shot) h.push(shotHtml(G.shot));
    h.push(deployHtml());
    h.push(`<p class="msg ${G.msgBad ? "bad" : "good"}" id="game-msg" role="status">${esc(G.msg)}</p>`);
    h.push(`<p class="sub" id="game-keys">Keys: ${KEYS.map(([k, what]) => `<kbd>${k}</kbd> ${what}`).join(" · ")}</p>`);
    // A redraw (another device's change, a new selection) keeps the cards being picked.
    const picks = new Map([...pane.querySelectorAll("select.card-pick, select.edge-pick")].map((e) => [e.id, e.value])
      .concat([...pane.querySelectorAll("input.reserve-input")].filter((e) => e.value !== e.defaultValue).map((e) => [e.id, e.value])));
    const open = new Set([...pane.querySelectorAll("details[id]")].filter((e) => e.open).map((e) => e.id));
    pane.innerHTML = h.join("");
    for (const [id, value] of picks) if ($(id)) $(id).value = value;
    for (const id of open) if ($(id)) $(id).open = true;
    const on = (id, f) => { const e = $(id); if (e) e.addEventListener("click", f); };
    on("game-new", startGame);
    on("game-next", nextStep);
    on("game-undo", undo);
    on("game-card-done", cardDone);
    on("game-reveal", revealCards);
    on("game-open-melee", openMelee);
    on("game-shot-close", closeShot);
    on("game-deploy", checkDeployment);
    on("game-deploy-close", () => { G.deploy = null; render(); });
    for (const e of pane.querySelectorAll("[data-activate]")) e.addEventListener("click", () => activate(e.dataset.activate));
    for (const e of pane.querySelectorAll("[data-vp]")) e.addEventListener("click", () => act("/api/book/vp", { player: e.dataset.vp, points: 1, reason: "objective (by hand)" }, `${e.dataset.vp}: +1 victory point.`));
    for (const e of pane.querySelectorAll("[data-reserve]")) {
      e.addEventListener("click", () => {
        const disks = $(`reserve-${e.dataset.reserve}`).value.split(",").map((x) => x.trim()).filter(Boolean);
        act("/api/book/reserve", { player: e.dataset.reserve, disks }, `${e.dataset.reserve}'s reserve saved.`);
      });
    }
  }

  function drawMarks(svg, px) {
    if (!svg) return;
    const old = svg.querySelector("#game-marks");
    if (old) old.remove();
    const v = T.view(), t = G.turn, b = G.book;
    if (!v) return;
    const k = px || 1;
    const g = document.createElementNS(NS, "g");
    g.setAttribute("id", "game-marks");
    g.setAttribute("pointer-events", "none");  // the marks never take a tap meant for a disk
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(NS, tag);
      for (const [a, val] of Object.entries(attrs)) e.setAttribute(a, val);
      if (text) e.textContent = text;
      g.appendChild(e);
      return e;
    };
    const byId = new Map(v.scene.disks.map((d) => [d.id, d]));
    if (t && t.activation && b && b.phase === "activation" && !gameOver() && !G.shot) {
      const may = new Set(t.may_activate);
      for (const d of v.scene.disks) {
        if (!may.has(d.id)) continue;
        const now = !b.card_turn || d.player === b.card_turn;
        add("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + k * 7, fill: "none", stroke: "#4cd98a",
          "stroke-width": k * (now ? 3.5 : 2), "stroke-dasharray": now ? "" : `${k * 5} ${k * 4}`, class: "may-activate", "data-disk": d.id });
      }
    }
    if (G.shot) {
      // Targets in their band's colour (as the range rings), cover marked; disks out of sight crossed out.
      for (const tg of G.shot.targets) {
        const d = byId.get(tg.target);
        if (!d) continue;
        add("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + k * 6, fill: "none", stroke: T.bandColour(tg.band),
          "stroke-width": k * 4, class: "shot-target", "data-disk": d.id, "data-band": tg.band });
        if (tg.cover) {
          add("text", { x: d.x_mm + d.radius_mm, y: d.y_mm - d.radius_mm, "font-size": k * 14, "font-weight": 800,
            fill: "#fff", stroke: "#000", "stroke-width": k * 0.8, class: "shot-cover", "data-disk": d.id }, "cover −1");
        }
      }
      for (const n of G.shot.not_targets) {
        const d = byId.get(n.disk);
        if (!d || n.disk === G.shot.shooter) continue;
        add("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + k * 6, fill: "none", stroke: "#ff6b6b",
          "stroke-width": k * 2, "stroke-dasharray": `${k * 3} ${k * 3}`, class: "shot-not", "data-disk": d.id });
      }
    }
    if (G.deploy) {
      for (const x of G.deploy.disks) {
        const d = byId.get(x.disk);
        if (!d || x.ok) continue;
        add("circle", { cx: d.x_mm, cy: d.y_mm, r: d.radius_mm + k * 9, fill: "none", stroke: "#ff6b6b",
          "stroke-width": k * 3, class: "deploy-bad", "data-disk": d.id });
      }
      if (G.deploy.zone_source === "edges") {
        for (const z of G.deploy.zones) {
          add("polygon", { points: z.polygon_mm.map((q) => q.join(",")).join(" "), fill: T.playerColour(z.player),
            "fill-opacity": 0.12, stroke: T.playerColour(z.player), "stroke-width": k * 2, class: "deploy-zone", "data-player": z.player });
        }
      }
    }
    if (g.childNodes.length) svg.appendChild(g);
  }

  let lastPx = 1;
  function render() {
    renderBar();
    renderPane();
    drawMarks($("table"), lastPx);
    markMeleeRecorded();
    document.body.dataset.bookEvents = G.book ? `${G.book.events}:${G.book.can_undo}` : "none";
  }

  // The Melee tab's record button follows the book too: once this round's melee is in the book (recorded here,
  // on another device or before a reload) it says so instead of offering a second record the book would refuse.
  function markMeleeRecorded() {
    const b = $("melee-record");
    if (!b || !G.book || !G.book.started) return;
    if (G.book.melee_recorded && !b.disabled) {
      b.disabled = true;
      b.textContent = `Round ${G.book.round}'s melee is in the game book`;
    }
  }
  const meleePane = $("pane-melee");
  if (meleePane) new MutationObserver(markMeleeRecorded).observe(meleePane, { childList: true });

  // ---- wiring -------------------------------------------------------------------------------------------------
  document.addEventListener("tablesight:view", (e) => { checkMove(e.detail.view); refresh(); });
  document.addEventListener("tablesight:drawn", (e) => { lastPx = e.detail.px; drawMarks(e.detail.svg, e.detail.px); });
  document.addEventListener("tablesight:select", (e) => {
    G.selected = e.detail.disk;
    if (G.shot && G.shot.shooter !== G.selected) G.shot = null;  // a new selection ends the shot on the table
    render();
  });
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    if (e.target.closest && e.target.closest("input, select, textarea, [contenteditable]")) return;
    if (e.key === "Escape") { closeShot(); return; }
    const f = { n: nextStep, a: () => activate(G.selected || T.selected()), s: () => shoot(G.selected || T.selected()),
      d: cardDone, m: openMelee, u: undo, g: openGame }[e.key.toLowerCase()];
    if (f) { e.preventDefault(); f(); }
  });
  // Another device (the phone beside the laptop) may change the book: keep up with it.
  setInterval(async () => {
    if (document.hidden || !G.available || loading || G.busy) return;
    try {
      const b = await T.getJSON("/api/book");
      if (!G.book || b.events !== G.book.events || b.can_undo !== G.book.can_undo) refresh();
    } catch (e) { /* the page's health banner already says when the server is gone */ }
  }, POLL_MS);
  refresh();
})();
