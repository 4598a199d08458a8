"""`tlc`, the TensorLoom compiler driver: one click group, one function per command.

    $ tlc check examples/mnist.tl
    $ tlc ast model.nml --json
    $ tlc tokens train.tl

The shared machinery (loading, diagnostics, exit statuses) lives in
`tools/common.py`; each command here is a thin wrapper around it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tensorloom import __version__
from tensorloom.catalogue.optimizers import OPTIMIZERS
from tensorloom.diagnostics import DiagnosticSink
from tensorloom.frontend.lexer import tokenize
from tensorloom.frontend.parser import read_source
from tensorloom.frontend.tokens import LAYOUT, Token
from tensorloom.source import SourceMap
from tensorloom.tools.common import (
    DEBUG_KEY,
    FORMAT_OPTION,
    Format,
    compiler_command,
    emit_diagnostics,
    exit_status,
    format_option,
    load_and_parse,
)
from tensorloom.tools.emit import EMIT_CHOICES, run_compile
from tensorloom.tools.guard import EXIT_OK, EXIT_USER_ERROR

# Not `exists=True` or `dir_okay=False`: a missing file, a directory and an
# unreadable file are each reported as TL0601 with exit status 1, not as usage errors.
FILE_ARGUMENT = click.argument("file", type=click.Path(path_type=Path))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tlc")
@click.option("--debug", is_flag=True, help="show tracebacks of internal compiler errors")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """TensorLoom: compile .tl training scripts and .nml models to PyTorch."""
    ctx.meta[DEBUG_KEY] = debug


@cli.command()
@FILE_ARGUMENT
@compiler_command
def tokens(file: Path) -> int:
    """Print the token stream of FILE, one token per line."""
    sources = SourceMap()
    sink = DiagnosticSink()
    text = read_source(file, sources, sink)
    if text is not None:
        for token in tokenize(text, str(file), sink):
            click.echo(format_token(token))
    emit_diagnostics(sink, sources)
    return exit_status(sink)


def format_token(token: Token) -> str:
    """`line:col  KIND  text`, the text left out for layout tokens."""
    where = f"{token.span.line}:{token.span.col}"
    text = "" if token.kind in LAYOUT else token.text
    return f"{where:<9}{token.kind.name:<12}{text}".rstrip()


@cli.command("ast")
@FILE_ARGUMENT
@format_option("the tree")
@compiler_command
def ast_command(file: Path, fmt: Format) -> int:
    """Print the abstract syntax tree of FILE."""
    from tensorloom.frontend import ast_dump

    module, sources, sink = load_and_parse(file)
    if module is not None and fmt == "json":
        click.echo(json.dumps(ast_dump.to_json(module), indent=2))
    elif module is not None:
        click.echo(ast_dump.dump(module), nl=False)
    emit_diagnostics(sink, sources)
    return exit_status(sink)


def _bindings(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> dict[str, int]:
    bindings: dict[str, int] = {}
    for text in values:
        name, _, size = text.partition("=")
        if not name.isidentifier() or not size.isdigit() or int(size) < 1:
            raise click.BadParameter(f"expected NAME=SIZE such as T=512, got `{text}`")
        bindings[name] = int(size)
    return bindings


BIND_OPTION = click.option(
    "-D",
    "bindings",
    multiple=True,
    callback=_bindings,
    metavar="NAME=SIZE",
    help="bind a symbolic dim, e.g. -D T=512 (repeatable)",
)


@cli.command()
@FILE_ARGUMENT
@FORMAT_OPTION
@BIND_OPTION
@click.option("--no-cache", is_flag=True, help="check afresh; neither read nor write the cache")
@compiler_command
def check(file: Path, fmt: str, bindings: dict[str, int], no_cache: bool) -> int:
    """Check FILE (names, configs, shapes, train settings); print each model's shape flow."""
    from tensorloom.tools.check import run_check

    return run_check(file, fmt, use_cache=not no_cache, bindings=bindings)


@cli.command("compile")
@FILE_ARGUMENT
@click.option(
    "--emit",
    type=click.Choice(EMIT_CHOICES),
    default="python",
    show_default=True,
    help="stop after this stage and print it",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="write to this file instead of stdout",
)
@click.option("--no-cache", is_flag=True, help="compile afresh; neither read nor write the cache")
@click.option(
    "--single-file",
    is_flag=True,
    help="with -o: one file, the runtime inside it (default: the runtime module beside it)",
)
@compiler_command
def compile_command(
    file: Path, emit: str, output: Path | None, no_cache: bool, single_file: bool
) -> int:
    """Compile FILE to Python, or print it after any stage with --emit.

    `-o out/train.py` writes the program, and beside it the runtime module it imports
    (`tensorloom_rt_VERSION_HASH.py`); `--single-file` writes one file with both.
    """
    return run_compile(file, emit, output, use_cache=not no_cache, single_file=single_file)


@cli.command("run", context_settings={"ignore_unknown_options": True})
@FILE_ARGUMENT
@click.option("--nproc", type=click.IntRange(min=1), help="processes on this machine (torchrun)")
@click.option("--nnodes", type=click.IntRange(min=1), help="machines, each running this command")
@click.option("--node-rank", type=click.IntRange(min=0), help="this machine: 0 .. nnodes-1")
@click.option("--master-addr", help="the address of node 0")
@click.option("--master-port", type=click.IntRange(1, 65535), help="a free port on node 0")
@click.option("--rdzv-endpoint", help="HOST:PORT of a c10d rendezvous (instead of the three above)")
@click.option("--rdzv-id", help="the job's name at the rendezvous (default: tensorloom)")
@click.option(
    "--keep", is_flag=True, help="leave the compiled script beside FILE (mnist.tl -> mnist.py)"
)
@click.option("--single-file", is_flag=True, help="run (and keep) one file, the runtime inside")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@compiler_command
def run_command(file: Path, nproc: int | None, nnodes: int | None, node_rank: int | None,
                master_addr: str | None, master_port: int | None, rdzv_endpoint: str | None,
                rdzv_id: str | None, keep: bool, single_file: bool,
                script_args: tuple[str, ...]) -> int:  # fmt: skip
    """Compile FILE to a cached script and run it; arguments after `--` go to the script."""
    from tensorloom.tools.run import Launch, run_file

    launch = Launch(nproc, nnodes, node_rank, master_addr, master_port, rdzv_endpoint, rdzv_id)
    problem = launch.problem()
    if problem is not None:
        raise click.UsageError(problem)
    return run_file(file, nproc, list(script_args), launch, keep=keep, single_file=single_file)


def _gpu_memory(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    from tensorloom.analysis.memory import parse_size

    size = None if value is None else parse_size(value)
    if value is not None and size is None:
        raise click.BadParameter(f"expected a size such as 80GB, got `{value}`")
    return size


@cli.command()
@FILE_ARGUMENT
@click.option("--batch-size", type=click.IntRange(min=1), help="default: the train block's")
@click.option(
    "--precision",
    type=click.Choice(["fp32", "fp16", "bf16"]),
    help="default: the train block's; bf16 when it sets none (auto, on a bf16 GPU); "
    "fp32 without a train block",
)
@click.option(
    "--optimizer",
    type=click.Choice([*OPTIMIZERS, "SGD+momentum"]),  # the catalogue's records
    help="default: the train block's, else Adam",
)
@BIND_OPTION
@click.option("--gpu-memory", callback=_gpu_memory, help="warn when the budget exceeds it (80GB)")
@click.option("--checkpointing", is_flag=True, help="budget with activation checkpointing")
@click.option("--nproc", type=click.IntRange(min=1), help="the budget of one rank of N processes")
@click.option(
    "--distributed",
    type=click.Choice(["ddp", "fsdp"]),
    help="with --nproc: DDP (replicated) or FSDP (sharded); default: the train block's",
)
@format_option("the profile")
@compiler_command
def info(file: Path, batch_size: int | None, precision: str | None, optimizer: str | None,
         bindings: dict[str, int], gpu_memory: int | None, checkpointing: bool,
         nproc: int | None, distributed: str | None, fmt: Format) -> int:  # fmt: skip
    """Parameters, FLOPs, activations and the training-memory budget of each model."""
    from tensorloom.analysis.report import InfoRequest, run_info

    request = InfoRequest(batch_size, precision, optimizer, bindings, gpu_memory, checkpointing,
                          nproc, distributed)  # fmt: skip
    return run_info(file, request, fmt == "json")


@cli.command()
@click.argument("code")
@compiler_command
def explain(code: str) -> int:
    """Explain a diagnostic code, such as TL0201, with an example."""
    from tensorloom.diagnostics import codes

    entry = codes.lookup(code)
    if entry is None:
        click.echo(f"error: unknown diagnostic code `{code}`", err=True)
        click.echo("  = help: codes look like `TL0201`; docs/diagnostics.md lists them", err=True)
        return EXIT_USER_ERROR
    click.echo(codes.explain(entry), nl=False)
    return EXIT_OK


@cli.command()
@FILE_ARGUMENT
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="the picture (.svg, .png, .pdf) or Graphviz source (.dot); default: dot to stdout",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["svg", "png", "pdf", "dot"]),
    help="default: from the output's suffix",
)
@click.option("--model", help="the model to draw; default: the one the file instantiates")
@compiler_command
def graph(file: Path, output: Path | None, fmt: str | None, model: str | None) -> int:
    """Draw a model's dataflow: shapes on the edges, residuals dashed, nested models boxed."""
    from tensorloom.tools.pictures import run_graph

    return run_graph(file, output, fmt, model)


@cli.command()
@click.argument("metrics", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="the picture: .png, .svg or .pdf",
)
@click.option(
    "--x",
    "x",
    default="epoch",
    show_default=True,
    help="the key on the x axis: `wall_s`, `step`, `tokens`, ... (records without it are skipped)",
)
@compiler_command
def plot(metrics: tuple[Path, ...], output: Path, x: str) -> int:
    """Plot loss and accuracy from `--metrics` JSON lines: one file, or several runs in one
    picture (`tlc plot a.jsonl b.jsonl --x wall_s -o curves.png`)."""
    from tensorloom.tools.pictures import run_plot

    return run_plot(list(metrics), output, x)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--check", is_flag=True, help="change nothing; exit 1 listing the files that would change"
)
@click.option("--diff", is_flag=True, help="change nothing; print what would change as a diff")
@click.option(
    "--stdin-filename",
    default="<stdin>.tl",
    show_default=True,
    help="with `-`: the name diagnostics use; a .nml suffix reads the text as .nml",
)
@compiler_command
def fmt(paths: tuple[Path, ...], check: bool, diff: bool, stdin_filename: str) -> int:
    """Lay out .tl and .nml files (and the folders' ones) canonically; `-` filters stdin."""
    from tensorloom.tools.fmt import run_fmt

    return run_fmt(list(paths), check=check, diff=diff, stdin_name=stdin_filename)


@cli.command()
def lsp() -> None:
    """Run the language server on stdin and stdout (editors start it; see editors/)."""
    # Not a `compiler_command`: the server owns stdout and closes it at exit, and
    # pygls reports a failing request to the client without ending the session.
    try:
        from tensorloom.tools.lsp.server import main as serve
    except ModuleNotFoundError as error:
        if error.name not in ("pygls", "lsprotocol"):
            raise
        click.echo(f"error: `tlc lsp` needs `{error.name}`, which is not installed", err=True)
        click.echo("  = help: pip install 'tensorloom[lsp]'", err=True)
        raise SystemExit(EXIT_USER_ERROR) from None
    serve()


def main() -> None:
    cli(prog_name="tlc")


if __name__ == "__main__":
    sys.exit(main())
