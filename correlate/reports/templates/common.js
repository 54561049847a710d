"use strict";
// Shared by report.html and compare.html (included ahead of each page's own script): number
// formatting, element building, sortable tables, high-DPI canvases. Run-provided strings are
// always set with textContent, never as markup.
const REPORT_COMMON = (function () {
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
  const fmtN = (n) => (none(n) ? "-" : Number.isInteger(n) ? n.toLocaleString("en-US") : Number(n).toFixed(1));
  const fmtText = (x) => (none(x) ? "-" : String(x));

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (!none(text)) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  // columns: [key, label, kind], kind a formatter in fmt; "text" columns sort as strings and
  // start ascending when clicked, as do the keys in `ascending`; rows with `significant` are
  // highlighted. A table of more than `shown` rows shows its first `shown` (in the current
  // order) and a button to show them all: long tables stay collapsed. Returns the table.
  function sortableTable(container, columns, rows, fmt,
                         { key = null, desc = true, ascending = [], empty = "none recorded",
                           shown = 15 } = {}) {
    const state = { key, desc, all: rows.length <= shown };
    const table = el("table"), thead = el("thead"), tbody = el("tbody"), hr = el("tr");
    columns.forEach(([k, label, kind]) => {
      const th = el("th", label, kind === "text" ? "text" : "");
      th.dataset.key = k;
      th.addEventListener("click", () => {
        state.desc = state.key === k ? !state.desc : kind !== "text" && !ascending.includes(k);
        state.key = k; render();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr); table.appendChild(thead); table.appendChild(tbody);
    const numeric = (v) => typeof v === "number" || typeof v === "boolean";
    function cmp(a, b) {
      const x = a[state.key], y = b[state.key];
      if (x === y) return 0;
      if (none(x)) return 1;
      if (none(y)) return -1;
      const r = numeric(x) && numeric(y) ? Number(x) - Number(y) : String(x).localeCompare(String(y));
      return state.desc ? -r : r;
    }
    const more = el("button", null, "more-rows");
    more.type = "button";
    more.addEventListener("click", () => { state.all = !state.all; render(); });
    function render() {
      tbody.replaceChildren();
      const ordered = state.key ? rows.slice().sort(cmp) : rows;
      for (const r of state.all ? ordered : ordered.slice(0, shown)) {
        const tr = el("tr", null, r.significant ? "sig" : "");
        for (const [k, , kind] of columns) tr.appendChild(el("td", fmt[kind](r[k]), kind === "text" ? "text" : ""));
        tbody.appendChild(tr);
      }
      for (const th of hr.children) {
        th.classList.toggle("sorted-asc", th.dataset.key === state.key && !state.desc);
        th.classList.toggle("sorted-desc", th.dataset.key === state.key && state.desc);
      }
      more.textContent = state.all ? `show the first ${shown} rows`
        : `show all ${rows.length.toLocaleString("en-US")} rows`;
    }
    render();
    container.replaceChildren(table);
    if (rows.length > shown) container.appendChild(more);
    if (!rows.length) container.appendChild(el("p", empty, "hint"));
    return table;
  }

  // a canvas sized to its CSS width and the given CSS height, drawn in CSS pixels
  function setupCanvas(canvas, cssHeight) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(300, canvas.clientWidth || canvas.parentElement.clientWidth || 800);
    canvas.style.height = cssHeight + "px";
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(cssHeight * dpr);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { ctx, w, h: cssHeight };
  }

  return { none, fmtBytes, fmtS, fmtN, fmtText, el, sortableTable, setupCanvas };
})();
