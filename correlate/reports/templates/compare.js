"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("compare-data").textContent);
  const $ = (id) => document.getElementById(id);

  const { none, fmtBytes, fmtS, fmtN, fmtText, el, setupCanvas } = REPORT_COMMON;
  const sign = (v) => (v > 0 ? "+" : "");
  const FMT = {
    n: fmtN,
    s: fmtS,
    ds: (s) => (none(s) ? "-" : sign(s) + fmtS(s)),
    dpct: (x) => (none(x) ? "new" : sign(x) + (x * 100).toFixed(0) + "%"),
    dbytes: (n) => (none(n) ? "-" : (n > 0 ? "+" : "") + fmtBytes(n)),
    bool: (b) => (b ? "yes" : "no"),
    text: fmtText,
  };
  // ranked rows: "rank" starts ascending; rows changed beyond noise are highlighted
  const sortableTable = (container, columns, rows) =>
    REPORT_COMMON.sortableTable(container, columns, rows, FMT, {
      key: "rank", desc: false, ascending: ["rank"], empty: "nothing recorded in either run" });

  // ---------- header, setup, plain-language changes ----------
  const names = $("names");
  names.append(el("code", DATA.names[0]), " → ", el("code", DATA.names[1]));
  if (!DATA.setup.length) $("setup").appendChild(el("li", "none: same command, workers, threads, versions, environment and collectors"));
  for (const s of DATA.setup) $("setup").appendChild(el("li", s, "warn"));
  $("totals").textContent = DATA.totals;
  if (!DATA.explained.length && !DATA.machine) $("changes").appendChild(el("li", DATA.noise));
  // the rows whose counts moved (facts) first, then the machine's line, then the others
  DATA.explained.forEach((e, i) => {
    if (DATA.machine && i === DATA.machine_at) $("changes").appendChild(el("li", DATA.machine, "warn"));
    const li = el("li");
    li.append(el("code", e.item), ": " + e.why);
    $("changes").appendChild(li);
  });
  if (DATA.machine && DATA.machine_at >= DATA.explained.length) $("changes").appendChild(el("li", DATA.machine, "warn"));
  // the findings that appeared, went away or changed cost (null: outputs made before findings)
  if (DATA.findings) {
    $("findings-head").hidden = false;
    for (const line of DATA.findings) $("findings").appendChild(el("li", line));
  }

  // ---------- signed bar chart of the per-prefix change ----------
  function drawChart() {
    const canvas = $("change-chart"), labels = DATA.chart.labels, values = DATA.chart.values;
    const rowH = 20, H = Math.max(60, 30 + labels.length * rowH);
    const { ctx, w } = setupCanvas(canvas, H);
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
