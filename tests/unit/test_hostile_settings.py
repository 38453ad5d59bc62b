"""Settings and names a hostile or careless user can give: each is refused before use,
with one message that names the setting, never half-accepted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import pytest

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import LakeUriError
from cdcgen.core.identifiers import check_identifier, is_system_keyspace
from cdcgen.core.lake_uri import run_lake
from cdcgen.errors import ConfigError
from cdcgen.schema import create_keyspace_cql

NO_CLIENT = cast(Any, None)  # refused before any I/O: the constructors never touch it


@pytest.mark.parametrize("name", ["abc\n", "abc\r\n", "\nabc", "a b", "Abc", "a-b", "", "é"])
def test_names_outside_the_allow_list_are_refused_trailing_newline_included(name: str) -> None:
    with pytest.raises(ValueError, match="invalid keyspace"):
        check_identifier(name, "keyspace")
    with pytest.raises(ValueError, match="invalid"):
        TableRef("shop", name)


@pytest.mark.parametrize(
    "keyspace",
    ["system", "system_schema", "system_auth", "system_traces", "system_distributed_everywhere"],
)
def test_the_target_keyspace_may_not_be_a_system_keyspace(keyspace: str) -> None:
    assert is_system_keyspace(keyspace)
    with pytest.raises(ConfigError, match=f"CDCGEN_TARGET_KEYSPACE='{keyspace}'.*system keyspace"):
        PipelineConfig.from_env({"CDCGEN_TARGET_KEYSPACE": keyspace})
    with pytest.raises(ValueError, match=r"system keyspace.*CDCGEN_TARGET_KEYSPACE"):
        CqlDescriptionPublisher(NO_CLIENT, keyspace=keyspace)


def test_scyllas_system_distributed_takes_published_rows_but_never_our_state() -> None:
    config = PipelineConfig.from_env({"CDCGEN_TARGET_KEYSPACE": "system_distributed"})
    assert CqlDescriptionPublisher(NO_CLIENT, config).keyspace == "system_distributed"
    assert config.checkpoint_keyspace == "system_distributed"
    expected = r"state keyspace .system_distributed.*CDCGEN_STATE_KEYSPACE"
    with pytest.raises(ValueError, match=expected):
        CqlCheckpointStore(NO_CLIENT, config.checkpoint_keyspace)
    with pytest.raises(ConfigError, match="CDCGEN_STATE_KEYSPACE='system_distributed'"):
        PipelineConfig.from_env({"CDCGEN_STATE_KEYSPACE": "system_distributed"})
    own = config.with_overrides(state_keyspace="cdcgen_state")
    assert own.checkpoint_keyspace == "cdcgen_state"
    assert own.to_env()["CDCGEN_STATE_KEYSPACE"] == "cdcgen_state"  # reaches Spark jobs


def test_replication_options_cannot_close_their_literal() -> None:
    hostile = {"class": "SimpleStrategy", "replication_factor": "1'}; DROP KEYSPACE shop; --"}
    cql = create_keyspace_cql("state", hostile)
    assert cql == (
        "CREATE KEYSPACE IF NOT EXISTS state WITH replication = {'class': 'SimpleStrategy', "
        "'replication_factor': '1''}; DROP KEYSPACE shop; --'}"
    )
    with pytest.raises(ValueError, match="invalid keyspace"):
        create_keyspace_cql("state; DROP KEYSPACE shop", {"class": "SimpleStrategy"})


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CDCGEN_LEEWAY_SECONDS", "-5"),
        ("CDCGEN_LEEWAY_SECONDS", "inf"),
        ("CDCGEN_CONFIDENCE_WINDOW_SECONDS", "-0.001"),
        ("CDCGEN_CONFIDENCE_WINDOW_SECONDS", "nan"),
        ("CDCGEN_RING_DELAY_SECONDS", "1e300"),
        ("CDCGEN_CLOCK_WAIT_TIMEOUT_SECONDS", "-inf"),
        ("CDCGEN_CLOCK_WAIT_TIMEOUT_SECONDS", "ten"),
    ],
)
def test_durations_are_finite_and_not_negative(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{variable}='{value}'") as raised:
        PipelineConfig.from_env({variable: value})
    assert "\n" not in str(raised.value)  # one line, whatever was given


def test_durations_given_as_values_are_held_to_the_same_rule() -> None:
    with pytest.raises(ConfigError, match="CDCGEN_LEEWAY_SECONDS"):
        PipelineConfig(generation_leeway=timedelta(seconds=-1))
    assert PipelineConfig.from_env({"CDCGEN_LEEWAY_SECONDS": "0"}).generation_leeway == timedelta(0)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CDCGEN_PORT", "nine"),
        ("CDCGEN_PORT", "0"),
        ("CDCGEN_PORT", "70000"),
        ("CDCGEN_CLOCK_SOURCE", "sundial"),
    ],
)
def test_ports_and_clock_sources_are_checked(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{variable}='{value}'"):
        PipelineConfig.from_env({variable: value})


@pytest.mark.parametrize(
    ("requested", "said"),
    [
        ("relative/lake", "give an absolute folder"),
        ("~/lake", "give an absolute folder"),
        ("/etc", "outside the lakes this deployment allows"),
        ("/data/lake/../../etc", "without"),
        ("/data/lake/backfill/../tenant-a/", "without"),
        ("/data/lake/./tenant-a", "without"),
        ("s3://lakes/prefix/../other-team", "without"),
        ("s3://lakes/prefix/./x", "without"),
        ("/data/lakeside", "outside the lakes"),  # a sibling sharing the prefix
        ("s3://other-bucket/lake", "outside the lakes"),
        ("s3://lakes/prefix-other", "outside the lakes"),
        ("http://example.com/lake", "give an absolute folder"),
    ],
)
def test_a_runs_lake_path_stays_inside_the_allowed_lakes(requested: str, said: str) -> None:
    config = PipelineConfig.from_env(
        {"CDCGEN_LAKE_PATH": "/data/lake", "CDCGEN_LAKE_ROOTS": "s3://lakes/prefix, /srv/lakes/"}
    )
    roots = (config.lake_path, *config.lake_roots)
    assert roots == ("/data/lake", "s3://lakes/prefix", "/srv/lakes")
    with pytest.raises(LakeUriError, match=said):
        run_lake(requested, roots)


def test_lakes_inside_the_allowed_ones_are_taken_normalised() -> None:
    roots = ("/data/lake", "s3://lakes/prefix")
    assert run_lake("/data/lake", roots) == "/data/lake"
    assert run_lake("/data/lake//tenant-a/", roots) == "/data/lake/tenant-a"
    assert run_lake(" s3://lakes/prefix/tenant-b/ ", roots) == "s3://lakes/prefix/tenant-b"
