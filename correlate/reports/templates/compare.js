"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("compare-data").textContent);
  const $ = (id) => document.getElementById(id);

  // ---------- formatting (numbers only; run strings are always set with textContent) -------
  const none = (v) => v === null || v === undefined;
  function fmtBytes(n) {
    if (none(n)) return "-";
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let v = Math.abs(Number(n)), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (n < 0 ? "−" : "") + (i === 0 ? v.toFixed(0) + " B" : v.toFixed(1) + " " + units[i]);
  }
  function fmtS(s) {
    if (none(s)) return "-";
    const a = Math.abs(s);
    if (a === 0) return "0 s";
    if (a < 1e-3) return (s * 1e6).toFixed(1) + " µs";
    if (a < 1) return (s * 1e3).toFixed(1) + " ms";
    return s.toFixed(3) + " s";
  }
  const sign = (v) => (v > 0 ? "+" : "");
  const FMT = {
    n: (n) => (none(n) ? "-" : Number.isInteger(n) ? n.toLocaleString("en-US") : Number(n).toFixed(1)),
    s: fmtS,
    ds: (s) => (none(s) ? "-" : sign(s) + fmtS(s)),
    dpct: (x) => (none(x) ? "new" : sign(x) + (x * 100).toFixed(0) + "%"),
    dbytes: (n) => (none(n) ? "-" : (n > 0 ? "+" : "") + fmtBytes(n)),
    bool: (b) => (b ? "yes" : "no"),
    text: (x) => (none(x) ? "-" : String(x)),
  };

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (!none(text)) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  // ---------- sortable tables ----------
  // columns: [key, label, kind]; "text" columns sort as strings; significant rows highlighted.
  function sortableTable(container, columns, rows) {
    const state = { key: "rank", desc: false };
    const table = el("table"), thead = el("thead"), tbody = el("tbody"), hr = el("tr");
    columns.forEach(([key, label, kind]) => {
      const th = el("th", label, kind === "text" ? "text" : "");
      th.dataset.key = key;
      th.addEventListener("click", () => {
        state.desc = state.key === key ? !state.desc : kind !== "text" && key !== "rank";
        state.key = key; render();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr); table.appendChild(thead); table.appendChild(tbody);
    function cmp(a, b) {
      const x = a[state.key], y = b[state.key];
      if (x === y) return 0;
      if (none(x)) return 1;
      if (none(y)) return -1;
      const r = (typeof x === "string" || typeof y === "string") ? String(x).localeCompare(String(y))
        : Number(x) - Number(y);
      return state.desc ? -r : r;
    }
    function render() {
      tbody.replaceChildren();
      for (const r of rows.slice().sort(cmp)) {
        const tr = el("tr", null, r.significant ? "sig" : "");
        for (const [key, , kind] of columns) tr.appendChild(el("td", FMT[kind](r[key]), kind === "text" ? "text" : ""));
        tbody.appendChild(tr);
      }
      for (const th of hr.children) {
        th.classList.toggle("sorted-asc", th.dataset.key === state.key && !state.desc);
        th.classList.toggle("sorted-desc", th.dataset.key === state.key && state.desc);
      }
    }
    render();
    container.replaceChildren(table);
    if (!rows.length) container.appendChild(el("p", "nothing recorded in either run", "hint"));
  }

  // ---------- header, setup, plain-language changes ----------
  const names = $("names");
  names.append(el("code", DATA.names[0]), " → ", el("code", DATA.names[1]));
  if (!DATA.setup.length) $("setup").appendChild(el("li", "none: same command, workers, threads, versions, environment and collectors"));
  for (const s of DATA.setup) $("setup").appendChild(el("li", s, "warn"));
  $("totals").textContent = DATA.totals;
  if (!DATA.explained.length) $("changes").appendChild(el("li", DATA.noise));
  for (const e of DATA.explained) {
    const li = el("li");
    li.append(el("code", e.item), ": " + e.why);
    $("changes").appendChild(li);
  }

  // ---------- signed bar chart of the per-prefix change ----------
  function drawChart() {
    const canvas = $("change-chart"), labels = DATA.chart.labels, values = DATA.chart.values;
    const rowH = 20, H = Math.max(60, 30 + labels.length * rowH);
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(300, canvas.clientWidth || canvas.parentElement.clientWidth || 800);
    canvas.style.height = H + "px";
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(H * dpr);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, H);
    ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    const LW = 260, plotW = w - LW - 90;
    const max = Math.max(1e-12, ...values.map((v) => Math.abs(v || 0)));
    const zero = LW + plotW / 2, scale = (plotW / 2 - 4) / max;
    ctx.strokeStyle = "#333"; ctx.beginPath(); ctx.moveTo(zero, 16); ctx.lineTo(zero, H - 4); ctx.stroke();
    let drawn = 0;
    labels.forEach((label, i) => {
      const y = 20 + i * rowH, v = values[i] || 0, bw = v * scale;
      ctx.fillStyle = "#1d1d1f";
      ctx.save(); ctx.beginPath(); ctx.rect(0, y, LW - 8, rowH); ctx.clip();
      ctx.fillText(label, 4, y + rowH / 2); ctx.restore();
      ctx.fillStyle = v > 0 ? "#c0392b" : "#27ae60";
      ctx.fillRect(Math.min(zero, zero + bw), y + 4, Math.max(v ? 1 : 0, Math.abs(bw)), rowH - 8);
      ctx.fillStyle = "#444";
      const tx = v >= 0 ? zero + bw + 4 : zero + bw - 4;
      ctx.textAlign = v >= 0 ? "left" : "right";
      ctx.fillText(FMT.ds(v), tx, y + rowH / 2);
      ctx.textAlign = "left";
      drawn++;
    });
    canvas.dataset.drawn = String(drawn);
  }

  // ---------- tables ----------
  for (const [dim, d] of Object.entries(DATA.dimensions)) {
    $(dim + "-note").textContent = (d.total > d.rows.length
      ? `The ${d.rows.length} largest changes of ${d.total}. ` : `${d.total} rows. `) +
      DATA.notes[dim] + " Highlighted rows changed beyond noise; click a column to sort.";
    sortableTable($(dim + "-table"), d.columns, d.rows);
  }

  window.addEventListener("resize", drawChart);
  drawChart();
  document.body.dataset.ready = "1";
})();
