// The roverlog dashboard: polls /api/status (the control protocol's status reply) every
// second and /api/history every two, and sends commands to POST /api/command with the token.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "roverlog-token";

// A token may arrive in the fragment (never sent to the server, so never in a log):
// http://host:port/#token=SECRET. It is kept for this tab only.
(function takeTokenFromFragment() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
})();

function token() {
  return $("token").value || sessionStorage.getItem(TOKEN_KEY) || "";
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const t = token();
  if (t) h["Authorization"] = "Bearer " + t;
  return h;
}

let history_ = null;
let readOnly = false;

function fmtBytes(b) {
  if (b == null) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return b.toFixed(i ? 1 : 0) + " " + units[i];
}

function fmtSeconds(s) {
  if (s == null) return "–";
  if (s < 120) return Math.round(s) + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  return (s / 3600).toFixed(1) + " h";
}

function td(text, cls) {
  const el = document.createElement("td");
  el.textContent = text;
  if (cls) el.className = cls;
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

// The x axis is the whole history (`points` seconds, right-aligned), so a line's length is
// how long the sensor has been seen.
function sparkline(values) {
  const w = 160, h = 24;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  values = values || [];
  const span = Math.max(2, (history_ && history_.points) || values.length);
  const offset = span - values.length;
  const pts = values.map((v, i) => [offset + i, v]).filter(([, v]) => v != null);
  if (pts.length > 1) {
    const max = Math.max(1e-9, ...pts.map(([, v]) => v));
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", pts.map(([i, v]) =>
      `${(i / (span - 1) * (w - 2) + 1).toFixed(1)},${(h - 2 - v / max * (h - 4)).toFixed(1)}`).join(" "));
    svg.appendChild(line);
  }
  return svg;
}

function queueBar(s) {
  const limit = Math.max(1, s.queue_limit || 1);
  const pct = 100 * (s.queue_bytes || 0) / limit;
  const cell = document.createElement("td");
  const bar = document.createElement("div");
  bar.className = "bar" + (pct > 80 ? " high" : "");
  bar.title = `${fmtBytes(s.queue_bytes)} of ${fmtBytes(limit)} (high water ${fmtBytes(s.queue_high_water)})`;
  const fill = document.createElement("div");
  fill.style.width = Math.min(100, pct).toFixed(1) + "%";
  bar.appendChild(fill);
  cell.appendChild(bar);
  return cell;
}

function renderSensors(st) {
  const body = document.querySelector("#sensors tbody");
  const rows = [];
  const sensors = st.sensors || {};
  for (const name of Object.keys(sensors)) {
    const s = sensors[name];
    const tr = document.createElement("tr");
    tr.dataset.sensor = name;
    tr.appendChild(td(name));
    tr.appendChild(td(s.connected ? "yes" : "no", s.connected ? "" : "bad"));
    tr.appendChild(td(String(s.samples), "num samples"));
    tr.appendChild(td((s.rate_hz || 0).toFixed(1), "num rate"));
    const spark = document.createElement("td");
    spark.appendChild(sparkline(history_ && history_.sensors[name]));
    tr.appendChild(spark);
    tr.appendChild(queueBar(s));
    tr.appendChild(td(String(s.drops), "num" + (s.drops > 0 ? " bad" : "")));
    tr.appendChild(td(String(s.gaps), "num" + (s.gaps > 0 ? " bad" : "")));
    tr.appendChild(td(String(Math.max(0, s.samples - s.durable)), "num"));
    const age = s.last_fsync_age_ms;
    tr.appendChild(td(age == null ? "–" : (age / 1000).toFixed(1) + " s", "num"));
    const alarms = (s.alarms || []).map((a) => a.alarm).join(", ");
    tr.appendChild(td(alarms, alarms ? "bad" : ""));
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  $("no-sensors").hidden = rows.length > 0;
}

function render(st) {
  const rec = st.recording === true;
  $("state").textContent = rec ? "recording" : "not recording";
  $("state").className = "badge " + (rec ? "recording" : "idle");
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
  $("readonly").hidden = !readOnly;
  $("token-row").hidden = readOnly || !!sessionStorage.getItem(TOKEN_KEY);
  for (const id of ["start", "stop", "rotate", "mark"]) $(id).disabled = readOnly;
  $("start").disabled = readOnly || rec;
  $("stop").disabled = readOnly || !rec;
  $("rotate").disabled = readOnly || !rec;
  $("mark").disabled = readOnly || !rec;
  renderSensors(st);
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

let unreachableSince = null;

async function poll() {
  try {
    const r = await fetch("/api/status", { headers: headers(), cache: "no-store" });
    const st = await r.json();
    if (!r.ok) throw new Error(st.error || r.statusText);
    unreachableSince = null;
    $("unreachable").hidden = true;
    render(st);
  } catch (e) {
    unreachableSince = unreachableSince || new Date();
    $("unreachable").hidden = false;
    $("unreachable").textContent =
      `daemon unreachable since ${unreachableSince.toLocaleTimeString()}: ${e.message}`;
  }
}

async function pollHistory() {
  try {
    const r = await fetch("/api/history", { headers: headers(), cache: "no-store" });
    if (!r.ok) return;
    history_ = await r.json();
    $("write-rate").textContent = fmtBytes(history_.write_bytes_per_s) + "/s";
    $("time-left").textContent = fmtSeconds(history_.seconds_left);
  } catch (e) {
    // poll() reports an unreachable daemon.
  }
}

async function command(cmd) {
  $("result").textContent = "…";
  try {
    const r = await fetch("/api/command", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(cmd),
    });
    const reply = await r.json();
    if (reply.ok) {
      $("result").textContent = `${cmd.cmd}: ok` + (reply.trace ? ` (${reply.trace})` : "");
      const t = $("token").value;
      if (t) sessionStorage.setItem(TOKEN_KEY, t);
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

$("start").addEventListener("click", () => command(Object.assign({ cmd: "start" }, label())));
$("stop").addEventListener("click", () => {
  if (confirm("Stop recording?")) command({ cmd: "stop" });
});
$("rotate").addEventListener("click", () => command(Object.assign({ cmd: "rotate" }, label())));
$("mark").addEventListener("click", () => {
  const text = $("mark-text").value;
  if (text) command({ cmd: "mark", text }).then(() => { $("mark-text").value = ""; });
});

poll();
pollHistory();
setInterval(poll, 1000);
setInterval(pollHistory, 2000);
