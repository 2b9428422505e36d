// cairn console: plain JavaScript, no framework, no external fetches.
// Every call goes to the console's JSON API (docs/design/console.md).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { who: null, view: null, bucket: "", prefix: "", next: "", timer: null,
  queue: [], rates: [], last: null };
const HISTORY = 150; // points kept per graph: 5 minutes at 2 s

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (method !== "GET") opts.headers["X-Cairn-Console"] = "1";
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  if (r.status === 401 && path !== "/api/login") { showLogin(); throw new Error("log in first"); }
  if (r.status === 204) return null;
  const data = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(tbody, cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    if (c instanceof Node) { const td = el("td"); td.append(c); tr.append(td); }
    else if (typeof c === "number") tr.append(el("td", c, "num"));
    else tr.append(el("td", c));
  }
  tbody.append(tr);
  return tr;
}

function bytes(n) {
  if (n === undefined || n === null) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
}

function when(t) {
  if (!t || t.startsWith("0001")) return "–";
  return new Date(t).toLocaleString();
}

// --- login -------------------------------------------------------------

function showLogin() {
  state.who = null;
  stopPolling();
  $("nav").hidden = true;
  $("who").hidden = true;
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== "view-login";
}

function loggedIn(who) {
  state.who = who;
  $("whoami").textContent = who.name + (who.root ? " (root)" : "") + " · " + who.access_key;
  $("nav").hidden = false;
  $("who").hidden = false;
  $("nav-cluster").hidden = !who.root;
  show(who.root ? "cluster" : "buckets");
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  try {
    const who = await api("POST", "/api/login", { access_key: $("access-key").value, secret_key: $("secret-key").value });
    $("secret-key").value = "";
    loggedIn(who);
  } catch (e) {
    $("login-error").textContent = "Login failed: " + e.message;
  }
});

$("logout").addEventListener("click", async () => {
  await api("POST", "/api/logout").catch(() => {});
  showLogin();
});

// --- views -------------------------------------------------------------

function show(view) {
  state.view = view;
  stopPolling();
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== "view-" + view;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.view === view);
  if (view === "cluster") startPolling();
  if (view === "buckets") loadBuckets();
  if (view === "objects") loadBucketChoice();
}

for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => show(b.dataset.view));

// --- cluster -----------------------------------------------------------

function startPolling() {
  pollCluster();
  state.timer = setInterval(pollCluster, 2000);
}

function stopPolling() {
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
}

async function pollCluster() {
  try {
    const [st, tp] = await Promise.all([api("GET", "/api/cluster"), api("GET", "/api/throughput").catch(() => null)]);
    $("cluster-error").textContent = "";
    renderCluster(st);
    if (tp) renderThroughput(tp);
  } catch (e) {
    $("cluster-error").textContent = e.message;
  }
}

function domain(labels) {
  if (!labels) return "–";
  return Object.keys(labels).sort().map((k) => k + "=" + labels[k]).join(", ");
}

function renderCluster(st) {
  $("capacity").textContent = bytes(st.capacity - st.free) + " used of " + bytes(st.capacity) + " (" + bytes(st.free) + " free)";
  const states = st.disk_states || {};
  $("disk-states").textContent = Object.keys(states).sort().map((k) => states[k] + " " + k).join(", ") || "none";
  $("repair-line").textContent = st.repair || "";
  $("queued").textContent = st.repair_queued;
  $("scrub-line").textContent = st.scrub || "";
  const nodes = $("nodes").tBodies[0];
  nodes.replaceChildren();
  for (const n of st.nodes || []) {
    const tr = row(nodes, [n.id, n.addr, domain(n.labels), n.state, n.alive ? "yes" : "no", n.disks]);
    tr.dataset.node = n.id;
    tr.children[3].className = "state-" + n.state;
  }
  const disks = $("disks").tBodies[0];
  disks.replaceChildren();
  for (const d of st.disks || []) {
    const tr = row(disks, [d.id, d.node, d.state, when(d.since), d.reason || d.fault || "", bytes(d.capacity - d.free), bytes(d.capacity)]);
    tr.dataset.disk = d.id;
    tr.children[2].className = "state state-" + d.state;
  }
  const pgs = $("pgs").tBodies[0];
  pgs.replaceChildren();
  for (const t of st.pg_tables || []) {
    row(pgs, [t.width, t.pgs, t.distinct_nodes ? "yes" : "no", (t.policies || []).map((p) => p.survival).join("; ")]);
  }
  const warns = $("warnings");
  warns.replaceChildren();
  for (const w of st.warnings || []) warns.append(el("li", w));
  state.queue.push(st.repair_queued || 0);
  if (state.queue.length > HISTORY) state.queue.shift();
  drawGraph($("queue-graph"), [{ data: state.queue, color: "#b00020" }]);
}

// engineRows are the engine's counters the panel shows, in order.
const engineRows = [
  ["GET shard requests hedged (others were slow)", "reads_hedged"],
  ["GET shard requests cancelled (stragglers, or enough arrived)", "reads_cancelled"],
  ["GET shard requests replacing a failed one", "reads_replaced"],
  ["PUT streams on a spare parity row", "spare_rows"],
  ["PUT streams cancelled (replaced by a spare)", "writes_cancelled"],
  ["PUT streams replacing a failed one", "writes_replaced"],
  ["GET windows decoded around missing shards", "decodes"],
  ["disks marked slow", "slow_marks"],
];

function renderEngine(e, last, dt) {
  $("engine-none").hidden = !!e;
  const body = $("engine").tBodies[0];
  body.replaceChildren();
  const slow = $("slow-disks").tBodies[0];
  slow.replaceChildren();
  if (!e) return;
  for (const [label, k] of engineRows) {
    const rate = last && last.engine && dt > 0 ? ((e[k] - last.engine[k]) / dt).toFixed(1) : "–";
    row(body, [label, rate, e[k]]).dataset.counter = k;
  }
  for (const d of e.slow_disks || []) {
    const tr = row(slow, [d.disk, d.state, d.score.toFixed(1) + "×", when(new Date(d.since_ms).toISOString()), d.until_ms ? when(new Date(d.until_ms).toISOString()) : "–"]);
    tr.dataset.disk = d.disk;
  }
}

function renderThroughput(tp) {
  const last = state.last;
  state.last = tp;
  renderEngine(tp.engine, last, last ? (tp.time_ms - last.time_ms) / 1000 : 0);
  if (!last || tp.time_ms <= last.time_ms) return;
  const dt = (tp.time_ms - last.time_ms) / 1000;
  const r = { in: (tp.bytes_in - last.bytes_in) / dt, out: (tp.bytes_out - last.bytes_out) / dt, req: (tp.requests - last.requests) / dt };
  state.rates.push(r);
  if (state.rates.length > HISTORY) state.rates.shift();
  $("rate-in").textContent = bytes(r.in) + "/s";
  $("rate-out").textContent = bytes(r.out) + "/s";
  $("rate-req").textContent = r.req.toFixed(1) + " requests/s";
  drawGraph($("throughput-graph"), [
    { data: state.rates.map((x) => x.in), color: "#1a56c4" },
    { data: state.rates.map((x) => x.out), color: "#137333" },
  ]);
}

// drawGraph draws each series as a line, scaled to the largest value.
function drawGraph(canvas, series) {
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 4;
  g.clearRect(0, 0, w, h);
  g.strokeStyle = "#d8dbe2";
  g.strokeRect(0.5, 0.5, w - 1, h - 1);
  let top = 1;
  for (const s of series) for (const v of s.data) top = Math.max(top, v);
  g.fillStyle = "#556";
  g.font = "10px sans-serif";
  g.fillText(series.length > 1 ? bytes(top) + "/s" : String(top), pad + 2, 12);
  for (const s of series) {
    g.strokeStyle = s.color;
    g.lineWidth = 1.5;
    g.beginPath();
    s.data.forEach((v, i) => {
      const x = pad + (w - 2 * pad) * (i / Math.max(1, HISTORY - 1));
      const y = h - pad - (h - 2 * pad) * (v / top);
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke();
  }
}

// --- buckets -----------------------------------------------------------

async function loadBuckets() {
  try {
    const r = await api("GET", "/api/buckets");
    $("buckets-error").textContent = "";
    const tb = $("buckets").tBodies[0];
    tb.replaceChildren();
    for (const b of r.buckets) {
      const a = el("a", b.name);
      a.addEventListener("click", () => { state.bucket = b.name; state.prefix = ""; show("objects"); });
      const u = b.usage || {};
      const tr = row(tb, [a, b.policy || "", b.owner || "", u.objects ?? 0, bytes(u.logical ?? 0), bytes(u.stored ?? 0), when(b.created)]);
      tr.dataset.bucket = b.name;
    }
    return r.buckets;
  } catch (e) {
    $("buckets-error").textContent = e.message;
    return [];
  }
}

$("bucket-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    await api("POST", "/api/buckets", { name: $("new-bucket-name").value.trim(), policy: $("new-bucket-policy").value.trim() });
    $("new-bucket-name").value = "";
    loadBuckets();
  } catch (e) {
    $("buckets-error").textContent = "Create failed: " + e.message;
  }
});

// --- objects -----------------------------------------------------------

async function loadBucketChoice() {
  const r = await api("GET", "/api/buckets").catch((e) => { $("objects-error").textContent = e.message; return null; });
  if (!r) return;
  const sel = $("obj-bucket");
  sel.replaceChildren();
  for (const b of r.buckets) sel.append(new Option(b.name, b.name));
  if (!r.buckets.some((b) => b.name === state.bucket)) { state.bucket = r.buckets.length ? r.buckets[0].name : ""; state.prefix = ""; }
  sel.value = state.bucket;
  listObjects(false);
}

$("obj-bucket").addEventListener("change", () => { state.bucket = $("obj-bucket").value; state.prefix = ""; listObjects(false); });
$("more-objects").addEventListener("click", () => listObjects(true));

function objectURL(path, key) {
  return path + "?bucket=" + encodeURIComponent(state.bucket) + "&key=" + encodeURIComponent(key);
}

function renderPath() {
  const p = $("obj-path");
  p.replaceChildren();
  const root = el("a", state.bucket + "/");
  root.addEventListener("click", () => { state.prefix = ""; listObjects(false); });
  p.append(root);
  let acc = "";
  for (const part of state.prefix.split("/").filter((s) => s)) {
    acc += part + "/";
    const to = acc;
    const a = el("a", part + "/");
    a.addEventListener("click", () => { state.prefix = to; listObjects(false); });
    p.append(a);
  }
}

async function listObjects(more) {
  const tb = $("objects").tBodies[0];
  if (!more) { tb.replaceChildren(); state.next = ""; }
  renderPath();
  if (!state.bucket) return;
  let path = "/api/objects?bucket=" + encodeURIComponent(state.bucket) + "&prefix=" + encodeURIComponent(state.prefix);
  if (more && state.next) path += "&token=" + encodeURIComponent(state.next);
  try {
    const r = await api("GET", path);
    $("objects-error").textContent = "";
    for (const p of r.prefixes) {
      const a = el("a", p.slice(state.prefix.length));
      a.addEventListener("click", () => { state.prefix = p; listObjects(false); });
      const tr = row(tb, [a, "", "", ""]);
      tr.dataset.prefix = p;
    }
    for (const o of r.objects) {
      const actions = el("span");
      const dl = el("a", "download", "download");
      dl.href = objectURL("/api/object", o.key);
      dl.download = o.key.split("/").pop();
      const mf = el("button", "manifest", "manifest");
      mf.addEventListener("click", () => showManifest(o.key));
      const del = el("button", "delete", "delete");
      del.addEventListener("click", () => deleteObject(o.key));
      actions.append(dl, " ", mf, " ", del);
      const tr = row(tb, [o.key.slice(state.prefix.length), bytes(o.size), when(o.modified), actions]);
      tr.dataset.key = o.key;
    }
    state.next = r.next || "";
    $("more-objects").hidden = !state.next;
  } catch (e) {
    $("objects-error").textContent = e.message;
  }
}

async function deleteObject(key) {
  if (!confirm("Delete " + state.bucket + "/" + key + "?")) return;
  try {
    await api("DELETE", objectURL("/api/object", key));
    listObjects(false);
  } catch (e) {
    $("objects-error").textContent = "Delete failed: " + e.message;
  }
}

$("upload-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const f = $("upload-file").files[0];
  if (!f || !state.bucket) return;
  const key = state.prefix + f.name;
  const xhr = new XMLHttpRequest();
  xhr.open("PUT", objectURL("/api/object", key));
  xhr.setRequestHeader("X-Cairn-Console", "1");
  if (f.type) xhr.setRequestHeader("Content-Type", f.type);
  $("upload-progress").value = 0;
  $("upload-status").textContent = "uploading " + key;
  xhr.upload.addEventListener("progress", (e) => {
    if (e.lengthComputable) $("upload-progress").value = Math.floor(100 * e.loaded / e.total);
  });
  xhr.addEventListener("load", () => {
    if (xhr.status === 200) {
      $("upload-progress").value = 100;
      $("upload-status").textContent = "uploaded " + key;
      listObjects(false);
    } else {
      let msg = xhr.statusText;
      try { msg = JSON.parse(xhr.responseText).error; } catch (_) { /* keep the status text */ }
      $("upload-status").textContent = "upload failed: " + msg;
    }
  });
  xhr.addEventListener("error", () => { $("upload-status").textContent = "upload failed: network error"; });
  xhr.send(f);
});

// --- manifest ----------------------------------------------------------

function hex8(n) { return (n >>> 0).toString(16).padStart(8, "0"); }

async function showManifest(key) {
  show("manifest");
  $("manifest-name").textContent = state.bucket + "/" + key;
  const sum = $("manifest-summary").tBodies[0];
  sum.replaceChildren();
  const lays = $("manifest-layouts");
  lays.replaceChildren();
  $("manifest-error").textContent = "";
  let m;
  try {
    m = await api("GET", objectURL("/api/manifest", key));
  } catch (e) {
    $("manifest-error").textContent = e.message;
    return;
  }
  const kv = [["object", m.bucket + "/" + m.key], ["version", m.version], ["size", m.size + " bytes"], ["etag", m.etag],
    ["created", when(m.created)], ["policy", m.policy]];
  if (m.code) kv.push(["stored as", m.code + " (a small object: copies that survive what " + m.policy + " survives)"]);
  if (m.content_type) kv.push(["type", m.content_type]);
  if (m.encryption) kv.push(["encryption", m.encryption.scheme + ", " + m.encryption.cipher]);
  for (const [k, v] of kv) row(sum, [k, v]);
  const layout = (title, l) => {
    lays.append(el("h3", title));
    if (l.coded && l.coded.length) {
      const t = el("table");
      t.className = "shards";
      const tb = document.createElement("tbody");
      t.append(tb);
      row(tb, ["stripe", "blocks (disk:id crc32c)"]);
      l.coded.forEach((st, i) => row(tb, [i, st.blocks.map((b) => b.disk + ":" + b.id + " " + hex8(b.crc32c)).join(", ")]));
      lays.append(el("p", "block " + bytes(l.block_size) + " per coded block; fountain-coded: blocks on whichever disks took them"), t);
      return;
    }
    lays.append(el("p", "block " + bytes(l.block_size) + " per shard per stripe, placement group " + l.pg));
    const t = el("table");
    t.className = "shards";
    const th = t.createTHead().insertRow();
    for (const h of ["shard", "disk", "bytes", "crc32c", "row"]) th.append(el("th", h));
    const tb = document.createElement("tbody");
    t.append(tb);
    (l.shards || []).forEach((s, i) => {
      const tr = row(tb, [i, s.disk, s.size, hex8(s.crc32c), s.row ? "spare parity row " + s.row : ""]);
      tr.dataset.disk = s.disk;
      tr.children[3].className = "mono";
    });
    lays.append(t);
  };
  if (m.parts && m.parts.length) m.parts.forEach((p) => layout("part " + p.number + " (" + bytes(p.size) + ")", p));
  else layout("shards", m);
}

$("manifest-back").addEventListener("click", () => show("objects"));

// --- start ---------------------------------------------------------------

api("GET", "/api/session").then(loggedIn).catch(() => showLogin());
