"""The `tlc check` and `tlc compile` cache: an unchanged program's output, replayed.

    $ tlc check train_transformer.tl      # first run: the full check, ~1 s
    $ tlc check train_transformer.tl      # unchanged: replayed from the cache, ~40 ms

One entry per (file, command line), in `<cache>/<check|compile>/<key>.json`:

    {"files": {"/abs/train_transformer.tl": "<sha256>", "/abs/transformer.nml": "<sha256>"},
     "stdout": "net: TransformerBlock ...", "stderr": "warning[TL0411]: ...", "status": 0}

`<cache>` is `$TENSORLOOM_CACHE_DIR`, else `$XDG_CACHE_HOME/tensorloom`, else
`~/.cache/tensorloom`. The key hashes what decides the output besides the
sources: the compiler's version and fingerprint, the Python version, the
command and its options (`check --format json`, `compile --emit nml`), whether
stderr is coloured, the working directory, the path as given, and the root
file's bytes. `files` lists every file the check parsed (the root and every
imported .nml, transitively) with the sha256 of its bytes; a hit needs all of
them unchanged. A missing, unreadable or corrupt entry is a miss, and a cache
directory that cannot be written only means nothing is stored.

The compiler fingerprint is the path, mtime and size of every .py file of the
`tensorloom` package (about 2 ms for its ~80 files), so in an editable install
an edited compiler source never serves a stale result. Hashing their contents
instead costs about 6 ms, a tenth of the budget of a hit; the price of mtimes
is that an edit keeping both the size and the mtime of a file goes unnoticed.
xDSL's version enters through the mtime of its `__init__.py`, which an upgrade
rewrites.

Results with import or file diagnostics (TL06xx: a missing import could
appear later) or an internal error (TL09xx) are not stored.

This module runs before click, xDSL and the compiler load (tools/launcher.py),
so it imports only the lightest parts of the standard library.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable

from tensorloom import __version__

try:  # the built-in sha256 loads in 1 ms; hashlib initialises OpenSSL (5-15 ms)
    from _sha256 import sha256  # type: ignore[import-not-found]  # CPython <= 3.11
except ImportError:
    from hashlib import sha256

UNCACHED_CODE_PREFIXES = ("TL06", "TL09")
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Replay:
    """What one `tlc check` printed, and its exit status.

    A plain class: importing dataclasses would cost a hit about a third of its time.
    """

    __slots__ = ("status", "stderr", "stdout")

    def __init__(self, stdout: str, stderr: str, status: int) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.status = status

    def write(self) -> int:
        """Print it as the check did (diagnostics first); the exit status."""
        sys.stderr.write(self.stderr)
        sys.stdout.write(self.stdout)
        sys.stdout.flush()
        return self.status


def cache_dir() -> str:
    """Where TensorLoom caches things; see the module docstring for the order."""
    explicit = os.environ.get("TENSORLOOM_CACHE_DIR")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tensorloom")


def entry_path(key: str, command: str) -> str:
    return os.path.join(cache_dir(), command.partition(" ")[0], f"{key}.json")


def use_color(fmt: str) -> bool:
    """Text diagnostics are coloured on a terminal, never when NO_COLOR is set."""
    return fmt == "text" and sys.stderr.isatty() and "NO_COLOR" not in os.environ


def display_path(argument: str) -> str:
    """The path as diagnostics show it: what click's `Path(path_type=Path)` makes of it."""
    from pathlib import PurePath

    return str(PurePath(argument))


def lookup(path: str, command: str) -> Replay | None:
    """The cached output of `tlc <command> path`, if every file it read is unchanged.

    `command` is the command and the options that shape its output, in a fixed
    order: `check --format text`, `compile --emit nml`.
    """
    key = _key(path, command)
    if key is None:
        return None
    try:
        with open(entry_path(key, command), encoding="utf-8") as file:
            return _valid_replay(json.load(file))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def store(path: str, command: str, files: dict[str, str], replay: Replay,
          codes: Iterable[str]) -> None:  # fmt: skip
    """Remember `replay` for `tlc <command> path`; `files` maps each parsed file to its text.

    Nothing is stored when a file changed on disk since the compiler read it,
    for an exit status other than 0 or 1, or when a diagnostic's code is one of
    `UNCACHED_CODE_PREFIXES`.
    """
    if replay.status not in (0, 1):
        return
    if any(code.startswith(UNCACHED_CODE_PREFIXES) for code in codes):
        return
    key = _key(path, command)
    hashes = _hashes_if_unchanged(files)
    if key is None or hashes is None:
        return
    entry = {"files": hashes, "stdout": replay.stdout, "stderr": replay.stderr,
             "status": replay.status}  # fmt: skip
    write_atomically(entry_path(key, command), json.dumps(entry))


def compiler_fingerprint() -> str:
    """Version, Python, and path/mtime/size of each compiler source file (see above)."""
    digest = sha256(f"{__version__}\n{sys.version}\n{_xdsl_stamp()}\n".encode())
    for root, dirs, names in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith(".py")):
            stat = os.stat(os.path.join(root, name))
            digest.update(f"{root}/{name}:{stat.st_mtime_ns}:{stat.st_size}\n".encode())
    return digest.hexdigest()


def _xdsl_stamp() -> str:
    for entry in sys.path:
        try:
            return str(os.stat(os.path.join(entry or ".", "xdsl", "__init__.py")).st_mtime_ns)
        except OSError:
            continue
    return "no-xdsl"


def _key(path: str, command: str) -> str | None:
    try:
        with open(path, "rb") as file:
            content = sha256(file.read()).hexdigest()
    except OSError:
        return None
    # The flag that lets imports leave the folder changes the result (frontend/imports.py).
    allow_outside = os.environ.get("TENSORLOOM_ALLOW_OUTSIDE_IMPORTS", "")
    parts = [command, str(use_color("text")), os.getcwd(), path, content,
             compiler_fingerprint(), allow_outside]  # fmt: skip
    return sha256("\0".join(parts).encode()).hexdigest()


def _valid_replay(entry: dict[str, object]) -> Replay | None:
    files = entry["files"]
    stdout, stderr, status = entry["stdout"], entry["stderr"], entry["status"]
    if not isinstance(files, dict) or not isinstance(stdout, str) or not isinstance(stderr, str):
        return None
    if not isinstance(status, int):
        return None
    for file, expected in files.items():  # pyright: ignore[reportUnknownVariableType]
        if _file_hash(str(file)) != expected:  # pyright: ignore[reportUnknownArgumentType]
            return None
    return Replay(stdout, stderr, status)


def _file_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as file:
            return sha256(file.read()).hexdigest()
    except OSError:
        return None


def _hashes_if_unchanged(files: dict[str, str]) -> dict[str, str] | None:
    """Absolute path -> sha256 of each file, None if its bytes are not the text checked."""
    hashes: dict[str, str] = {}
    for path, text in files.items():
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError:
            return None
        if data.decode("utf-8", errors="replace").removeprefix("\ufeff") != text:
            return None
        hashes[os.path.abspath(path)] = sha256(data).hexdigest()
    return hashes


def write_atomically(target: str, data: str | bytes) -> None:
    """Write via a temporary file and rename, so readers never see half an entry.
    A folder that cannot be written costs nothing but the entry."""
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, target)
    except OSError:
        _remove(temporary)


def _remove(path: str) -> None:
    import contextlib  # here, not at the top: a cache hit never gets this far

    with contextlib.suppress(OSError):
        os.unlink(path)
