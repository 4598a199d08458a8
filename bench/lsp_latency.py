"""`tlc lsp` as an editor sees it: time to first diagnostics, and to diagnostics after an edit.

    python bench/lsp_latency.py [--file examples/gpt.nml] [--edits 30] [--rounds 5]

Each round starts a fresh server (`python -m tensorloom.tools.tlc lsp`, stdio) and speaks
the protocol to it as a client does, timing with perf_counter on this side of the pipe:

    start        process start -> the `initialize` response
    open         `didOpen` -> the first `publishDiagnostics` (the whole `tlc check` of the file)
    first        process start -> the first `publishDiagnostics` (what a user waits for)
    re-check     `didChange` (one character of a config value, 11 <-> 12 alternately, so no
                 edit repeats the text before it) -> its `publishDiagnostics`
    hints        after each re-check, `textDocument/inlayHint` over the file -> its response
    tokens       after each re-check, `textDocument/semanticTokens/full` -> its response

Medians over rounds (start, open, first) and over every edit of every round (re-check,
hints, tokens), with the 90th percentile; the load average before and after is printed,
since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
CONFIG_VALUE = re.compile(r"^(\s+n_layer\s*=\s*)(\d+)", re.M)


class Client:
    """A minimal LSP client over a server's stdin and stdout."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tensorloom.tools.tlc", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                chunk = stream.read(1)
                if not chunk:
                    return
                header += chunk
            length = int(re.search(rb"Content-Length: (\d+)", header).group(1))  # type: ignore[union-attr]
            self.messages.put(json.loads(stream.read(length)))

    def send(self, method: str, params: object, *, request: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            self.next_id += 1
            ident = message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return ident

    def wait(self, *, method: str | None = None, ident: int | None = None) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=120)
            if method is not None and message.get("method") == method:
                return message
            if ident is not None and message.get("id") == ident and "method" not in message:
                return message

    def request(self, method: str, params: object) -> dict[str, Any]:
        return self.wait(ident=self.send(method, params, request=True))

    def close(self) -> None:
        self.request("shutdown", None)
        self.send("exit", None)
        self.process.wait(timeout=30)


def one_round(path: Path, edits: int) -> dict[str, list[float]]:
    """A fresh server: its start-up, first diagnostics, then `edits` re-checks (ms each)."""
    times: dict[str, list[float]] = {
        k: [] for k in ("start", "open", "first", "recheck", "hints", "tokens")
    }
    client = Client()
    uri = path.resolve().as_uri()
    client.request(
        "initialize", {"processId": os.getpid(), "rootUri": ROOT.as_uri(), "capabilities": {}}
    )
    times["start"].append((time.perf_counter() - client.started) * 1000)
    client.send("initialized", {})
    text = path.read_text(encoding="utf-8")
    opened = time.perf_counter()
    item = {"uri": uri, "languageId": "nml", "version": 1, "text": text}
    client.send("textDocument/didOpen", {"textDocument": item})
    client.wait(method="textDocument/publishDiagnostics")
    now = time.perf_counter()
    times["open"].append((now - opened) * 1000)
    times["first"].append((now - client.started) * 1000)
    whole = {
        "start": {"line": 0, "character": 0},
        "end": {"line": len(text.splitlines()), "character": 0},
    }
    for number in range(edits):
        value = 11 + number % 2
        version = CONFIG_VALUE.sub(lambda m, v=value: f"{m.group(1)}{v}", text, count=1)
        changed = time.perf_counter()
        client.send(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": number + 2},
                "contentChanges": [{"text": version}],
            },
        )
        client.wait(method="textDocument/publishDiagnostics")
        times["recheck"].append((time.perf_counter() - changed) * 1000)
        asked = time.perf_counter()
        client.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": whole})
        times["hints"].append((time.perf_counter() - asked) * 1000)
        asked = time.perf_counter()
        client.request("textDocument/semanticTokens/full", {"textDocument": {"uri": uri}})
        times["tokens"].append((time.perf_counter() - asked) * 1000)
    client.close()
    return times


def p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=ROOT / "examples" / "gpt.nml")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    total: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for key, values in one_round(args.file, args.edits).items():
            total.setdefault(key, []).extend(values)
    print(f"\n{args.file.name}: {args.rounds} servers, {args.edits} edits each\n")
    print("| what | median (ms) | p90 (ms) | samples |")
    print("|---|---:|---:|---:|")
    names = {
        "start": "process start -> `initialize` answered",
        "open": "`didOpen` -> first diagnostics",
        "first": "process start -> first diagnostics",
        "recheck": "`didChange` -> diagnostics (re-check after an edit)",
        "hints": "`inlayHint`, whole file, after an edit",
        "tokens": "`semanticTokens/full` after an edit",
    }
    for key, label in names.items():
        values = total[key]
        print(f"| {label} | {statistics.median(values):.0f} | {p90(values):.0f} | {len(values)} |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
