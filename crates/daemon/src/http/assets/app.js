// The roverlog dashboard: polls /api/status (the control protocol's status reply) every
// second and /api/history every two, and sends commands to POST /api/command with the token.
// The reads' x-roverlog-role header says whether the token makes this page an operator's:
// only then are the buttons shown. When the daemon does not answer, everything is greyed and
// a banner says since when; nothing on the page claims to be live then.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "roverlog-token";
// A read that takes longer than this counts as the daemon not answering.
const READ_TIMEOUT_MS = 2500;

// A token may arrive in the fragment (never sent to the server, so never in a log):
// http://host:port/#token=SECRET. It is kept for this tab only, and stays in the token
// field, where it can be corrected.
(function takeTokenFromFragment() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
})();

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const t = token();
  if (t) h["Authorization"] = "Bearer " + t;
  return h;
}

let history_ = null;
let role = "viewer";
let readOnly = false;
let lastStatus = null;
// When the triggered trace stops, on performance.now()'s clock (null: no triggered trace).
let triggerStopAt = null;

function fmtBytes(b) {
  if (b == null) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return b.toFixed(i ? 1 : 0) + " " + units[i];
}

// status `offload` (config `offload`): the background offload's progress and last error.
function renderOffload(o) {
  $("offload-panel").hidden = !o;
  if (!o) return;
  $("offload-state").textContent = `${o.state} (${o.when})`;
  $("offload-dest").textContent = o.dest;
  $("offload-pending").textContent =
    o.pending_traces == null ? "–" : `${o.pending_traces} trace(s)`;
  $("offload-left").textContent = fmtBytes(o.bytes_left);
  $("offload-rate").textContent = fmtBytes(o.rate_bytes_per_s) + "/s";
  $("offload-error").hidden = !o.last_error;
  $("offload-error").textContent = o.last_error ? "offload error: " + o.last_error : "";
}

function fmtSeconds(s) {
  if (s == null) return "–";
  if (s < 120) return Math.round(s) + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return Math.round(s / 86400) + " d";
}

function td(text, cls, label) {
  const el = document.createElement("td");
  el.textContent = text;
  if (cls) el.className = cls;
  if (label) el.dataset.label = label;
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

// The x axis is the history the daemon has (at least a minute, at most `points` seconds),
// right-aligned and placed by each point's time, so a line's length is how long the sensor
// has been seen. A point without a rate (the sensor not connected) or a jump in time (the
// sampler late) ends the line: the next point starts a new one (its own `M`), so a gap is
// drawn as a gap.
function sparkline(values) {
  const w = 160, h = 24;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("preserveAspectRatio", "none"); // a phone's card stretches it
  const ts = (history_ && history_.t) || [];
  values = values || [];
  if (!ts.length || values.length !== ts.length) return svg;
  const interval = history_.interval_s || 1;
  const end = ts[ts.length - 1];
  const span = Math.min(Math.max(2, history_.points || 0) * interval,
    Math.max(60, end - ts[0] + interval));
  const title = document.createElementNS(SVG, "title");
  title.textContent = `rate over the last ${fmtSeconds(span)}`;
  svg.appendChild(title);
  const max = Math.max(1e-9, ...values.filter((v) => v != null));
  const x = (t) => (w - 1 - (end - t) / span * (w - 2)).toFixed(1);
  const y = (v) => (h - 2 - v / max * (h - 4)).toFixed(1);
  let d = "";
  let prev = null; // time of the previous drawn point, while a line is open
  let alone = false; // the open line has one point so far
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v == null || ts[i] <= end - span) { prev = null; continue; }
    const joined = prev != null && ts[i] - prev <= 2.5 * interval;
    if (!joined && alone) d += " h1"; // a lone point still shows, as a dot
    d += `${joined ? " L" : " M"}${x(ts[i])},${y(v)}`;
    alone = !joined;
    prev = ts[i];
  }
  if (alone) d += " h1";
  if (d) {
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", d.trim());
    svg.appendChild(path);
  }
  return svg;
}

function queueBar(s) {
  const limit = Math.max(1, s.queue_limit || 1);
  const pct = 100 * (s.queue_bytes || 0) / limit;
  const cell = document.createElement("td");
  cell.dataset.label = "queue";
  const bar = document.createElement("div");
  bar.className = "bar" + (pct > 80 ? " high" : "");
  bar.title = `${fmtBytes(s.queue_bytes)} of ${fmtBytes(limit)} (high water ${fmtBytes(s.queue_high_water)})`;
  const fill = document.createElement("div");
  fill.style.width = Math.min(100, pct).toFixed(1) + "%";
  bar.appendChild(fill);
  cell.appendChild(bar);
  return cell;
}

function alarmNames(alarms) {
  return alarms.map((a) => a.alarm).join(", ");
}

function sensorRow(name, s) {
  const tr = document.createElement("tr");
  tr.dataset.sensor = name;
  tr.appendChild(td(name, "name", "sensor"));
  const conn = s.failed ? "failed" : s.connected ? "yes" : "no";
  tr.appendChild(td(conn, s.connected && !s.failed ? "" : "bad", "conn"));
  tr.appendChild(td(String(s.samples), "num samples", "samples"));
  tr.appendChild(td((s.rate_hz || 0).toFixed(1), "num rate", "rate/s"));
  const spark = document.createElement("td");
  spark.className = "spark-cell";
  spark.dataset.label = "rate history";
  spark.appendChild(sparkline(history_ && history_.sensors[name]));
  tr.appendChild(spark);
  tr.appendChild(queueBar(s));
  tr.appendChild(td(String(s.drops), "num" + (s.drops > 0 ? " bad" : ""), "drops"));
  tr.appendChild(td(String(s.gaps), "num" + (s.gaps > 0 ? " bad" : ""), "gaps"));
  tr.appendChild(td(String(Math.max(0, s.samples - s.durable)), "num", "durable lag"));
  const age = s.last_fsync_age_ms;
  tr.appendChild(td(age == null ? "–" : (age / 1000).toFixed(1) + " s", "num", "fsync age"));
  const alarms = alarmNames(s.alarms || []);
  tr.appendChild(td(alarms, "alarms" + (alarms ? " bad" : ""), "alarms"));
  return tr;
}

// A sensor the config names that is not there: a greyed row saying what is expected of it.
function absentRow(name, a, alarms) {
  const tr = document.createElement("tr");
  tr.dataset.sensor = name;
  tr.className = "absent";
  tr.title = `${name} has not connected` + (a.required ? " (required)" : "");
  tr.appendChild(td(name, "name", "sensor"));
  tr.appendChild(td(a.required ? "absent, required" : "absent", "conn", "conn"));
  tr.appendChild(td("–", "num samples", "samples"));
  const expect = a.expected_hz != null ? `– (expects ${a.expected_hz})` : "–";
  tr.appendChild(td(expect, "num rate", "rate/s"));
  for (const label of ["rate history", "queue", "drops", "gaps", "durable lag", "fsync age"]) {
    tr.appendChild(td("", "", label));
  }
  const names = alarmNames(alarms);
  tr.appendChild(td(names, "alarms" + (names ? " bad" : ""), "alarms"));
  return tr;
}

function renderSensors(st) {
  const body = document.querySelector("#sensors tbody");
  const rows = [];
  const sensors = st.sensors || {};
  for (const name of Object.keys(sensors)) rows.push(sensorRow(name, sensors[name]));
  const absent = st.absent_sensors || {};
  for (const name of Object.keys(absent)) {
    const alarms = (st.alarms || []).filter((a) => a.sensor === name);
    rows.push(absentRow(name, absent[name], alarms));
  }
  body.replaceChildren(...rows);
  $("no-sensors").hidden = rows.length > 0;
}

function renderSnapshot(st, rec) {
  const snap = st.snapshot;
  $("snapshot-panel").hidden = !snap;
  $("trigger-row").hidden = !snap;
  if (!snap) {
    triggerStopAt = null;
    return;
  }
  const armed = snap.enabled === true;
  $("snap-state").textContent = armed ? (rec ? "armed (recording)" : "armed") : "off";
  $("snap-state").className = armed ? "armed" : "";
  // While recording, frames go to the trace, not the ring.
  $("snap-held-row").hidden = !armed || rec;
  $("snap-held").textContent = (snap.held_seconds || 0).toFixed(1) + " s";
  $("snap-window").textContent = fmtSeconds(snap.pre_trigger_seconds);
  const left = snap.trigger_stops_in_s;
  triggerStopAt = left == null ? null : performance.now() + left * 1000;
  tickCountdown();
  const triggered = left != null;
  $("trigger").disabled = !armed || (rec && !triggered);
  $("trigger").textContent = triggered ? "Trigger again" : "Trigger";
  $("trigger").title = !armed ? "arm snapshot mode first"
    : rec && !triggered ? "a trace not started by a trigger is recording"
    : triggered ? "move the stop to this long from now" : "record the ring and this long after";
  $("snapshot-toggle").textContent = armed ? "Disarm snapshot" : "Arm snapshot";
}

function tickCountdown() {
  const show = triggerStopAt != null && !document.body.classList.contains("offline");
  $("countdown").hidden = !show;
  if (show) {
    const s = Math.max(0, (triggerStopAt - performance.now()) / 1000);
    $("countdown-s").textContent = s.toFixed(1) + " s";
  }
}

function renderAccess() {
  $("readonly").hidden = !readOnly;
  $("token-row").hidden = readOnly;
  $("controls").hidden = readOnly || role !== "operator";
  const note = $("role-note");
  if (role === "operator") {
    note.textContent = "operator";
    note.className = "ok";
  } else if (token()) {
    note.textContent = "wrong token: correct it to control the daemon";
    note.className = "bad";
  } else {
    note.textContent = "view only: enter the token to control the daemon";
    note.className = "muted";
  }
}

function render(st) {
  lastStatus = st;
  const rec = st.recording === true;
  // A failed write or fsync is never shown green (docs/disk-failure.md).
  const diskErrors = ((st.disk || {}).errors || []).length;
  $("state").textContent = (rec ? "recording" : "not recording") + (diskErrors ? ", DISK ERROR" : "");
  $("state").className = "badge " + (diskErrors ? "fault" : rec ? "recording" : "idle");
  $("trace").textContent = st.trace || "";
  $("stopped").hidden = !st.stopped_reason;
  $("stopped").textContent = st.stopped_reason ? "stopped: " + st.stopped_reason : "";
  const alarms = st.alarms || [];
  $("alarms").hidden = alarms.length === 0;
  $("alarms").replaceChildren(...alarms.map((a) => {
    const li = document.createElement("li");
    const detail = Object.entries(a).filter(([k]) => !["alarm", "sensor", "start"].includes(k))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
    li.textContent = `ALARM ${String(a.alarm).toUpperCase()} ${a.sensor || ""} ${detail}`;
    return li;
  }));
  const disk = st.disk || {};
  $("disk-free").textContent = fmtBytes(disk.free_bytes);
  $("disk-low").hidden = disk.low !== true;
  readOnly = !!(st.http && st.http.read_only);
  renderAccess();
  $("start").disabled = rec;
  $("stop").disabled = !rec;
  $("rotate").disabled = !rec;
  $("mark").disabled = !rec;
  renderSnapshot(st, rec);
  renderOffload(st.offload);
  renderSensors(st);
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

// Greys everything and says why; `why` null: the daemon answers again.
let unreachableSince = null;
function setOffline(why, auth) {
  const off = why != null;
  document.body.classList.toggle("offline", off);
  for (const b of document.querySelectorAll("#controls button")) {
    if (off) b.disabled = true;
  }
  if (!off) {
    unreachableSince = null;
    $("unreachable").hidden = true;
    return;
  }
  $("unreachable").hidden = false;
  if (auth) {
    // The daemon answers but will not show this page anything without the right token.
    unreachableSince = null;
    $("unreachable").textContent = `The daemon refuses this page: ${why}. Enter the token below.`;
    $("state").textContent = "no access";
    $("token-row").hidden = false;
    $("role-note").textContent = token() ? "wrong token" : "token needed";
    $("role-note").className = "bad";
  } else {
    unreachableSince = unreachableSince || new Date();
    const seen = lastStatus ? `; what is shown is from ${$("updated").textContent.replace("updated ", "")}` : "";
    $("unreachable").textContent =
      `Daemon unreachable since ${unreachableSince.toLocaleTimeString()} (${why})${seen}. Recording state unknown.`;
    $("state").textContent = "unreachable";
  }
  $("state").className = "badge offline";
  $("controls").hidden = true;
  tickCountdown();
}

// A 503 means the request did not run: its connection gave its slot to a newer one just as
// it started, or every connection was busy (docs/dashboard.md, "Security"). It is sent once
// more, on a fresh connection; a second 503 is shown as it is.
async function send(path, init) {
  const r = await fetch(path, init);
  return r.status === 503 ? fetch(path, init) : r;
}

async function read(path) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), READ_TIMEOUT_MS);
  try {
    return await send(path, { headers: headers(), cache: "no-store", signal: ctl.signal });
  } finally {
    clearTimeout(timer);
  }
}

async function poll() {
  let r, st;
  try {
    r = await read("/api/status");
    st = await r.json();
  } catch (e) {
    setOffline(e.name === "AbortError" ? `no answer within ${READ_TIMEOUT_MS / 1000} s` : e.message);
    return;
  }
  if (r.status === 401 || r.status === 403) {
    setOffline(st.error || r.statusText, true);
    return;
  }
  if (!r.ok) {
    setOffline(`${r.status}: ${st.error || r.statusText}`);
    return;
  }
  role = r.headers.get("x-roverlog-role") === "operator" ? "operator" : "viewer";
  setOffline(null);
  render(st);
}

async function pollHistory() {
  try {
    const r = await read("/api/history");
    if (!r.ok) return;
    history_ = await r.json();
    $("write-rate").textContent =
      history_.disk_bytes_per_s == null ? "–" : fmtBytes(history_.disk_bytes_per_s) + "/s";
    $("write-rate").title = "growth of the trace's files on disk over the last 30 s";
    $("time-left").textContent = fmtSeconds(history_.seconds_left);
    $("time-left").title = `until the free space is down to min_free_bytes (${fmtBytes(history_.min_free_bytes)}), where recording stops`;
    if (lastStatus) renderSensors(lastStatus);
  } catch (e) {
    // poll() reports an unreachable daemon.
  }
}

async function command(cmd) {
  $("result").textContent = "…";
  try {
    const r = await send("/api/command", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(cmd),
    });
    const reply = await r.json();
    if (reply.ok) {
      $("result").textContent = `${cmd.cmd}: ok` + (reply.trace ? ` (${reply.trace})` : "");
    } else {
      $("result").textContent = `${cmd.cmd} refused: ${reply.error}`;
    }
  } catch (e) {
    $("result").textContent = `${cmd.cmd} failed: ${e.message}`;
  }
  poll();
}

function label() {
  const l = $("label").value.trim();
  return l ? { label: l } : {};
}

$("token-row").addEventListener("submit", (e) => {
  e.preventDefault();
  const t = $("token").value.trim();
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
  poll();
  pollHistory();
});
$("start").addEventListener("click", () => command(Object.assign({ cmd: "start" }, label())));
$("stop").addEventListener("click", () => {
  if (confirm("Stop recording?")) command({ cmd: "stop" });
});
$("rotate").addEventListener("click", () => command(Object.assign({ cmd: "rotate" }, label())));
$("mark").addEventListener("click", () => {
  const text = $("mark-text").value;
  if (text) command({ cmd: "mark", text }).then(() => { $("mark-text").value = ""; });
});
$("trigger").addEventListener("click", () => {
  const after = parseFloat($("after").value);
  const cmd = Object.assign({ cmd: "trigger" }, label());
  if (Number.isFinite(after)) cmd.after = after;
  command(cmd);
});
$("snapshot-toggle").addEventListener("click", () => {
  const on = !(lastStatus && lastStatus.snapshot && lastStatus.snapshot.enabled);
  command({ cmd: "snapshot", on });
});

poll();
pollHistory();
setInterval(poll, 1000);
setInterval(pollHistory, 2000);
setInterval(tickCountdown, 200);
