"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const $ = (id) => document.getElementById(id);

  const { fmtBytes, fmtS, fmtN, fmtText, el, setupCanvas } = REPORT_COMMON;
  function fmtPct(x) { return x === null || x === undefined ? "-" : (x * 100).toFixed(1) + "%"; }
  const FMT = { bytes: fmtBytes, s: fmtS, n: fmtN, pct: fmtPct, text: fmtText,
                times: (v) => (v === null || v === undefined ? "-" : Number(v).toFixed(1) + "×"),
                ns: (v) => (v === null || v === undefined ? "unknown" : fmtS(v / 1e9)) };
  const sortableTable = (container, columns, rows, key, desc) =>
    REPORT_COMMON.sortableTable(container, columns, rows, FMT, { key, desc: desc !== false });

  // ---------- header, facts ----------
  const h = DATA.headline;
  const io = h.io || {};
  const ioText = io.captured === false ? "I/O not captured" :
    (DATA.destinations.length
      ? `I/O ${fmtBytes((io.total || {}).bytes)}: ` +
        DATA.destinations.map(([name, b, f]) => `${name} ${fmtBytes(b)} (${fmtPct(f)})`).join(", ")
      : `I/O ${fmtBytes((io.total || {}).bytes)}, ${fmtPct(io.attributed_bytes_share)} attributed to tasks`);
  $("headline").textContent = `${fmtN(h.executions)} task executions of ${fmtN(h.tasks)} tasks ` +
    `(${fmtText(h.source_format)}); ${ioText}; task CPU ` +
    `${(h.cpu || {}).task_cpu_s === null ? "not captured" : fmtS((h.cpu || {}).task_cpu_s)}.`;
  // problems that change the numbers below, before any table (as in report.md)
  for (const p of h.problems || []) {
    const li = el("li", p); li.className = "warn"; $("headline-problems").appendChild(li);
  }
  for (const [k, v] of DATA.facts) {
    const tr = el("tr"); tr.appendChild(el("td", k)); tr.appendChild(el("td", v)); $("facts").appendChild(tr);
  }

  // ---------- canvas helpers ----------
  function niceStep(span, target) {
    const raw = span / Math.max(1, target), p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function fmtMs(ms, step) {
    if (step >= 1000) return (ms / 1000).toFixed(step >= 10000 ? 0 : 1) + " s";
    if (step >= 1) return ms.toFixed(0) + " ms";
    return ms.toFixed(Math.min(6, Math.ceil(-Math.log10(step)))) + " ms";
  }

  // ---------- timeline ----------
  const TL = DATA.timeline, T = TL.tasks || {}, IO = TL.io || {};
  const prefixes = DATA.prefixes;
  const LANE_H = 22, AXIS_H = 24, LABEL_W = 330;
  const nTasks = (T.lane || []).length, nIO = (IO.lane || []).length;
  const byLane = TL.lanes.map(() => []);
  for (let i = 0; i < nTasks; i++) byLane[T.lane[i]].push(i);
  for (const list of byLane) list.sort((a, b) => T.start[a] - T.start[b]);
  const ioByLane = TL.lanes.map(() => []);
  for (let i = 0; i < nIO; i++) ioByLane[IO.lane[i]].push(i);
  const view = { a: 0, b: Math.max(TL.span_ms, 1e-3) };
  const canvas = $("timeline");
  $("timeline-notes").textContent = (TL.notes || []).join("; ");

  function drawTimeline() {
    const H = AXIS_H + Math.max(1, TL.lanes.length) * LANE_H + 4;
    const { ctx, w } = setupCanvas(canvas, H);
    const plotW = w - LABEL_W - 8, span = view.b - view.a;
    const x = (ms) => LABEL_W + ((ms - view.a) / span) * plotW;
    ctx.clearRect(0, 0, w, H);
    ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    const step = niceStep(span, plotW / 110);
    ctx.fillStyle = "#666"; ctx.strokeStyle = "#eee";
    for (let t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      const px = x(t);
      ctx.beginPath(); ctx.moveTo(px, AXIS_H - 4); ctx.lineTo(px, H); ctx.stroke();
      if (px < w - 60) ctx.fillText(fmtMs(t, step), px + 2, AXIS_H / 2);
    }
    let drawn = 0;
    TL.lanes.forEach((label, lane) => {
      const y = AXIS_H + lane * LANE_H;
      ctx.fillStyle = lane % 2 ? "#fafafa" : "#fff";
      ctx.fillRect(LABEL_W, y, plotW, LANE_H);
      ctx.save(); ctx.beginPath(); ctx.rect(LABEL_W, y, plotW, LANE_H); ctx.clip();
      for (const i of byLane[lane]) {
        const s = T.start[i], e = s + T.dur[i];
        if (e < view.a || s > view.b) continue;
        const x0 = x(s), x1 = x(e);
        ctx.fillStyle = (prefixes[T.prefix[i]] || {}).colour || "#c8c8c8";
        ctx.fillRect(x0, y + 2, Math.max(1, x1 - x0 - (x1 - x0 > 3 ? 1 : 0)), LANE_H - 4);
        drawn++;
      }
      for (const i of ioByLane[lane]) {
        const s = IO.start[i], e = s + IO.dur[i];
        if (e < view.a || s > view.b) continue;
        const x0 = x(s), x1 = x(e);
        ctx.fillStyle = IO.op[i] ? DATA.io_colours.write : DATA.io_colours.read;
        ctx.fillRect(x0, y + LANE_H - (IO.op[i] ? 6 : 9), Math.max(1, x1 - x0), 3);
      }
      ctx.restore();
      ctx.fillStyle = "#1d1d1f";
      ctx.save(); ctx.beginPath(); ctx.rect(0, y, LABEL_W - 6, LANE_H); ctx.clip();
      ctx.fillText(label, 4, y + LANE_H / 2); ctx.restore();
    });
    canvas.dataset.drawn = String(drawn);
    canvas.dataset.lanes = String(TL.lanes.length);
    $("view-range").textContent = `${fmtMs(view.a, step)} – ${fmtMs(view.b, step)} of ${fmtS(TL.span_ms / 1000)}`;
  }

  function plotGeom() {
    const w = canvas.clientWidth; return { plotW: w - LABEL_W - 8, span: view.b - view.a };
  }
  function timeAt(px) { const g = plotGeom(); return view.a + ((px - LABEL_W) / g.plotW) * g.span; }
  function zoom(factor, centerMs) {
    const full = Math.max(TL.span_ms, 1e-3);
    let a = centerMs - (centerMs - view.a) * factor, b = centerMs + (view.b - centerMs) * factor;
    if (b - a > full) { a = 0; b = full; }
    if (b - a < 1e-4) return;
    if (a < 0) { b -= a; a = 0; }
    if (b > full) { a -= b - full; b = full; }
    view.a = Math.max(0, a); view.b = b; drawTimeline();
  }
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoom(ev.deltaY > 0 ? 1.25 : 0.8, timeAt(ev.clientX - r.left));
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, a: view.a, b: view.b }; canvas.style.cursor = "grabbing"; });
  window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = "grab"; });
  canvas.addEventListener("dblclick", () => { view.a = 0; view.b = Math.max(TL.span_ms, 1e-3); drawTimeline(); });
  $("zoom-in").addEventListener("click", () => zoom(0.5, (view.a + view.b) / 2));
  $("zoom-out").addEventListener("click", () => zoom(2, (view.a + view.b) / 2));
  $("zoom-reset").addEventListener("click", () => { view.a = 0; view.b = Math.max(TL.span_ms, 1e-3); drawTimeline(); });

  const tip = $("tooltip");
  function hit(lane, t, pxPerMs) {
    const slack = 2 / pxPerMs;
    for (const i of ioByLane[lane] || []) {
      if (IO.start[i] - slack <= t && t <= IO.start[i] + IO.dur[i] + slack) return { io: i };
    }
    return null;
  }
  function taskAt(lane, t, pxPerMs) {
    const list = byLane[lane] || [], slack = 1 / pxPerMs;
    let lo = 0, hi = list.length - 1, best = -1;
    while (lo <= hi) { const m = (lo + hi) >> 1; if (T.start[list[m]] <= t + slack) { best = m; lo = m + 1; } else hi = m - 1; }
    for (let k = best; k >= 0 && k > best - 50; k--) {
      const i = list[k];
      if (T.start[i] - slack <= t && t <= T.start[i] + T.dur[i] + slack) return i;
    }
    return -1;
  }
  function showTip(ev, lines) {
    tip.replaceChildren();
    lines.forEach((line, n) => { const d = el("div", line); if (n === 0) d.style.fontWeight = "bold"; tip.appendChild(d); });
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 530) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }
  canvas.addEventListener("mousemove", (ev) => {
    const r = canvas.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
    if (drag) {
      const g = plotGeom(), dms = ((ev.clientX - drag.x) / g.plotW) * (drag.b - drag.a);
      const full = Math.max(TL.span_ms, 1e-3), width = drag.b - drag.a;
      view.a = Math.min(Math.max(0, drag.a - dms), full - width); view.b = view.a + width;
      drawTimeline(); return;
    }
    const lane = Math.floor((py - AXIS_H) / LANE_H);
    // the lane's label names the thread by its index; the tooltip adds its id
    const laneText = (l) => TL.lanes[l] + (TL.lane_threads[l] ? ` (thread id ${TL.lane_threads[l]})` : "");
    if (px < LABEL_W || lane < 0 || lane >= TL.lanes.length) { tip.hidden = true; return; }
    const t = timeAt(px), pxPerMs = plotGeom().plotW / (view.b - view.a);
    const yIn = py - AXIS_H - lane * LANE_H;
    const h = yIn > LANE_H - 10 ? hit(lane, t, pxPerMs) : null;
    if (h) {
      const i = h.io;
      showTip(ev, [(IO.op[i] ? "write " : "read ") + (IO.path[i] === null || IO.path[i] === undefined ? "(merged I/O bin)" : TL.paths[IO.path[i]]),
        `${fmtBytes(IO.bytes[i])} in ${fmtN(IO.ops[i])} op(s)`,
        `${IO.start[i].toFixed(3)} ms → ${(IO.start[i] + IO.dur[i]).toFixed(3)} ms (${fmtS(IO.dur[i] / 1000)})`,
        laneText(lane)]);
      return;
    }
    const i = taskAt(lane, t, pxPerMs);
    if (i < 0) { tip.hidden = true; return; }
    const p = prefixes[T.prefix[i]] || {};
    showTip(ev, [T.key[i], `prefix ${fmtText(p.prefix)} · execution ${T.id[i]}`, laneText(lane),
      `${T.start[i].toFixed(3)} ms → ${(T.start[i] + T.dur[i]).toFixed(3)} ms (${fmtS(T.dur[i] / 1000)})`,
      `CPU ${fmtS(T.cpu[i])} · I/O time ${fmtS(T.io[i])}`,
      `read ${fmtBytes(T.rb[i])} · written ${fmtBytes(T.wb[i])}`]);
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });

  const legend = $("legend");
  prefixes.slice(0, 20).forEach((p) => {
    const item = el("span"); const sw = el("span", null, "sw"); sw.style.background = p.colour;
    item.appendChild(sw); item.appendChild(document.createTextNode(p.prefix)); legend.appendChild(item);
  });
  for (const [op, c] of Object.entries(DATA.io_colours)) {
    const item = el("span"); const sw = el("span", null, "sw"); sw.style.background = c;
    item.appendChild(sw); item.appendChild(document.createTextNode("I/O " + op)); legend.appendChild(item);
  }

  // ---------- bar charts ----------
  function hbars(canvas, labels, series, unitFmt) {
    const rowH = 12 * series.length + 8, H = 30 + labels.length * rowH;
    const { ctx, w } = setupCanvas(canvas, Math.max(60, H));
    const LW = 260, plotW = w - LW - 90;
    const max = Math.max(1e-12, ...series.flatMap((s) => s.values.map((v) => v || 0)));
    ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    let drawn = 0;
    series.forEach((s, k) => {
      ctx.fillStyle = s.colour; ctx.fillRect(LW + k * 110, 6, 10, 10);
      ctx.fillStyle = "#333"; ctx.fillText(s.label, LW + k * 110 + 14, 11);
    });
    labels.forEach((label, i) => {
      const y = 26 + i * rowH;
      ctx.fillStyle = "#1d1d1f";
      ctx.save(); ctx.beginPath(); ctx.rect(0, y, LW - 8, rowH); ctx.clip();
      ctx.fillText(label, 4, y + rowH / 2); ctx.restore();
      series.forEach((s, k) => {
        const raw = s.values[i], v = raw || 0, bw = (v / max) * plotW;
        ctx.fillStyle = s.colour; ctx.fillRect(LW, y + 4 + k * 12, Math.max(v > 0 ? 1 : 0, bw), 10);
        // an unmeasured value is labelled as such, not as 0
        ctx.fillStyle = "#444"; ctx.fillText(unitFmt(raw), LW + bw + 4, y + 9 + k * 12);
        drawn++;
      });
    });
    canvas.dataset.drawn = String(drawn);
  }
  const topP = prefixes.slice(0, 20);
  function drawCharts() {
    const known = (k) => topP.some((p) => p[k] !== null && p[k] !== undefined);
    hbars($("prefix-chart"), topP.map((p) => p.prefix), [
      { label: "wall", colour: "#4e79a7", values: topP.map((p) => p.wall_s), key: "wall_s" },
      { label: "CPU", colour: "#f28e2b", values: topP.map((p) => p.cpu_s), key: "cpu_s" },
      { label: "I/O", colour: "#1b1b1b", values: topP.map((p) => p.io_s), key: "io_s" }]
      .filter((s) => known(s.key)), fmtS);
    const W = DATA.workers;
    // a quantity that was not measured is not drawn (a bar of 0 would claim none)
    const measured = (k) => W.some((r) => r[k] !== null && r[k] !== undefined);
    hbars($("budget"), W.map((r) => r.worker), [
      { label: "CPU", colour: "#f28e2b", values: W.map((r) => r.cpu_s), key: "cpu_s" },
      { label: "I/O", colour: "#1b1b1b", values: W.map((r) => r.io_s), key: "io_s" },
      { label: "other", colour: "#4e79a7", values: W.map((r) => r.other_s), key: "other_s" },
      { label: "idle", colour: "#c8c8c8", values: W.map((r) => r.idle_s), key: "idle_s" }]
      .filter((s) => measured(s.key)), fmtS);
  }

  // ---------- tables ----------
  sortableTable($("workers"), [["worker", "worker", "text"], ["threads_label", "threads", "text"],
    ["executions", "executions", "n"], ["thread_s", "thread time", "s"], ["cpu_s", "CPU", "s"],
    ["io_s", "I/O", "s"],
    ["other_s", DATA.workers.some((r) => r.other_includes_io) ? "other (incl. I/O)" : "other", "s"],
    ["idle_s", "idle", "s"], ["busy_share", "busy", "pct"],
    ...(DATA.workers.some((r) => r.coroutines) ? [["coroutine_s", "coroutines (event loop)", "s"]] : []),
    ["waiting_s", "waiting for a thread", "s"],
    ...(DATA.workers.some((r) => r.paused_s) ? [["paused_s", "waiting while the worker was paused (memory)", "s"]] : []),
    ["free_thread_s", "waiting with a thread free (event loop)", "s"],
    ["transfer_s", "receiving inputs", "s"],
    ["read_back_s", "reading spilled inputs back", "s"]], DATA.workers, "worker", false);
  $("spans-section").hidden = !DATA.spans.length && !Object.keys(DATA.groups).length;
  sortableTable($("spans"), [["span", "span", "text"], ["executions", "runs", "n"],
    ["wall_s", "wall", "s"], ["cpu_s", "CPU", "s"], ["dask_thread_cpu_s", "Dask CPU", "s"],
    ["io_time_s", "I/O time", "s"], ["read_bytes", "read", "bytes"], ["write_bytes", "written", "bytes"],
    ["wait_thread_s", "waiting for a thread", "s"], ["transfer_s", "receiving inputs", "s"],
    ["spilled_bytes", "spilled", "bytes"]], DATA.spans, null);
  Object.keys(DATA.groups).sort().forEach((key) => {
    const box = el("div"); $("groups").appendChild(el("h3", `By annotation ${key}`)); $("groups").appendChild(box);
    sortableTable(box, [["value", key, "text"], ["executions", "runs", "n"], ["wall_s", "wall", "s"],
      ["cpu_s", "CPU", "s"], ["io_time_s", "I/O time", "s"], ["read_bytes", "read", "bytes"],
      ["write_bytes", "written", "bytes"]], DATA.groups[key], "wall_s");
  });
  $("spill-section").hidden = !DATA.spill.length;
  sortableTable($("spill"), [["key", "key", "text"], ["spilled_bytes", "written", "bytes"],
    ["spill_writes", "times", "n"], ["spill_write_s", "write time", "s"],
    ["unspilled_bytes", "read back", "bytes"], ["unspill_read_s", "read time", "s"],
    ["input_read_back_s", "waited for spilled inputs", "s"]], DATA.spill, "spilled_bytes");
  $("shuffles-section").hidden = !DATA.shuffles.length;
  sortableTable($("shuffles"), [["shuffle_id", "shuffle", "text"], ["runs", "runs", "n"],
    ["workers", "workers", "n"], ["written_bytes", "written", "bytes"], ["write_s", "write time", "s"],
    ["owner", "writes given to", "text"], ["read_bytes", "read back", "bytes"],
    ["read_s", "read time", "s"], ["span_s", "span", "s"],
    ["transfer_executions", "transfers", "n"], ["barrier_executions", "barriers", "n"],
    ["unpack_executions", "unpacks", "n"]], DATA.shuffles, "written_bytes");
  $("arrivals-section").hidden = !DATA.arrivals;
  if (DATA.arrivals) {
    const a = DATA.arrivals;
    $("arrivals-text").textContent = `${fmtN(a.keys)} keys in ${fmtN(a.steps)} steps from ` +
      `${fmtN(a.senders.length)} senders; ${a.sentence}.`;
    sortableTable($("arrival-senders"), [["sender", "sender", "text"], ["keys", "keys", "n"],
      ["nbytes", "bytes", "bytes"], ["send_s", "in its scatter calls", "s"],
      ["last_in_steps", "last in steps", "n"]], a.senders, "keys");
    sortableTable($("arrival-steps"), [["step", "step", "text"], ["keys", "keys", "n"],
      ["senders", "senders", "n"], ["nbytes", "bytes", "bytes"], ["spread_s", "spread", "s"],
      ["last_rank", "last rank", "n"], ["analytics_tasks", "analytics tasks", "n"],
      ["wait_external_s", "their wait on inputs", "s"], ["lag_s", "lag", "s"]], a.per_step, null);
  }
  sortableTable($("prefixes"), [["prefix", "prefix", "text"], ["executions", "runs", "n"],
    ["wall_s", "wall", "s"], ["mean_s", "mean", "s"], ["max_s", "max", "s"], ["cpu_s", "CPU", "s"],
    ["other_s", "other (sleep, locks, GIL, waits)", "s"], ["io_s", "I/O time", "s"], ["read_bytes", "read", "bytes"], ["write_bytes", "written", "bytes"],
    ["read_ops", "reads", "n"], ["read_mean_bytes", "mean read", "bytes"],
    ["write_ops", "writes", "n"], ["write_mean_bytes", "mean write", "bytes"]],
    prefixes, "wall_s");
  $("tasks-note").textContent = `The heaviest ${DATA.top_tasks.length} of ${fmtN(h.executions)} executions ` +
    "(top 100 by wall time, by CPU and by I/O bytes); click a column to sort.";
  sortableTable($("top-tasks"), [["key", "key", "text"], ["prefix", "prefix", "text"],
    ["worker", "worker", "text"], ["duration_s", "wall", "s"], ["awaiting_s", "awaiting", "s"],
    ["cpu_s", "CPU", "s"],
    ["io_time_s", "I/O time", "s"], ["read_bytes", "read", "bytes"], ["write_bytes", "written", "bytes"],
    ["attribution", "attribution", "text"], ["status", "status", "text"]], DATA.top_tasks, "duration_s");
  $("files-note").textContent = `The busiest ${DATA.files.length} of ${fmtN(DATA.file_total)} files by bytes read + written; "outside tasks" is I/O no task explains; "times read" is the bytes read ÷ the distinct bytes read (the union of the reads' byte ranges in DXT), "-" where DXT did not trace every read of the file; click a column to sort.`;
  sortableTable($("files"), [["path", "path", "text"], ["read_bytes", "read", "bytes"],
    ["write_bytes", "written", "bytes"], ["outside_bytes", "outside tasks", "bytes"], ["ops", "ops", "n"],
    ["read_ops", "reads", "n"], ["read_mean_bytes", "mean read", "bytes"],
    ["write_ops", "writes", "n"], ["write_mean_bytes", "mean write", "bytes"],
    ["read_times", "times read", "times"], ["io_s", "I/O time", "s"], ["tasks", "tasks", "n"], ["name", "name", "text"]],
    DATA.files.map((f) => ({ ...f, name: f.doubtful_name ? "doubtful (see unattributed)" : "" })), null);

  const fsel = $("function-prefix");
  const withFunctions = new Set(DATA.functions.map((f) => f.prefix));
  const fprefixes = prefixes.map((p) => p.prefix).filter((p) => withFunctions.has(p));
  fprefixes.forEach((p) => { const o = el("option", p); o.value = p; fsel.appendChild(o); });
  function drawFunctions() {
    const rows = DATA.functions.filter((f) => f.prefix === fsel.value).map((f) => (
      { ...f, function: f.module ? f.module + "." + f.name : f.name, where: `${fmtText(f.file)}:${fmtText(f.line)}` }));
    // the stack sampler counts samples, not calls
    const counted = [...new Set(rows.map((f) => f.ncall_kind || "calls"))].sort().join(" / ") || "calls";
    sortableTable($("functions"), [["function", "function", "text"], ["where", "where", "text"],
      ["tsub_s", "exclusive", "s"], ["ttot_s", "inclusive", "s"], ["ncall", counted, "n"],
      ["executions", "executions", "n"], ["clock", "clock", "text"]], rows, "tsub_s");
  }
  fsel.addEventListener("change", drawFunctions);
  drawFunctions();

  const stdio = (io.stdio || {}).bytes;
  $("io-share").textContent = io.captured === false
    ? "I/O: not captured (no Darshan logs): read, written and I/O time are unknown, not zero."
    : `${stdio ? `I/O in DXT and C stdio (${fmtBytes(stdio)} counted per file, untraced)` : "I/O in DXT"}: ${fmtBytes((io.total || {}).bytes)} in ${fmtN((io.total || {}).ops)} operations; ` +
    `attributed to task executions: ${fmtBytes(((io.by_destination || {}).tasks || io.attributed || {}).bytes)} (${fmtPct(io.attributed_bytes_share)}).`;
  sortableTable($("unattributed"), [["reason", "reason", "text"], ["role", "process role", "text"],
    ["thread_kind", "thread", "text"], ["bytes", "bytes", "bytes"], ["ops", "ops", "n"],
    ["io_s", "I/O time", "s"], ["files", "files", "n"], ["processes", "processes", "n"]],
    DATA.unattributed, "bytes");
  sortableTable($("cpu-coverage"), [["worker", "worker", "text"], ["executions", "executions", "n"],
    ["unmeasured", "without CPU", "n"], ["unmeasured_wall_s", "their wall time", "s"],
    ["cpu_s", "task CPU", "s"], ["wall_s", "task wall", "s"]], DATA.cpu_coverage, "worker", false);

  // ---------- data quality ----------
  const Q = DATA.quality, ql = $("quality-list");
  function item(text, warn) { ql.appendChild(el("li", text, warn ? "warn" : "")); }
  item(`worst clock uncertainty: ${FMT.ns(Q.worst_uncertainty_ns)}`, false);
  item("DXT segments by attribution method: " + (Object.entries(Q.segments_by_method).map(([k, v]) => `${k}: ${fmtN(v)}`).join(", ") || "none"), false);
  const given = Object.entries(Q.attributed_by_method || {});
  if (given.length) item("bytes attributed to tasks by method: " + given.map(([k, v]) => `${k}: ${FMT.bytes(v.bytes)}`).join(", "), false);
  Q.statuses.filter((s) => s.status !== "ok").forEach((s) => item(`executions with status ${s.status}: ${fmtN(s.executions)}`, true));
  (Q.notes || []).forEach((h) => item(h, false));
  (Q.matching || []).forEach((m) => item(m.text, m.warn));
  Q.warnings.forEach((w) => item("warning: " + w, true));
  Q.rejects.forEach((r) => item(`rejected ${fmtN(r.count)} record(s) from ${fmtText(r.source)} ${r.file || ""}: ${fmtText(r.reason)}`, true));
  Q.not_closed.forEach((p) => item(`process ${fmtText(p.role)} ${fmtText(p.host)}:${fmtText(p.pid)} did not close cleanly`, true));
  Q.missing_tables.forEach((t) => item(`table ${t} missing from the output folder`, true));
  if (!Q.warnings.length && !Q.rejects.length && !Q.not_closed.length) item("no warnings, no rejected records, every process closed cleanly", false);
  sortableTable($("clocks"), [["host", "host", "text"], ["pid", "pid", "text"], ["domain", "clock", "text"],
    ["offset_ns", "offset", "ns"], ["uncertainty_ns", "± uncertainty", "ns"], ["method", "method", "text"],
    ["samples", "samples", "n"]], Q.clocks, null);

  function drawAll() { drawTimeline(); drawCharts(); }
  window.addEventListener("resize", drawAll);
  drawAll();
  document.body.dataset.ready = "1";
})();
