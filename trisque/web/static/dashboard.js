// trisque dashboard: polls /api/overview every second, keeps 15 minutes of
// snapshots in memory and derives rates from successive counters.
"use strict";

const POLL_MS = 1000;
// A request the node does not answer in this long is given up and the
// page says so: without a bound, one lost response froze the page for good.
const ANSWER_MS = 5000;
const HISTORY = 900;  // samples: 15 minutes at one a second
const MIN_SPAN = 60;  // plots span at least a minute, so a fresh page shows lines, not a sliver
const history = [];   // {time, commands, queues: {name: view}}
// Absolute URLs: a page opened as http://user:password@host/ resolves
// relative ones with the credentials in them, which fetch() refuses; the
// browser still sends the password it was given with these.
const ORIGIN = location.origin;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fillRows(tbody, rows) {
  // rows: arrays of cells; a cell is a value or a DOM node
  const fresh = document.createElement("tbody");
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const cell of row) {
      if (cell instanceof Node) { const td = el("td"); td.appendChild(cell); tr.appendChild(td); }
      else tr.appendChild(el("td", cell, typeof cell === "number" ? "num" : ""));
    }
    fresh.appendChild(tr);
  }
  tbody.replaceWith(fresh);
}

function human(bytes) {
  const units = [["G", 1 << 30], ["M", 1 << 20], ["K", 1 << 10]];
  for (const [u, s] of units) if (bytes >= s) return (bytes / s).toFixed(1) + u;
  return bytes + "B";
}

function rate(now, before, pick) {
  if (!before) return 0;
  const dt = now.time - before.time;
  if (dt <= 0) return 0;
  return Math.max(0, (pick(now) - pick(before)) / dt);
}

function total(snapshot, field) {
  return snapshot.queues.reduce((sum, q) => sum + q[field], 0);
}

const SVG = "http://www.w3.org/2000/svg";

function polyline(svg, points, w, h, color, max) {
  if (points.length < 2) return;
  const top = Math.max(max, 1);
  const step = w / (Math.max(points.length, MIN_SPAN) - 1);
  const x0 = w - (points.length - 1) * step;
  const d = points.map((v, i) => `${(x0 + i * step).toFixed(1)},${(h - 2 - (v / top) * (h - 4)).toFixed(1)}`);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", d.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", color);
  line.setAttribute("stroke-width", "1.5");
  line.setAttribute("vector-effect", "non-scaling-stroke");
  svg.appendChild(line);
}

function drawThroughput() {
  const svg = document.getElementById("throughput-plot");
  svg.replaceChildren();
  const ins = [], outs = [];
  for (let i = 1; i < history.length; i++) {
    ins.push(rate(history[i], history[i - 1], s => total(s.raw, "enqueued")));
    outs.push(rate(history[i], history[i - 1], s => total(s.raw, "dequeued")));
  }
  const max = Math.max(1, ...ins, ...outs);
  polyline(svg, ins, 600, 120, "#2b6cb0", max);
  polyline(svg, outs, 600, 120, "#c05621", max);
  const span = Math.max(ins.length, MIN_SPAN);
  document.getElementById("plot-window").textContent =
    `last ${span >= 120 ? Math.round(span / 60) + " min" : span + " s"} · peak ${max.toFixed(0)}/s`;
}

function sparkline(name) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("viewBox", "0 0 220 28");
  svg.setAttribute("preserveAspectRatio", "none");
  const values = history.map(s => (s.queues[name] ? s.queues[name].length : 0));
  polyline(svg, values, 220, 28, "#2b6cb0", Math.max(...values));
  return svg;
}

function render(data) {
  const prev = history.length ? history[history.length - 1] : null;
  const snap = {time: data.time, raw: data, queues: {}};
  for (const q of data.queues) snap.queues[q.name] = q;
  history.push(snap);
  if (history.length > HISTORY) history.shift();

  document.getElementById("whoami").textContent =
    `node ${data.node.id.slice(0, 8)} · port ${data.node.port} · up ${data.node.uptime_s}s` +
    (data.node.loading ? " · loading" : "") +
    (data.node.load ? ` ${data.node.load.percent.toFixed(1)}% · ${data.node.load.jobs} jobs` +
                      ` · ${data.node.load.jobs_per_s} jobs/s · ETA ${data.node.load.eta_s} s` : "");
  document.getElementById("ops").textContent =
    rate(snap, prev, s => s.raw.commands_processed).toFixed(0);
  document.getElementById("in-rate").textContent = rate(snap, prev, s => total(s.raw, "enqueued")).toFixed(0);
  document.getElementById("out-rate").textContent = rate(snap, prev, s => total(s.raw, "dequeued")).toFixed(0);
  document.getElementById("ack-rate").textContent = rate(snap, prev, s => total(s.raw, "acked")).toFixed(0);
  document.getElementById("clients").textContent = `${data.clients.connected} (${data.clients.blocked})`;
  document.getElementById("memory").textContent = human(data.memory.used) + ` · level ${data.memory.level}`;

  fillRows(document.querySelector("#jobs tbody"),
    [["registered", data.registered_jobs], ...Object.entries(data.jobs)]);
  fillRows(document.querySelector("#nodes tbody"), data.nodes.map(n => {
    const state = el("span", n.state, "state-" + n.state);
    return [n.id.slice(0, 8), n.address, state, n.link ? "up" : "down"];
  }));
  fillRows(document.querySelector("#queues tbody"), data.queues.map(q => {
    const before = prev && prev.queues[q.name];
    const r = field => Number((before ? rate(snap, prev, s => s.queues[q.name][field]) : 0).toFixed(1));
    const row = [q.name, q.length, r("enqueued"), r("dequeued"), r("acked"), q.nacked, q.blocked,
                 sparkline(q.name)];
    return row;
  }));
  document.querySelectorAll("#queues tbody tr").forEach((tr, i) => {
    tr.dataset.queue = data.queues[i].name;
  });
  fillRows(document.querySelector("#schedules tbody"), data.schedules.map(s =>
    [s.name, s.cron, s.queue, when(s.next_tick_ms),
     s.last_tick_ms ? when(s.last_tick_ms) : "–", s.last_node ? s.last_node.slice(0, 8) : "–"]));
  fillRows(document.querySelector("#slow tbody"),
    data.slow_commands.map(c => [c.name, c.calls, c.usec_per_call]));
  const aof = data.aof;
  fillRows(document.querySelector("#aof tbody"), [
    ["append only file", aof.enabled ? "on" : "off"],
    ["size", human(aof.size)],
    ["rewrite", aof.rewriting ? "running" : "idle"],
    ["since last fsync", aof.fsync_lag_s === null ? "–" : aof.fsync_lag_s.toFixed(1) + " s"],
  ]);
  renderDeadLetters(data);
  drawThroughput();
}

// Dead letters: rebuilt only when they change (times are absolute), so a
// button is not replaced under the pointer between two polls.
let deadShown = null;

function when(ms) {
  const d = new Date(ms);
  const pad = n => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function renderDeadLetters(data) {
  const dead = data.dead_letters;
  const key = JSON.stringify([dead, data.job_actions]);
  if (key === deadShown) return;
  deadShown = key;
  const total = dead.queues.reduce((sum, q) => sum + q.dead_jobs, 0);
  document.getElementById("dead-summary").textContent =
    `· ${total} dead job${total === 1 ? "" : "s"} on this node` +
    (dead.other_queues ? ` · ${dead.other_queues} more queues not listed` : "") +
    (dead.complete ? "" : ` · only the first ${dead.scanned_jobs} jobs scanned`) +
    (data.job_actions ? "" : " · read-only (the node has no requirepass)");
  const holder = document.getElementById("dead-queues");
  const fresh = document.createElement("div");
  fresh.id = "dead-queues";
  if (!dead.queues.length) fresh.appendChild(el("p", "No dead jobs on this node.", "label"));
  for (const q of dead.queues) {
    const box = el("div", undefined, "dead-queue");
    box.dataset.queue = q.name;
    const shown = q.jobs.length < q.dead_jobs ? ` (the last ${q.jobs.length} to die shown)` : "";
    box.appendChild(el("h3", `${q.name} · ${q.dead_jobs} dead · queue length ${q.queued}${shown}`));
    const table = el("table");
    const head = el("thead");
    const hr = el("tr");
    for (const h of ["job", "died in", "state", "deliveries", "last error", "died at"])
      hr.appendChild(el("th", h, h === "deliveries" ? "num" : ""));
    if (data.job_actions) hr.appendChild(el("th", ""));
    head.appendChild(hr);
    table.appendChild(head);
    const body = el("tbody");
    for (const j of q.jobs) {
      const tr = el("tr");
      tr.dataset.job = j.id;
      tr.appendChild(el("td", j.id));
      tr.appendChild(el("td", j.died_in));
      tr.appendChild(el("td", j.state));
      const td = el("td", j.nacks + j.additional_deliveries, "num");
      td.title = `${j.nacks} NACKs, ${j.additional_deliveries} other returns`;
      tr.appendChild(td);
      tr.appendChild(el("td", j.last_error === null ? "–" : j.last_error, "error"));
      tr.appendChild(el("td", when(j.dead_ms)));
      if (data.job_actions) {
        const cell = el("td");
        cell.appendChild(actionButton(j.id, "revive", "Revive"));
        cell.appendChild(actionButton(j.id, "delete", "Delete"));
        tr.appendChild(cell);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    box.appendChild(table);
    fresh.appendChild(box);
  }
  holder.replaceWith(fresh);
}

function actionButton(id, action, label) {
  const b = el("button", label);
  b.type = "button";
  b.dataset.action = action;
  b.addEventListener("click", () => jobAction(id, action, b));
  return b;
}

async function jobAction(id, action, button) {
  // delete cannot be undone: ask first (revive can be undone by the job dying again)
  if (action === "delete" && !confirm(`Delete job ${id} from this node?`)) return;
  const message = document.getElementById("dead-message");
  button.disabled = true;
  try {
    // The custom header is the server's proof that this page sent it (CSRF).
    const response = await fetch(ORIGIN + `/api/dead-letters/${encodeURIComponent(id)}/${action}`,
      {method: "POST", headers: {"X-Trisque-Action": action}, cache: "no-store"});
    let text;
    try { const body = await response.json(); text = body.message || body.error; }
    catch (_) { text = "HTTP " + response.status; }
    message.textContent = text;
    message.className = response.ok ? "message ok" : "message error";
  } catch (err) {
    message.textContent = `${action} failed: ${err.message}`;
    message.className = "message error";
  }
  button.disabled = false;
}

async function poll() {
  const status = document.getElementById("status");
  try {
    const response = await fetch(ORIGIN + "/api/overview",
                                 {cache: "no-store", signal: AbortSignal.timeout(ANSWER_MS)});
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    status.textContent = "live · " + new Date().toLocaleTimeString();
    status.className = "status";
  } catch (err) {
    status.textContent = "no answer: " + err.message;
    status.className = "status stale";
  }
  setTimeout(poll, POLL_MS);
}

poll();
