"""Every error the package raises says whether another attempt helps (cdcgen.core.errors),
and that alone decides a retry: at the Airflow edge, in the jobs' exit status and in the
command line's."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException
from cassandra import InvalidRequest, OperationTimedOut

import cdcgen
from cdcgen.adapters.errors import AccessRefused, ConnectionFailed, exit_code, is_terminal
from cdcgen.airflow.failures import fail_fast
from cdcgen.cli import exit_status
from cdcgen.cli.errors import CliError
from cdcgen.core.errors import (
    CdcgenError,
    CorruptGeneration,
    ExitCode,
    IncompleteGeneration,
    TerminalError,
    TransientError,
)
from cdcgen.errors import ConfigError
from cdcgen.pipeline.errors import RunIncomplete

PACKAGE = Path(cdcgen.__file__).parent


def package_errors() -> dict[type[BaseException], str]:
    """Every exception class defined in the package, with its module."""
    found: dict[type[BaseException], str] = {}
    for module in pkgutil.walk_packages([str(PACKAGE)], "cdcgen."):
        loaded = importlib.import_module(module.name)
        for _, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.name:
                found[value] = module.name
    return found


def raised_by_name() -> set[str]:
    """Names of the classes some ``raise Name(`` of the package raises."""
    text = "\n".join(path.read_text() for path in PACKAGE.rglob("*.py"))
    return set(re.findall(r"raise ([A-Z]\w*)\(", text))


def test_every_error_of_the_package_is_terminal_or_transient_but_for_bases_never_raised() -> None:
    errors = package_errors()
    assert len(errors) > 50  # the walk found the package's errors
    raised = raised_by_name()
    for error, module in errors.items():
        where = f"{module}.{error.__name__}"
        assert issubclass(error, CdcgenError), f"{where} is not a CdcgenError"
        terminal, transient = issubclass(error, TerminalError), issubclass(error, TransientError)
        assert not (terminal and transient), f"{where} is both terminal and transient"
        if error in (CdcgenError, TerminalError, TransientError) or terminal or transient:
            continue
        # A base that only groups errors of both kinds (MetadataError, StreamReadError).
        assert error.__name__ not in raised, f"{where} has no kind and is raised"
        assert any(issubclass(other, error) for other in errors if other is not error), where


TERMINAL, TRANSIENT, BASE = "terminal", "transient", "base"

#: Every exception class of the package and its kind, in its package's ``errors`` module.
#: A new error is listed here, which makes its author say whether another attempt helps;
#: a ``base`` only groups errors of both kinds and is never raised.
KINDS: dict[str, str] = {
    "cdcgen.adapters.errors.AccessRefused": TERMINAL,
    "cdcgen.adapters.errors.ConnectionFailed": TRANSIENT,
    "cdcgen.adapters.errors.DeltaLogError": TERMINAL,
    "cdcgen.adapters.errors.PublishConflict": TERMINAL,
    "cdcgen.adapters.errors.PublishError": TERMINAL,
    "cdcgen.adapters.errors.ReplicasUnavailable": TRANSIENT,
    "cdcgen.adapters.errors.RoutingError": TERMINAL,
    "cdcgen.adapters.errors.SinkClockUnreadable": TRANSIENT,
    "cdcgen.adapters.errors.StreamReadError": BASE,
    "cdcgen.adapters.errors.TerminalReadError": TERMINAL,
    "cdcgen.adapters.errors.TransientReadError": TRANSIENT,
    "cdcgen.airflow.errors.ClocksNotPast": TERMINAL,
    "cdcgen.airflow.errors.JobFileMissing": TERMINAL,
    "cdcgen.airflow.errors.JobRefused": TERMINAL,
    "cdcgen.airflow.errors.LagAboveThreshold": TERMINAL,
    "cdcgen.airflow.errors.PreloadError": TERMINAL,
    "cdcgen.airflow.errors.SparkMasterRefused": TERMINAL,
    "cdcgen.changes.errors.LayoutError": TERMINAL,
    "cdcgen.changes.errors.NothingClosed": TRANSIENT,
    "cdcgen.changes.errors.OverlappingReads": TERMINAL,
    "cdcgen.cli.errors.CliError": TERMINAL,
    "cdcgen.core.errors.ApplyIncomplete": TRANSIENT,
    "cdcgen.core.errors.BadCdcExtension": TERMINAL,
    "cdcgen.core.errors.CdcgenError": BASE,
    "cdcgen.core.errors.ConflictingGeneration": TERMINAL,
    "cdcgen.core.errors.CopyIncomplete": TRANSIENT,
    "cdcgen.core.errors.CorruptGeneration": TERMINAL,
    "cdcgen.core.errors.CqlTypeError": TERMINAL,
    "cdcgen.core.errors.DataExpired": TERMINAL,
    "cdcgen.core.errors.GenerationChanged": TERMINAL,
    "cdcgen.core.errors.GenerationNotLoaded": TERMINAL,
    "cdcgen.core.errors.GenerationTimestampNotIncreasing": TERMINAL,
    "cdcgen.core.errors.IncompleteGeneration": TRANSIENT,
    "cdcgen.core.errors.InvalidDescription": TERMINAL,
    "cdcgen.core.errors.InvalidName": TERMINAL,
    "cdcgen.core.errors.InvalidSharding": TERMINAL,
    "cdcgen.core.errors.InvalidStreamHistory": TERMINAL,
    "cdcgen.core.errors.InvalidStreamId": TERMINAL,
    "cdcgen.core.errors.InvalidTimestamp": TERMINAL,
    "cdcgen.core.errors.InvalidToken": TERMINAL,
    "cdcgen.core.errors.InvalidTopology": TERMINAL,
    "cdcgen.core.errors.LakeInconsistent": TERMINAL,
    "cdcgen.core.errors.LakeNotStarted": TERMINAL,
    "cdcgen.core.errors.LakeUriError": TERMINAL,
    "cdcgen.core.errors.LogTableError": TERMINAL,
    "cdcgen.core.errors.MetadataError": BASE,
    "cdcgen.core.errors.NoGenerationForWrite": TERMINAL,
    "cdcgen.core.errors.ReplicationError": TERMINAL,
    "cdcgen.core.errors.SnapshotClockUnreadable": TRANSIENT,
    "cdcgen.core.errors.StateMissing": TERMINAL,
    "cdcgen.core.errors.StreamOrderError": TERMINAL,
    "cdcgen.core.errors.TerminalError": TERMINAL,
    "cdcgen.core.errors.TransientError": TRANSIENT,
    "cdcgen.core.errors.UnknownGeneration": TERMINAL,
    "cdcgen.core.errors.UnreadableJson": TERMINAL,
    "cdcgen.core.errors.WriteFromTheFuture": TERMINAL,
    "cdcgen.core.errors.WriteFromThePast": TERMINAL,
    "cdcgen.core.errors.WriteRejected": TERMINAL,
    "cdcgen.core.operations.errors.ReplayError": TERMINAL,
    "cdcgen.errors.ConfigError": TERMINAL,
    "cdcgen.generation_lake.errors.ArtifactError": TERMINAL,
    "cdcgen.jobs.errors.ExtractJobError": TERMINAL,
    "cdcgen.pipeline.errors.BackfillNotFollowed": TERMINAL,
    "cdcgen.pipeline.errors.GenerationRejected": TERMINAL,
    "cdcgen.pipeline.errors.NoTables": TERMINAL,
    "cdcgen.pipeline.errors.PublicationRefused": TERMINAL,
    "cdcgen.pipeline.errors.RunIncomplete": TERMINAL,
    "cdcgen.replication.errors.ChangesRejected": TERMINAL,
    "cdcgen.replication.errors.SinkSchemaError": TERMINAL,
    "cdcgen.reports.errors.NotARecord": TERMINAL,
    "cdcgen.reports.errors.RecordError": TERMINAL,
    "cdcgen.spark_runtime.errors.ArchiveError": TERMINAL,
    "cdcgen.spark_runtime.errors.JarError": TERMINAL,
    "cdcgen.spark_runtime.errors.SparkServerMismatch": TERMINAL,
    "cdcgen.spark_runtime.errors.SparkServerRefused": TERMINAL,
    "cdcgen.validation.errors.AssetError": TERMINAL,
    "cdcgen.validation.errors.ChangesInvalid": TERMINAL,
    "cdcgen.validation.errors.ReportFolderError": TERMINAL,
    "cdcgen.validation.errors.SuiteError": TERMINAL,
    "cdcgen.validation.errors.ValidationFailed": TERMINAL,
}


def _kind(error: type[BaseException]) -> str:
    if issubclass(error, TerminalError):
        return TERMINAL
    return TRANSIENT if issubclass(error, TransientError) else BASE


def test_every_error_is_listed_with_its_kind_in_its_package_s_errors_module() -> None:
    found = {
        f"{module}.{error.__name__}": _kind(error) for error, module in package_errors().items()
    }
    assert found == KINDS
    for name in found:
        module = name.rsplit(".", 1)[0]
        assert module.split(".")[-1] == "errors", f"{name}: not in its package's errors module"


@pytest.mark.parametrize(
    ("error", "terminal"),
    [
        (CorruptGeneration("bad stream id"), True),
        (AccessRefused("127.0.0.9:9042: authentication refused"), True),
        (ConfigError("CDCGEN_PORT: not a port"), True),
        (InvalidRequest("unconfigured table t"), True),  # the driver's, terminal
        (IncompleteGeneration("3 of 4 rows"), False),
        (ConnectionFailed("no node answered"), False),
        (OperationTimedOut("slow"), False),  # the driver's, transient
        (KeyError("a bug or a library's own error"), False),  # unclassified: retried
    ],
)
def test_the_kind_alone_decides_at_the_airflow_edge_and_in_the_exit_status(
    error: Exception, terminal: bool
) -> None:
    def step() -> None:
        raise error

    assert is_terminal(error) is terminal
    assert exit_code(error) is (ExitCode.TERMINAL if terminal else ExitCode.TRANSIENT)
    if terminal:
        with pytest.raises(AirflowFailException, match=r"\(not retried\): ") as failed:
            fail_fast(step)()
        assert failed.value.__cause__ is error
    else:
        with pytest.raises(type(error)) as raised:
            fail_fast(step)()
        assert raised.value is error


def test_a_failure_message_opens_with_what_went_wrong() -> None:
    def incomplete() -> None:
        raise RunIncomplete("orders: 1 window not extracted")

    with pytest.raises(AirflowFailException) as failed:
        fail_fast(incomplete)()
    opening, next_step = str(failed.value).split("\n")
    assert opening == "run incomplete (not retried): orders: 1 window not extracted"
    assert next_step == f"Next: {RunIncomplete.next_step}"

    def corrupt() -> None:
        raise CorruptGeneration("bad stream id")

    with pytest.raises(AirflowFailException, match=r"^CorruptGeneration \(not retried\)"):
        fail_fast(corrupt)()


def wrapped(cause: BaseException | None) -> CliError:
    try:
        try:
            if cause is not None:
                raise cause
            raise CliError("nothing to migrate")
        except CliError:
            raise
        except BaseException as exc:
            raise CliError(str(exc)) from exc
    except CliError as error:
        return error


def test_the_command_line_says_the_kind_of_what_it_met() -> None:
    assert exit_status(wrapped(None)) is ExitCode.USAGE
    assert exit_status(wrapped(ValueError("'0x10' is not a decimal integer"))) is ExitCode.USAGE
    assert exit_status(wrapped(ConnectionFailed("no node answered"))) is ExitCode.TRANSIENT
    assert exit_status(wrapped(AccessRefused("authentication refused"))) is ExitCode.TERMINAL
    assert exit_status(wrapped(CorruptGeneration("bad stream id"))) is ExitCode.TERMINAL
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3, 4]
