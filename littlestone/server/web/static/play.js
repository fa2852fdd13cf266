// littlestone's play page: a person plays a game through the page.
//
// The page is a client like any other (PROTOCOL.md): it asks its own origin for a play
// ticket (POST /api/play/ticket; the logged-in token stays in its HttpOnly cookie), opens a
// WebSocket to the agents' endpoint "/", says hello with the ticket and the capability
// "human" (the server then times its moves with its deadlines for people), challenges
// a server-side agent, and sends its moves as msgpack maps (the vendored
// @msgpack/msgpack). The referee checks every move as it checks any agent's; what the
// page draws (the version space, which labels keep the sequence realizable, the path
// down the shattered tree, the regret curve) it works out from what any agent is told.
"use strict";

(function () {
  const form = document.getElementById("setup");
  if (!form || typeof MessagePack === "undefined") return;
  const $ = (id) => document.getElementById(id);
  const board = $("board"), statusLine = $("status"), score = $("score"), turn = $("turn");
  const space = $("space"), curveBox = $("curve"), treeBox = $("tree-box"), treeHolder = $("tree");
  const historyList = $("history");
  const ns = "http://www.w3.org/2000/svg";
  const GRID = 720;  // directions of the plane the halfspace version space is checked on

  // -- small helpers ----------------------------------------------------------------
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("data-")) node.dataset[k.slice(5).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v);
    }
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "-";
    return Number.isInteger(v) ? String(v) : Number(v).toPrecision(4);
  }
  // a vector from the wire: a bin of float64 little-endian, or an array of numbers
  function vector(value) {
    if (value === null || value === undefined) return null;
    if (Array.isArray(value)) return value.map(Number);
    const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
    const out = [];
    for (let i = 0; i < value.byteLength; i += 8) out.push(view.getFloat64(i, true));
    return out;
  }
  // a vector to the wire: a bin of float64 little-endian
  function bin(numbers) {
    const bytes = new Uint8Array(8 * numbers.length);
    const view = new DataView(bytes.buffer);
    numbers.forEach((v, i) => view.setFloat64(8 * i, v, true));
    return bytes;
  }
  function say(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", Boolean(isError));
  }

  // -- the form: opponents for the side and game chosen -----------------------------
  function choice(name) {
    const checked = form.querySelector("input[name=" + name + "]:checked");
    return checked ? checked.value : form.elements[name].value;
  }
  function refreshForm() {
    const role = choice("role"), game = choice("game");
    const opponent = form.elements.opponent;
    let first = null;
    for (const option of opponent.options) {
      const fits = option.dataset.role === role && option.dataset.game === game;
      option.hidden = option.disabled = !fits;
      if (fits && first === null) first = option;
    }
    if (opponent.selectedOptions[0] === undefined || opponent.selectedOptions[0].disabled) opponent.value = first.value;
    form.elements.class.closest("label").hidden = game === "experts";
    form.elements.experts.closest("label").hidden = game !== "experts";
    // the plane's halfspaces: only against the Perceptron (a learner) or a random target
    const spec = form.elements.class.value;
    if (game !== "experts" && spec.startsWith("halfspaces") && !["perceptron", "random-target"].includes(opponent.value)) {
      say("halfspaces: play them as the adversary against the perceptron, or as the learner against random-target", true);
    } else {
      say("");
    }
  }
  form.addEventListener("change", refreshForm);
  refreshForm();

  let G = null;  // the game being played

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (G && G.phase !== "over") return;
    start().catch((e) => say(String(e.message || e), true));
  });

  async function start() {
    const role = choice("role"), game = choice("game");
    const rounds = Math.max(1, Math.min(Number(form.elements.rounds.value) || 1, Number(form.elements.rounds.max)));
    const experts = game === "experts" ? Number(form.elements.experts.value) : null;
    const spec = game === "experts" ? null : form.elements.class.value;
    const info = spec === null ? null : await getJSON("/api/play/class?spec=" + encodeURIComponent(spec));
    const response = await fetch("/api/play/ticket", { method: "POST", credentials: "same-origin" });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || "no ticket: " + response.status);
    G = {
      role, game, spec, info, experts, rounds, opponent: form.elements.opponent.value,
      name: form.elements.name.value.trim() || "person", phase: "connecting", t: 0, guest: answer.guest,
      // mistake-bound
      alive: null, labels: "", rows: [], mistakes: 0, expected: 0, exact: true,
      // experts
      losses: experts ? new Array(experts).fill(0) : null, learnerLoss: 0, costs: null,
      series: { t: [0], value: [0], bound: [] }, plot: null,
    };
    if (info && info.kind !== "halfspaces") G.alive = new Uint8Array(info.size).fill(1);
    if (info && info.kind === "halfspaces") G.alive = halfspaceGrid();
    board.hidden = false;
    historyList.innerHTML = ""; turn.innerHTML = ""; space.innerHTML = ""; curveBox.innerHTML = "";
    board.dataset.phase = ""; board.dataset.gameId = ""; board.dataset.status = "";
    treeBox.hidden = true;
    if (info && info.tree && !info.tree.error && role === "learner" && G.opponent === "shattered-tree") {
      treeBox.hidden = false;
      window.littlestone.drawTree(treeHolder, info.tree);
      window.littlestone.lightTree(treeHolder, info.tree, "");
    }
    connect(answer.ticket);
    drawScore();
    drawSpace();
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) throw new Error(url + ": " + response.status);
    return response.json();
  }

  // -- the connection: PROTOCOL.md, msgpack in binary frames ---------------------------
  function connect(ticket) {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = G.ws = new WebSocket(scheme + location.host + "/");
    ws.binaryType = "arraybuffer";
    const game = G;
    ws.onopen = () => send({ type: "hello", version: 1, role: game.role, agent: game.name,
                             token: ticket, capabilities: ["human"] });
    ws.onmessage = (event) => {
      if (G !== game) return;
      const m = MessagePack.decode(new Uint8Array(event.data));
      try { receive(m); } catch (e) { say(String(e.message || e), true); }
    };
    ws.onclose = () => {
      if (G === game && game.phase !== "over") {
        game.phase = "over";
        board.dataset.phase = "over";
        say("the connection closed before the game ended", true);
      }
    };
  }

  function send(message) {
    G.ws.send(MessagePack.encode(message));
  }

  function setPhase(phase) {
    G.phase = phase;
    board.dataset.phase = phase;
    board.dataset.round = String(G.t);
  }

  function receive(m) {
    switch (m.type) {
      case "welcome": {
        const limits = m.limits || {};
        G.clock = fmt((limits.move_deadline_ms || 0) / 1000) + " s a move, a time bank of " + fmt((limits.time_bank_ms || 0) / 1000) + " s";
        board.dataset.moveDeadlineMs = String(limits.move_deadline_ms);
        say("connected: " + G.clock);
        const rules = { game: G.game, class: G.spec, experts: G.experts, rounds: G.rounds, horizon: G.rounds };
        send({ type: "challenge", rules, opponent: G.opponent, seed: null });
        return;
      }
      case "start":
        if (m.rules.game !== G.game || m.rules.rounds !== G.rounds || (m.rules.class || null) !== G.spec) {
          say("the server started other rules than asked: not played", true);
          G.ws.close();
          return;
        }
        G.gameId = m.game_id;
        board.dataset.gameId = m.game_id;
        say("game " + m.game_id + ": you are the " + G.role + (G.guest ? " (a guest)" : "") + " against " + G.opponent + "; the server gives you " + G.clock);
        if (G.role === "adversary") {
          G.t = 1;
          if (G.game === "experts") { send({ type: "advice", t: 1, advice: null }); setPhase("waiting"); }
          else { setPhase("instance"); }
          drawTurn();
        }
        return;
      case "instance":  // (to a learner) round t's instance, with the label before it
        if (m.label) settle(m.label.t, m.label.y);
        G.t = m.t; G.x = m.x;
        setPhase("predict");
        drawTurn(); drawSpace();
        return;
      case "prediction":  // (to an adversary) the learner's p
        G.p = m.p;
        setPhase("label");
        drawTurn(); drawSpace();
        return;
      case "advice":  // (to a learner, experts game)
        if (m.outcome) settleExperts(m.outcome.t, vector(m.outcome.costs));
        G.t = m.t; G.advice = vector(m.advice);
        setPhase("weights");
        drawTurn();
        return;
      case "answer":  // (to an adversary, experts game) the learner's weights
        G.w = m.w !== undefined && m.w !== null ? vector(m.w) : null;
        G.p = m.p === undefined ? null : m.p;
        G.costs = new Array(G.experts).fill(0);
        setPhase("costs");
        drawTurn();
        return;
      case "reveal?":
        reveal();
        return;
      case "error":
        say(m.code + ": " + m.message, true);
        if (m.fatal) { G.phase = "over"; board.dataset.phase = "over"; }
        return;
      case "end":
        if (m.label) settle(m.label.t, m.label.y);
        if (m.outcome) settleExperts(m.outcome.t, vector(m.outcome.costs));
        ended(m);
        return;
      default:
        return;  // (a message type this page does not know: ignored, as PROTOCOL.md 8 allows)
    }
  }

  // -- the mistake-bound game ----------------------------------------------------------
  function value(h, x) {  // h(x) of a finite class, from its truth table
    return G.info.table[h].charCodeAt(x) === 49 ? 1 : 0;
  }
  function split(x) {  // how many hypotheses still consistent label x with 0, with 1
    const counts = [0, 0];
    if (G.info.kind === "halfspaces") {
      const [c0, c1] = halfspaceSplit(x);
      return [c0, c1];
    }
    for (let h = 0; h < G.info.size; h++) if (G.alive[h]) counts[value(h, x)]++;
    return counts;
  }
  function instanceName(x) {
    if (G.info.kind === "halfspaces") {
      const v = vector(x);
      return "(" + v.map((c) => c.toFixed(3)).join(", ") + ")";
    }
    return G.info.instances[x];
  }

  // round t is over: its label y (the learner's own answer is known; the referee's draw
  // of a fractional answer is not, until the end)
  function settle(t, y) {
    const row = G.rows[t - 1];
    if (!row || row.y !== undefined) return;
    row.y = y;
    G.expected += Math.abs(row.p - y);
    if (row.p === 0 || row.p === 1) { if (row.p !== y) G.mistakes++; }
    else G.exact = false;
    restrict(row.x, y);
    if (G.labels.length === t - 1) G.labels += String(y);
    if (!treeBox.hidden) window.littlestone.lightTree(treeHolder, G.info.tree, G.labels);
    const item = el("li", { "data-t": String(t) }, "round " + t + ": x = " + instanceName(row.x) + ", p = " + fmt(row.p) + ", label " + y + (row.p === 0 || row.p === 1 ? (row.p !== y ? " (a mistake)" : "") : ""));
    historyList.appendChild(item);
    drawScore(); drawSpace();
  }

  function restrict(x, y) {
    if (G.info.kind === "halfspaces") {
      const v = vector(x), margin = G.info.margin;
      for (let i = 0; i < GRID; i++) {
        const dot = Math.cos(2 * Math.PI * i / GRID) * v[0] + Math.sin(2 * Math.PI * i / GRID) * v[1];
        if (!(y === 1 ? dot >= margin : dot <= -margin)) G.alive[i] = 0;
      }
      return;
    }
    for (let h = 0; h < G.info.size; h++) if (G.alive[h] && value(h, x) !== y) G.alive[h] = 0;
  }

  function answer(p) {  // the learner's move
    if (G.phase !== "predict" || !(p >= 0 && p <= 1)) return;
    G.rows[G.t - 1] = { x: G.x, p };
    send({ type: "predict", t: G.t, p });
    setPhase("waiting");
    drawTurn();
  }

  function pick(x) {  // the adversary's instance
    if (G.phase !== "instance") return;
    G.x = x;
    send({ type: "instance", t: G.t, x });
    setPhase("waiting");
    drawTurn(); drawSpace();
  }

  function label(y) {  // the adversary's label
    if (G.phase !== "label") return;
    G.rows[G.t - 1] = { x: G.x, p: G.p };
    send({ type: "label", t: G.t, y });
    settle(G.t, y);
    if (G.t < G.rounds) { G.t++; setPhase("instance"); }
    else setPhase("waiting");
    drawTurn();
  }

  function bound() {  // what the learner's mistakes are set against
    const info = G.info;
    if (!info || info.kind === "halfspaces") return null;
    if (G.role === "adversary" && G.opponent === "halving") return { value: info.log2_size, name: "log2 |H|, Halving's bound" };
    if (G.role === "adversary" && G.opponent === "consistent") return { value: info.size - 1, name: "|H| - 1, Consistent's bound" };
    return { value: info.ldim, name: "Ldim(H)" };
  }

  function drawScore() {
    score.innerHTML = "";
    if (G.game === "experts") {
      const best = Math.min(...G.losses);
      score.append(el("p", { id: "regret" }, "round " + G.t + " of " + G.rounds + ": the learner's expected loss " + fmt(G.learnerLoss) + ", the best expert's " + fmt(best) + ", expected regret " + fmt(G.learnerLoss - best) + " (bound " + fmt(experts_bound()) + ": sqrt((T/2) ln d), the minimax regret)"));
      return;
    }
    const b = bound();
    const mistakes = el("p", { id: "mistakes", "data-mistakes": String(G.mistakes), "data-expected": String(G.expected) });
    mistakes.textContent = (G.exact ? "mistakes " + G.mistakes : "expected mistakes " + fmt(G.expected)) +
      (b ? " against the bound " + fmt(b.value) + " (" + b.name + ")" : "") + "; round " + G.t + " of " + G.rounds;
    const meter = el("meter", { min: "0", max: String(b ? Math.max(b.value, 1) : G.rounds), value: String(G.exact ? G.mistakes : G.expected) });
    score.append(mistakes, meter);
  }

  // the version space drawn: thresholds as an interval, singletons as points, else a table
  function drawSpace() {
    space.innerHTML = "";
    const info = G.info;
    if (!info) return;
    const alive = G.alive.reduce((a, b) => a + b, 0);
    space.dataset.size = String(alive);
    const current = G.phase === "predict" || G.phase === "label" ? G.x : null;
    if (info.kind === "halfspaces") { drawPlane(current); return; }
    const heading = el("p", { class: "note" }, "the version space: " + alive + " of " + info.size + " hypotheses still consistent (Ldim(H) = " + info.ldim + ")");
    space.append(heading);
    const labelled = {};
    for (const row of G.rows) if (row && row.y !== undefined) labelled[row.x] = row.y;
    if (info.kind === "thresholds" || info.kind === "singletons") {
      const n = info.domain_size, step = 44, width = step * (n + 1) + 20;
      const picture = svg("svg", { width, height: 86, class: "line " + info.kind });
      picture.append(svg("line", { x1: 10, y1: 40, x2: width - 10, y2: 40, class: "axis" }));
      if (info.kind === "thresholds") {  // h_a(x) = [x < a]: a sits left of instance a
        const live = [];
        for (let a = 0; a < info.size; a++) if (G.alive[a]) live.push(a);
        const lo = live[0], hi = live[live.length - 1];
        picture.append(svg("rect", { x: 10 + step * lo + step / 2 - 8, y: 28, width: step * (hi - lo) + 16, height: 24, class: "alive" }));
        for (let a = 0; a < info.size; a++) {
          picture.append(svg("line", { x1: 10 + step * a + step / 2, y1: 30, x2: 10 + step * a + step / 2, y2: 50, class: G.alive[a] ? "cut alive" : "cut" }));
        }
        picture.append(svg("text", { x: 10, y: 80 }, "V = {x < a : " + lo + " <= a <= " + hi + "}"));
      }
      for (let x = 0; x < n; x++) {
        const cx = 10 + step * x + step, cls = ["point"];
        if (x in labelled) cls.push("y" + labelled[x]);
        if (x === current) cls.push("current");
        if (info.kind === "singletons" && G.alive[x]) cls.push("alive");
        picture.append(svg("circle", { cx, cy: 40, r: 9, class: cls.join(" "), "data-x": x }));
        picture.append(svg("text", { x: cx, y: 20, "text-anchor": "middle" }, info.instances[x]));
        if (x in labelled) picture.append(svg("text", { x: cx, y: 66, "text-anchor": "middle" }, "y=" + labelled[x]));
      }
      space.append(picture);
      return;
    }
    const table = el("table", { class: "version-space" });
    const head = el("tr");
    head.append(el("th", {}, "h \\ x"));
    for (let x = 0; x < info.domain_size; x++) {
      const th = el("th", { class: (x === current ? "current " : "") + (x in labelled ? "played" : "") }, info.instances[x]);
      if (x in labelled) th.title = "labelled " + labelled[x];
      head.append(th);
    }
    table.append(head);
    for (let h = 0; h < info.size; h++) {
      const tr = el("tr", { class: G.alive[h] ? "alive" : "dead" });
      tr.append(el("th", {}, info.hypotheses[h]));
      for (let x = 0; x < info.domain_size; x++) tr.append(el("td", { class: x === current ? "current" : "" }, value(h, x)));
      table.append(tr);
    }
    space.append(table);
  }

  // -- the plane's halfspaces: the version space on a grid of directions ---------------
  function halfspaceGrid() { return new Uint8Array(GRID).fill(1); }
  function direction(i) { return [Math.cos(2 * Math.PI * i / GRID), Math.sin(2 * Math.PI * i / GRID)]; }
  function halfspaceSplit(x) {
    const v = vector(x), margin = G.info.margin, counts = [0, 0];
    for (let i = 0; i < GRID; i++) {
      if (!G.alive[i]) continue;
      const [a, b] = direction(i), dot = a * v[0] + b * v[1];
      if (dot >= margin) counts[1]++;
      else if (dot <= -margin) counts[0]++;
    }
    return counts;
  }
  function drawPlane(current) {
    const size = 260, r = 100, c = size / 2;
    const alive = G.alive.reduce((a, b) => a + b, 0);
    space.append(el("p", { class: "note" }, "the version space: the unit targets w (directions, on a grid of " + (360 / GRID) + " degrees) that label every instance so far with margin " + G.info.margin + ": " + alive + " of " + GRID));
    const picture = svg("svg", { width: size, height: size, class: "plane" });
    picture.append(svg("circle", { cx: c, cy: c, r, class: "unit" }));
    for (let i = 0; i < GRID; i += 2) {
      if (!G.alive[i]) continue;
      const [a, b] = direction(i);
      picture.append(svg("circle", { cx: c + r * a, cy: c - r * b, r: 2.5, class: "alive" }));
    }
    for (const row of G.rows) {
      if (!row || row.y === undefined) continue;
      const v = vector(row.x);
      picture.append(svg("circle", { cx: c + 0.8 * r * v[0], cy: c - 0.8 * r * v[1], r: 6, class: "point y" + row.y }));
    }
    if (current !== null && current !== undefined) {
      const v = vector(current);
      picture.append(svg("line", { x1: c, y1: c, x2: c + r * v[0], y2: c - r * v[1], class: "current" }));
    }
    space.append(picture);
  }
  // a witness for the reveal: the grid direction with the largest least margin
  function reveal() {
    let best = -1, bestMargin = -Infinity;
    for (let i = 0; i < GRID; i++) {
      if (!G.alive[i]) continue;
      const [a, b] = direction(i);
      let least = Infinity;
      for (const row of G.rows) {
        const v = vector(row.x), dot = a * v[0] + b * v[1];
        least = Math.min(least, row.y === 1 ? dot : -dot);
      }
      if (least > bestMargin) { bestMargin = least; best = i; }
    }
    const target = best < 0 ? [1, 0] : direction(best);
    send({ type: "reveal", target: bin(target), salt: new Uint8Array(0) });
    say("revealed the witness w = (" + target.map((v) => v.toFixed(3)).join(", ") + ")");
  }

  // -- the experts game ---------------------------------------------------------------
  function experts_bound() { return Math.sqrt(G.rounds / 2 * Math.log(Math.max(G.experts, 2))); }

  function settleExperts(t, costs) {
    const w = G.weights && G.weights[t];
    if (!w || !costs) return;
    G.learnerLoss += w.reduce((sum, wi, i) => sum + wi * costs[i], 0);
    for (let i = 0; i < G.experts; i++) G.losses[i] += costs[i];
    const regret = G.learnerLoss - Math.min(...G.losses);
    G.series.t.push(t); G.series.value.push(regret);
    historyList.appendChild(el("li", { "data-t": String(t) }, "round " + t + ": weights [" + w.map(fmt).join(", ") + "], costs [" + costs.map(fmt).join(", ") + "], regret " + fmt(regret)));
    drawScore(); drawCurve();
  }

  function weigh(w) {  // the learner's weights
    if (G.phase !== "weights") return;
    (G.weights = G.weights || {})[G.t] = w;
    send({ type: "weights", t: G.t, w });
    setPhase("waiting");
    drawTurn();
  }

  function sendCosts() {  // the adversary's costs, then the next round's (absent) advice
    if (G.phase !== "costs") return;
    const costs = G.costs.slice();
    (G.weights = G.weights || {})[G.t] = G.w || (G.p !== null ? [1 - G.p, G.p] : new Array(G.experts).fill(1 / G.experts));
    send({ type: "costs", t: G.t, v: costs });
    settleExperts(G.t, costs);
    if (G.t < G.rounds) { G.t++; send({ type: "advice", t: G.t, advice: null }); }
    setPhase("waiting");
    drawTurn();
  }

  function drawCurve() {
    if (typeof uPlot === "undefined") return;
    const b = experts_bound();
    const columns = [G.series.t, G.series.value, G.series.t.map(() => b)];
    curveBox.dataset.points = String(G.series.t.length - 1);
    if (G.plot === null) {
      curveBox.innerHTML = "";
      G.plot = new uPlot({
        width: Math.min(curveBox.clientWidth || 640, 760), height: 240,
        scales: { x: { time: false }, y: { range: (u, min, max) => [Math.min(0, min), 1.1 * Math.max(max, b, 1)] } },
        series: [{ label: "round" }, { label: "expected regret", stroke: "#1f3a93", width: 2 },
                 { label: "sqrt((T/2) ln d)", stroke: "crimson", dash: [8, 5] }],
        axes: [{ label: "rounds" }, { label: "regret" }],
      }, columns, curveBox);
    } else {
      G.plot.setData(columns);
    }
  }

  // -- whose turn: the buttons ----------------------------------------------------------
  function button(text, attrs, onclick) {
    const b = el("button", Object.assign({ type: "button" }, attrs), text);
    b.addEventListener("click", onclick);
    return b;
  }

  function drawTurn() {
    turn.innerHTML = "";
    const phase = G.phase;
    if (phase === "predict") {
      turn.append(el("p", { class: "prompt" }, "Round " + G.t + " of " + G.rounds + ": the instance is x = " + instanceName(G.x) + ". Your prediction? (keys 0 and 1)"));
      const counts = split(G.x);
      turn.append(el("p", { class: "note" }, "of the hypotheses still consistent, " + counts[1] + " say 1 and " + counts[0] + " say 0"));
      const p = el("input", { type: "number", min: "0", max: "1", step: "0.05", value: "0.5", id: "p", "aria-label": "probability of 1" });
      turn.append(button("0", { id: "answer-0" }, () => answer(0)), button("1", { id: "answer-1" }, () => answer(1)),
                  el("span", {}, " or the probability of 1: "), p, button("answer p", { id: "answer-p" }, () => answer(Number(p.value))));
      p.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); answer(Number(p.value)); } });
    } else if (phase === "instance") {
      turn.append(el("p", { class: "prompt" }, "Round " + G.t + " of " + G.rounds + ": pick an instance. Each shows how it splits the version space (|V0| | |V1|); both sides non-empty: either label keeps the sequence realizable."));
      const row = el("div", { class: "instances" });
      if (G.info.kind === "halfspaces") {
        for (let k = 0; k < 24; k++) {
          const angle = 2 * Math.PI * k / 24, x = bin([Math.cos(angle), Math.sin(angle)]);
          const [c0, c1] = split(x);
          row.append(button((k * 15) + "\u00b0  " + c0 + " | " + c1, { "data-x": String(k), class: c0 && c1 ? "splits" : "" }, () => pick(x)));
        }
      } else {
        for (let x = 0; x < G.info.domain_size; x++) {
          const [c0, c1] = split(x);
          row.append(button(G.info.instances[x] + "  " + c0 + " | " + c1, { "data-x": String(x), class: c0 && c1 ? "splits" : "" }, () => pick(x)));
        }
      }
      turn.append(row);
    } else if (phase === "label") {
      const [c0, c1] = split(G.x);
      turn.append(el("p", { class: "prompt" }, "Round " + G.t + ": the learner says p = " + fmt(G.p) + " on x = " + instanceName(G.x) + ". Your label? (keys 0 and 1)"));
      for (const y of [0, 1]) {
        const left = y ? c1 : c0;
        const b = button(String(y), { id: "label-" + y, class: left ? "realizable" : "empties", "data-realizable": left ? "1" : "0" }, () => label(y));
        const what = G.info.kind === "halfspaces" ? (left === 1 ? " direction w" : " directions w") : (left === 1 ? " hypothesis" : " hypotheses");
        turn.append(b, el("span", { class: "note" }, left ? " keeps " + left + what + " consistent  " : " empties the version space: the referee refuses it, and the game ends against you  "));
      }
    } else if (phase === "weights") {
      turn.append(el("p", { class: "prompt" }, "Round " + G.t + " of " + G.rounds + ": your weights over the experts (key i: all on expert i, from 1" + (G.experts >= 10 ? "; 0: expert 10" : "") + ")."));
      const table = el("table", { class: "experts" });
      table.append(el("tr"));
      table.firstChild.append(el("th", {}, "expert"), el("th", {}, "advice"), el("th", {}, "loss so far"), el("th", {}, "weight"));
      const inputs = [];
      for (let i = 0; i < G.experts; i++) {
        const tr = el("tr");
        const input = el("input", { type: "number", min: "0", max: "1", step: "0.1", value: fmt(1 / G.experts), "aria-label": "weight of expert " + (i + 1) });
        inputs.push(input);
        tr.append(el("td", {}, i + 1), el("td", {}, G.advice ? fmt(G.advice[i]) : "-"), el("td", {}, fmt(G.losses[i])), el("td", {}, ""));
        tr.lastChild.append(input, button("all on " + (i + 1), { "data-expert": String(i + 1) }, () => weigh(onehot(i))));
        table.append(tr);
      }
      turn.append(table, button("play these weights", { id: "weights" }, () => {
        const raw = inputs.map((x) => Math.max(0, Number(x.value) || 0));
        const total = raw.reduce((a, b) => a + b, 0);
        if (total > 0) weigh(raw.map((v) => v / total));
      }));
    } else if (phase === "costs") {
      const shown = G.w ? "weights [" + G.w.map(fmt).join(", ") + "]" : "p = " + fmt(G.p);
      turn.append(el("p", { class: "prompt" }, "Round " + G.t + " of " + G.rounds + ": the learner plays " + shown + ". Set each expert's cost (key i toggles expert i, from 1" + (G.experts >= 10 ? "; 0: expert 10" : "") + "; Enter sends)."));
      for (let i = 0; i < G.experts; i++) {
        turn.append(button("expert " + (i + 1) + ": cost " + G.costs[i], { "data-expert": String(i + 1), class: G.costs[i] ? "y1" : "y0" }, () => { toggleCost(i); }));
      }
      turn.append(button("send costs", { id: "costs" }, sendCosts));
    } else if (phase === "waiting") {
      turn.append(el("p", { class: "note" }, "waiting for the server"));
    }
  }

  // Experts are numbered from 1 on the page, and so are their keys (0: expert 10); a key
  // past the last expert is said in the status line, not ignored.
  function expertOfKey(digit) {
    const n = digit === 0 ? 10 : digit;
    if (n > G.experts) {
      say("no expert " + n + ": this game has experts 1 to " + G.experts + (G.experts > 10 ? " (keys reach 10; the buttons reach every one)" : ""), true);
      return null;
    }
    return n - 1;
  }
  function onehot(i) { const w = new Array(G.experts).fill(0); w[i] = 1; return w; }
  function toggleCost(i) { if (G.phase === "costs" && i < G.experts) { G.costs[i] = 1 - G.costs[i]; drawTurn(); } }

  function ended(m) {
    setPhase("over");
    board.dataset.status = m.status;
    const result = m.result || {};
    turn.innerHTML = "";
    const lines = ["The game is over: " + m.status + "."];
    if (G.game === "experts") {
      lines.push("The referee's figures: loss " + fmt(result.mistakes) + " (expected " + fmt(result.expected_mistakes) + "), regret " + fmt(result.regret) + " (expected " + fmt(result.expected_regret) + ").");
    } else {
      lines.push("The referee's count: " + fmt(result.mistakes) + " mistakes (expected " + fmt(result.expected_mistakes) + ")" + (G.info && G.info.ldim !== undefined ? "; Ldim(H) = " + G.info.ldim : "") + ".");
    }
    turn.append(el("p", { class: "prompt", id: "result", "data-mistakes": String(result.mistakes) }, lines.join(" ")));
    const link = el("a", { href: "/games/" + encodeURIComponent(m.game_id || G.gameId) }, "the game's page");
    const check = el("code", {}, "littlestone replay --verify " + (m.game_id || G.gameId));
    const p = el("p", {});
    p.append(link, document.createTextNode(" · check it: "), check);
    turn.append(p);
    say("game " + (m.game_id || G.gameId) + " ended: " + m.status);
    G.ws.close();
  }

  // -- keyboard play -------------------------------------------------------------------
  document.addEventListener("keydown", (event) => {
    if (!G || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA")) return;
    const digit = /^[0-9]$/.test(event.key) ? Number(event.key) : null;
    if (G.phase === "predict" && (digit === 0 || digit === 1)) answer(digit);
    else if (G.phase === "label" && (digit === 0 || digit === 1)) label(digit);
    else if (G.phase === "weights" && digit !== null) { const i = expertOfKey(digit); if (i !== null) weigh(onehot(i)); }
    else if (G.phase === "costs" && digit !== null) { const i = expertOfKey(digit); if (i !== null) toggleCost(i); }
    else if (G.phase === "costs" && event.key === "Enter") sendCosts();
    else return;
    event.preventDefault();
  });
})();
