"""Writing a comparison: ``compare_<dim>.parquet``, ``compare.md`` with a PNG of the per-prefix
changes, and the terminal view. Deterministic (sorted rows, fixed figure metadata)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from rich.table import Table
from rich.text import Text

from correlate.console import console


def _figure(d: pl.DataFrame, path: Path, top: int = 15) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = d.head(top)
    labels = [str(x) for x in rows["item"].to_list()][::-1]
    values = rows["wall_s_delta"].to_list()[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.35 * max(len(labels), 2) + 1), dpi=100)
    ax.barh(labels, values, color=["#c0392b" if v > 0 else "#27ae60" for v in values])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("change in wall time (s), after − before")
    ax.set_title("Per-prefix change in task wall time")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def _md_table(d: pl.DataFrame, top: int) -> list[str]:
    out = ["| rank | item | runs before → after | wall s before → after | Δ wall s | "
           "Δ cpu s | Δ io s | Δ bytes | significant |", "|---|---|---|---|---|---|---|---|---|"]
    for r in d.head(top).iter_rows(named=True):
        dbytes = r.get("read_bytes_delta", 0) + r.get("write_bytes_delta", 0)
        item = str(r["item"]).replace("|", "\\|").replace("<", "&lt;")
        out.append(
            f"| {r['rank']} | `{item}` | {r['executions_before']} → {r['executions_after']} | "
            f"{r['wall_s_before']:.3f} → {r['wall_s_after']:.3f} | {r['wall_s_delta']:+.3f} | "
            f"{r.get('cpu_s_delta', 0.0):+.3f} | {r.get('io_time_s_delta', 0.0):+.3f} | "
            f"{dbytes:+,.0f} | {'yes' if r['significant'] else 'no'} |")
    return out


def write_comparison(out: Path, diffs: dict[str, pl.DataFrame], *, setup: list[str],
                     lines: list[str], by: str, names: tuple[str, str], top: int = 20) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for dim, d in diffs.items():
        d.write_parquet(out / f"compare_{dim}.parquet", statistics=False)
    _figure(diffs["prefix"], out / "figures" / "compare.png")
    md = [f"# Comparison: `{names[0]}` → `{names[1]}`", ""]
    md += ["## Setup differences", ""]
    md += [f"- {s}" for s in setup] or ["- none: same workers, threads, versions and collectors"]
    md += ["", "## What changed", ""]
    md += [f"- {line}" for line in lines] or ["- no change beyond noise (±10% and 3% of the "
                                              "total wall time)"]
    md += ["", "![per-prefix change](figures/compare.png)", ""]
    for dim, d in diffs.items():
        md += [f"## By {dim}", "", *_md_table(d, top), ""]
    (out / "compare.md").write_text("\n".join(md))


def print_comparison(d: pl.DataFrame, *, setup: list[str], lines: list[str], top: int,
                     out: Path) -> None:
    c = console()
    for s in setup:
        c.print(Text(f"setup differs: {s}", style="yellow"))
    if not lines:
        c.print("no change beyond noise")
    for line in lines:
        c.print(Text(line))
    t = Table(show_edge=False, pad_edge=False)
    for col in ("item", "runs", "wall before", "wall after", "Δ wall s"):
        t.add_column(col, justify="left" if col == "item" else "right", overflow="fold")
    for r in d.head(top).iter_rows(named=True):
        t.add_row(Text(str(r["item"])), f"{r['executions_before']}→{r['executions_after']}",
                  f"{r['wall_s_before']:.3f}", f"{r['wall_s_after']:.3f}",
                  f"{r['wall_s_delta']:+.3f}")
    c.print(t)
    c.print(f"comparison written to {out}")
