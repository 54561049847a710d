"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no websockets,
no network): start headless Chromium, open one page, collect console errors, evaluate
expressions and take screenshots. Used by the browser test of report.html.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "--hide-scrollbars", "--mute-audio")


class Browser:
    """One headless Chromium with one page target; a context manager."""

    def __init__(self, profile: Path, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next = 0
        self._buf = b""
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()

        def wire() -> None:  # runs in the child before exec
            os.dup2(cmd_r, 3)
            os.dup2(res_w, 4)

        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(res_w)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.send(domain, session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001  (closing a browser that is already gone)
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._res_r)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._res_r], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._res_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = False) -> dict[str, Any]:
        """Send a command and wait for its result (events seen meanwhile are kept)."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        """Wait for an event (or return one already received)."""
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        deadline = time.monotonic() + self.timeout
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    def open(self, url: str, *, width: int = 1280, height: int = 1600) -> None:
        self.send("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True)
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        return base64.b64decode(data)

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far; dialogs
        (alert/confirm) count too."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Page.javascriptDialogOpening":
                out.append(f"dialog: {p.get('message')}")
        return out
