"""The self-contained HTML pages (report.html, compare.html): one template environment, one
base page (``templates/base.html``: head, style, the page's data as inline JSON, the shared
script), each page a template extending it with its own body and script."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).parent / "templates"


@cache
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                       keep_trailing_newline=True)


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf → None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def embed_json(data: Any) -> str:
    """JSON for an inline ``<script>``: sorted keys, markup characters escaped."""
    text = json.dumps(_clean(data), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def render_page(name: str, *, title: str, data: Any, **server: Any) -> str:
    """Page ``name`` (``report`` or ``compare``): ``templates/<name>.html`` with ``data``
    embedded as ``<name>-data`` and ``templates/<name>.js`` as its script; ``server``: values
    the template renders itself (readable before any script runs)."""
    return _environment().get_template(f"{name}.html").render(
        **server, title=title, data_id=f"{name}-data", data_json=embed_json(data),
        script=(TEMPLATES / f"{name}.js").read_text(encoding="utf-8"),
        style=(TEMPLATES / "report.css").read_text(encoding="utf-8"))
