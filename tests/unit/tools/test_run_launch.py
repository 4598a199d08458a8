"""`tlc run`'s torchrun command lines and its account of a failed run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tensorloom.tools.run import Launch, describe_exit, failure_report, torchrun_arguments


def test_one_machine_is_standalone_and_ranks_past_zero_are_logged() -> None:
    arguments = torchrun_arguments(Launch(nproc=3), "/tmp/logs")
    assert arguments[:3] == ["--nproc-per-node=3", "--standalone", "--nnodes=1"]
    assert "--redirects=1:3,2:3" in arguments and "--tee=1:3,2:3" in arguments


def test_multi_node_static_and_rendezvous() -> None:
    static = Launch(nproc=2, nnodes=2, node_rank=1, master_addr="10.0.0.1", master_port=29400)
    assert static.problem() is None
    assert torchrun_arguments(static) == [
        "--nproc-per-node=2", "--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1",
        "--master-port=29400",
    ]  # fmt: skip
    rdzv = Launch(nnodes=4, rdzv_endpoint="head:29400")
    assert "--rdzv-id=tensorloom" in torchrun_arguments(rdzv) and rdzv.problem() is None


def test_inconsistent_launches_are_usage_errors() -> None:
    assert Launch(nnodes=2, node_rank=0).problem() == (
        "`--nnodes 2` needs `--master-addr`, `--master-port`"
    )
    assert "below `--nnodes 2`" in str(
        Launch(nnodes=2, node_rank=2, master_addr="a", master_port=1).problem()
    )
    assert "replaces" in str(Launch(nnodes=2, rdzv_endpoint="a:1", node_rank=0).problem())
    assert "need `--nnodes N`" in str(Launch(master_addr="a").problem())


@dataclass
class Failure:  # the fields of torch's ProcessFailure that the report reads
    local_rank: int
    exitcode: int
    timestamp: int


def test_the_first_failed_rank_is_shown_with_its_stderr(tmp_path: Path) -> None:
    log = tmp_path / "run_x" / "attempt_0" / "1"
    log.mkdir(parents=True)
    (log / "stderr.log").write_text("Traceback ...\nRuntimeError: boom on rank 1\n")
    failures = {0: Failure(0, -15, 20), 1: Failure(1, 1, 10)}
    report = failure_report(failures, str(tmp_path))  # type: ignore[arg-type]
    assert report.splitlines()[:3] == [
        "error: rank 1 (local rank 1) failed first: exit status 1",
        "  | Traceback ...",
        "  | RuntimeError: boom on rank 1",
    ]
    assert "rank 0 (local rank 0) also stopped: SIGTERM" in report
    # torchrun's timestamps are whole seconds: in a tie, the rank it stopped is not "first"
    tied = failure_report({0: Failure(0, -15, 10), 1: Failure(1, 1, 10)}, str(tmp_path))  # type: ignore[arg-type]
    assert tied.startswith("error: rank 1 (local rank 1) failed first: exit status 1")
    assert describe_exit(-6).startswith("killed by SIGABRT")
