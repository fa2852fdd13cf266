// littlestone's page: the live parts. Every list is server-rendered HTML (it works
// without this script); here the lists refresh themselves, a game's curve is drawn with
// uPlot and follows the spectator feed (/live/ID, read-only: nothing is ever sent on it),
// the shattered tree lights up along the path played, and the replay steps round by round.
"use strict";

(function () {
  const body = document.body;

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) throw new Error(url + ": " + response.status);
    return response.json();
  }

  // -- lists that refresh themselves (server-rendered fragments) --------------------
  // Each asks with the ETag of what it shows (If-None-Match): a part that has not
  // changed comes back 304 Not Modified, with no body, and costs the server nothing.
  for (const holder of document.querySelectorAll("[data-refresh]")) {
    const url = holder.dataset.refresh;
    let tag = null;
    setInterval(async () => {
      try {
        const headers = tag ? { "If-None-Match": tag } : {};
        const response = await fetch(url, { credentials: "same-origin", cache: "no-store",
                                            headers });
        if (response.status === 200) {
          holder.innerHTML = await response.text();
          tag = response.headers.get("ETag");
        }
      } catch (e) { /* the server went away: keep what is shown */ }
    }, 1500);
  }

  // -- logging in: the token goes as a bearer token, never in the address -----------
  const login = document.getElementById("login");
  if (login) {
    login.addEventListener("submit", async (event) => {
      event.preventDefault();
      const token = login.querySelector("input[name=token]").value.trim();
      const response = await fetch("/login", {
        method: "POST", credentials: "same-origin",
        headers: { Authorization: "Bearer " + token },
      });
      if (response.status === 204) location.href = "/";
      else login.insertAdjacentHTML("beforebegin", "<p class='error'>unknown token</p>");
    });
  }

  // -- a competition's upload form: the file goes on the agents' endpoint as a submit
  // (PROTOCOL.md 4.2), with a play ticket (POST /api/play/ticket: this origin's page only)
  const upload = document.getElementById("submit-file");
  if (upload) {
    upload.addEventListener("submit", async (event) => {
      event.preventDefault();
      const out = document.getElementById("submit-answer");
      const show = (text, verdict) => {
        out.hidden = false; out.textContent = text; out.dataset.verdict = verdict || "";
      };
      const file = upload.querySelector("input[name=file]").files[0];
      const cls = upload.querySelector("input[name=class]").value.trim();
      if (!file || !cls) return;
      show("checking " + file.name + " ...", "checking");
      try {
        const response = await fetch("/api/play/ticket", { method: "POST", credentials: "same-origin" });
        const granted = await response.json();
        if (!response.ok) throw new Error(granted.error || "no ticket: " + response.status);
        const source = new Uint8Array(await file.arrayBuffer());
        const scheme = location.protocol === "https:" ? "wss://" : "ws://";
        const ws = new WebSocket(scheme + location.host + "/");
        ws.binaryType = "arraybuffer";
        const send = (m) => ws.send(MessagePack.encode(m));
        const said = await new Promise((resolve, reject) => {
          let welcomed = false, answered = false;
          ws.onopen = () => send({ type: "hello", version: 1, role: "learner", agent: "page-upload",
                                   token: granted.ticket, capabilities: [] });
          ws.onmessage = (e) => {
            const m = MessagePack.decode(new Uint8Array(e.data));
            if (m.type === "welcome" && !welcomed) {
              welcomed = true;
              send({ type: "submit", competition: upload.dataset.competition,
                     agent: file.name + ":" + cls, source: source });
            } else { answered = true; resolve(m); ws.close(); }
          };
          ws.onclose = () => { if (!answered) reject(new Error("the connection closed")); };
        });
        if (said.type === "error") { show("refused: " + said.code + ": " + said.message, "error"); return; }
        const lines = ["version " + said.version + ": " + said.verdict +
                       (said.reason ? " (" + said.reason + ")" : "") + (said.duplicate ? " (the same file as before)" : ""),
                       said.message];
        for (const c of said.checks) lines.push((c.ok ? "ok   " : "FAIL ") + c.check + (c.ok || !c.message ? "" : ": " + c.message));
        show(lines.join("\n"), said.verdict);
      } catch (e) { show("not sent: " + e.message, "error"); }
    });
  }

  // -- shared with the play page (play.js): the shattered tree, drawn and lit ----------
  const ns = "http://www.w3.org/2000/svg";
  const shared = window.littlestone = {
    // draw data (/api/tree) into box; false (and why, as text) when there is no tree
    drawTree(box, data) {
      if (data.error) {
        box.innerHTML = "<p class='note'></p>";
        box.firstChild.textContent = data.error;
        return false;
      }
      const width = Math.max(480, 34 * data.nodes.filter((n) => n.hypothesis !== undefined).length);
      const rows = data.ldim + 1, height = 60 * rows + 24;
      const at = {};
      for (const n of data.nodes) at[n.id] = [20 + n.x * (width - 40), 24 + 60 * n.depth];
      const svg = document.createElementNS(ns, "svg");
      svg.setAttribute("width", width); svg.setAttribute("height", height);
      for (const e of data.edges) {
        const line = document.createElementNS(ns, "line");
        const [x1, y1] = at[e.source], [x2, y2] = at[e.target];
        line.setAttribute("x1", x1); line.setAttribute("y1", y1);
        line.setAttribute("x2", x2); line.setAttribute("y2", y2);
        line.dataset.target = e.target;
        svg.appendChild(line);
        const label = document.createElementNS(ns, "text");
        label.setAttribute("x", (x1 + x2) / 2 + (e.label ? 4 : -10)); label.setAttribute("y", (y1 + y2) / 2);
        label.textContent = String(e.label);
        svg.appendChild(label);
      }
      for (const n of data.nodes) {
        const g = document.createElementNS(ns, "g");
        g.dataset.node = n.id;
        const [x, y] = at[n.id];
        const circle = document.createElementNS(ns, "circle");
        circle.setAttribute("cx", x); circle.setAttribute("cy", y); circle.setAttribute("r", 9);
        const text = document.createElementNS(ns, "text");
        if (n.instance !== undefined) {
          text.setAttribute("x", x + 11); text.setAttribute("y", y + 4);
          text.textContent = "x=" + n.instance;
        } else {  // a leaf: the hypothesis that realises its path (its name on hover)
          text.setAttribute("x", x); text.setAttribute("y", y + 21); text.setAttribute("text-anchor", "middle");
          text.textContent = "h" + n.hypothesis;
        }
        const title = document.createElementNS(ns, "title");
        title.textContent = n.instance !== undefined ? "instance " + n.instance : "realised by " + (n.name || n.hypothesis);
        g.append(circle, text, title);
        svg.appendChild(g);
      }
      box.innerHTML = "";
      box.appendChild(svg);
      return true;
    },
    // light the root and the nodes down the path of labels (a string of 0 and 1)
    lightTree(box, data, path) {
      const on = new Set();
      for (let i = 0; i <= Math.min(path.length, data.ldim); i++) on.add("t" + path.slice(0, i));
      for (const g of box.querySelectorAll("g[data-node]")) g.classList.toggle("lit", on.has(g.dataset.node));
      for (const l of box.querySelectorAll("line[data-target]")) l.classList.toggle("lit", on.has(l.dataset.target));
      box.dataset.lit = String(on.size);
    },
  };

  if (body.dataset.page !== "game") return;
  const gameId = body.dataset.gameId;
  const api = "/api/games/" + encodeURIComponent(gameId);
  const experts = body.dataset.game === "experts";
  const kind = experts ? "regret" : "mistakes";

  // -- the curve --------------------------------------------------------------------
  const curveBox = document.getElementById("curve");
  const series = { t: [], value: [], expected: [] };
  let bound = body.dataset.bound === "" ? null : Number(body.dataset.bound);
  let boundName = body.dataset.boundName || "";
  let plot = null;
  let pending = false;

  function columns() {
    return [series.t, series.value, series.expected,
            series.t.map(() => (bound === null ? null : bound))];
  }

  function draw() {
    curveBox.dataset.points = String(series.t.length);
    curveBox.dataset.last = series.value.length ? String(series.value[series.value.length - 1]) : "";
    if (typeof uPlot === "undefined") return;
    if (plot === null) {
      curveBox.innerHTML = "";
      plot = new uPlot({
        width: Math.min(curveBox.clientWidth || 760, 900), height: 320,
        scales: {
          x: { time: false },
          y: { range: (u, min, max) => [Math.min(0, min), 1.08 * Math.max(max, bound === null ? 0 : bound, 1)] },
        },
        series: [
          { label: "round" },
          { label: kind, stroke: "#1f3a93", width: 2 },
          { label: "expected " + kind + " (over the coin)", stroke: "#6c8ed8", dash: [4, 4] },
          { label: bound === null ? "no bound known" : "bound " + bound.toPrecision(4) + ": " + boundName,
            stroke: "crimson", dash: [8, 5] },
        ],
        axes: [{ label: "rounds" }, { label: kind }],
      }, columns(), curveBox);
    } else {
      plot.setData(columns());
    }
  }

  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }

  // -- the shattered tree --------------------------------------------------------------
  const treeBox = document.getElementById("tree");
  let tree = null;
  let path = "";  // labels of the rounds played down the tree so far

  function drawTree(data) {
    if (shared.drawTree(treeBox, data)) { tree = data; light(); }
  }

  function light() {
    if (tree) shared.lightTree(treeBox, tree, path);
  }

  function extendPath(t0, labels) {
    if (!tree) return;
    for (let i = 0; i < labels.length; i++) {
      const t = t0 + i;
      if (t === path.length + 1 && t <= tree.ldim) path += String(labels[i]);
    }
    light();
  }

  // -- the summary's live cells --------------------------------------------------------
  function setCell(name, value) {
    const cell = document.querySelector("#summary td." + name);
    if (cell && value !== undefined && value !== null) {
      cell.textContent = typeof value === "number" && !Number.isInteger(value) ? value.toPrecision(4) : String(value);
    }
  }

  // -- the live feed ---------------------------------------------------------------------
  function follow() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + "/live/" + encodeURIComponent(gameId));
    socket.binaryType = "arraybuffer";
    const decoder = new TextDecoder();
    socket.onmessage = (event) => {
      const m = JSON.parse(typeof event.data === "string" ? event.data : decoder.decode(event.data));
      if (m.type === "rounds") {
        if (experts) {
          series.t.push(m.t); series.value.push(m.regret); series.expected.push(m.expected_regret);
        } else {
          let wrong = 0, lost = 0;
          const steps = m.y.map((y, i) => { wrong += m.prediction[i] !== y ? 1 : 0; lost += y ? 1 - m.p[i] : m.p[i]; return [wrong, lost]; });
          const base = m.mistakes - wrong, baseExpected = m.expected_mistakes - lost;
          steps.forEach(([w, l], i) => {
            series.t.push(m.t0 + i); series.value.push(base + w); series.expected.push(baseExpected + l);
          });
          extendPath(m.t0, m.y);
        }
        setCell("round", m.t); setCell("mistakes", m.mistakes ?? m.loss); setCell("regret", m.regret);
        setTotal(m.t);
        redraw();
      } else if (m.type === "end") {
        setCell("status", m.status);
        curveBox.dataset.ended = m.status;
      } else if (m.type === "watching") {
        curveBox.dataset.watching = "1";
      }
    };
  }

  async function startCurve() {
    try {
      const curve = await getJSON(api + "/curve");
      series.t = curve.t; series.value = curve.value; series.expected = curve.expected;
      if (curve.bound !== null && curve.bound !== undefined) { bound = curve.bound; boundName = curve.bound_name; }
    } catch (e) { /* drawn from the live feed alone */ }
    draw();
    if (body.dataset.live === "1") follow();
    else if (body.dataset.status === "running") setTimeout(poll, 2000);
  }

  // a game another process plays (a tournament's worker, a local play): its log grows
  async function poll() {
    try {
      const game = await getJSON(api);
      const curve = await getJSON(api + "/curve");
      series.t = curve.t; series.value = curve.value; series.expected = curve.expected;
      const last = curve.value.length ? curve.value[curve.value.length - 1] : null;
      setCell("round", curve.rounds); setCell(kind, last); setCell("status", game.status);
      setTotal(curve.rounds);
      redraw();
      if (game.status === "running") setTimeout(poll, 2000);
      else curveBox.dataset.ended = game.status;
    } catch (e) { setTimeout(poll, 5000); }
  }

  // -- the replay's stepper ----------------------------------------------------------------
  const stepper = document.getElementById("stepper");
  let total = stepper ? Number(stepper.dataset.rounds) : 0;

  function setTotal(t) {  // rounds logged so far (a running game's grow)
    if (!stepper || t <= total) return;
    total = t;
    const shown = document.getElementById("step-total");
    if (shown) shown.textContent = String(total);
    else if (total > 0) makeStepper();
  }
  const cache = {};
  let current = 0;

  async function record(t) {
    if (!(t in cache)) {
      const start = Math.max(1, t - (t - 1) % 50);
      const page = await getJSON(api + "/records?start=" + start + "&count=50");
      for (const r of page.records) cache[r.t] = r;
    }
    return cache[t];
  }

  async function step(to) {
    if (to < 1 || to > total) return;
    const r = await record(to);
    if (!r) return;
    current = to;
    document.getElementById("step-t").textContent = String(to);
    const tail = experts
      ? "regret " + r.regret.toPrecision(4) + (r.weights ? ", weights [" + r.weights.slice(0, 8).map((w) => w.toFixed(3)).join(", ") + (r.weights.length > 8 ? ", ..." : "") + "]" : "")
      : "mistakes " + r.mistakes + ", |V| " + (r.version_space ?? "-");
    document.getElementById("step-detail").textContent =
      "instance " + JSON.stringify(r.x) + ", p " + (r.p === null ? "-" : Number(r.p).toFixed(3)) +
      ", prediction " + (r.prediction ?? r.drawn) + ", label " + r.y + (r.mistake ? " (mistake)" : "") + "; " + tail;
    for (const row of document.querySelectorAll("table.replay tr[data-t]")) row.classList.toggle("current", Number(row.dataset.t) === to);
    if (tree && !experts) {
      const labels = [];
      for (let t = 1; t <= Math.min(to, tree.ldim); t++) labels.push((await record(t)).y);
      path = labels.join("");
      light();
    }
  }

  function makeStepper() {
    stepper.innerHTML = "<button id='step-back' type='button'>&#9664; step</button>" +
      "<button id='step-next' type='button'>step &#9654;</button> round <b id='step-t'>0</b> of " +
      "<span id='step-total'>" + total + "</span><span id='step-detail'></span>";
    document.getElementById("step-back").onclick = () => step(current - 1);
    document.getElementById("step-next").onclick = () => step(current + 1);
  }

  if (stepper && total > 0) makeStepper();

  startCurve();
  if (treeBox && body.dataset.tree === "1") {
    getJSON("/api/tree?class=" + encodeURIComponent(body.dataset.class)).then(async (data) => {
      drawTree(data);
      if (!data.error) {
        const page = await getJSON(api + "/records?start=1&count=" + data.ldim);
        extendPath(1, page.records.map((r) => r.y));
      }
    }).catch(() => {});
  }
})();
