"""OpenLineage dataset names (cdcgen.core.lineage_names): ScyllaDB's tables under the spec's
Cassandra convention, the lake's tables under its file-system and S3 ones. Each name is
checked against the OpenLineage client's own implementation of the spec for the same
values, so a name that strays from the spec fails here."""

from __future__ import annotations

import pytest
from openlineage.client.naming import dataset as spec

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.lineage_names import (
    DatasetName,
    cluster_namespace,
    lake_dataset,
    log_table_dataset,
    table_dataset,
)


def as_spec(naming: spec.DatasetNaming) -> DatasetName:
    return DatasetName(naming.get_namespace(), naming.get_name())


def test_a_table_is_named_as_the_spec_names_a_cassandra_table() -> None:
    name = table_dataset(("10.0.0.1", "10.0.0.2"), 9042, "shop.orders")
    assert name == DatasetName("cassandra://10.0.0.1:9042", "shop.orders")
    assert name == as_spec(spec.Cassandra("10.0.0.1", "9042", "shop", "orders"))


def test_the_first_contact_point_names_the_cluster_lowercase() -> None:
    assert cluster_namespace([" Node2.Example ", "node1.example"], 19042) == (
        "cassandra://node2.example:19042"
    )
    # An IPv6 address in brackets, as a URI's authority writes it.
    assert cluster_namespace(["fd00::1"], 9042) == "cassandra://[fd00::1]:9042"
    assert cluster_namespace(["[fd00::1]"], 9042) == "cassandra://[fd00::1]:9042"


def test_a_cdc_log_table_is_the_base_table_s_log_in_its_keyspace() -> None:
    name = log_table_dataset(["127.0.0.1"], 9042, TableRef("shop", "orders"))
    assert name == DatasetName("cassandra://127.0.0.1:9042", "shop.orders_scylla_cdc_log")
    assert name == as_spec(spec.Cassandra("127.0.0.1", "9042", "shop", "orders_scylla_cdc_log"))


def test_a_local_lake_table_is_its_absolute_folder_in_the_file_namespace() -> None:
    name = lake_dataset("/data/lake/", "changes", "shop.orders")
    assert name == DatasetName("file", "/data/lake/changes/shop.orders")
    assert name == as_spec(spec.LocalFileSystem("/data/lake/changes/shop.orders"))
    # The lake's own rule for a location: file:// URIs and trailing slashes alike.
    assert lake_dataset("file:///data/lake", "/generations/") == DatasetName(
        "file", "/data/lake/generations"
    )


def test_an_s3_lake_table_is_its_key_in_the_bucket_s_namespace() -> None:
    name = lake_dataset("s3://bucket/team/lake", "changes", "shop.orders")
    assert name == DatasetName("s3://bucket", "team/lake/changes/shop.orders")
    assert name == as_spec(spec.S3("bucket", "team/lake/changes/shop.orders"))
    assert lake_dataset("s3://bucket", "generations") == DatasetName("s3://bucket", "generations")


def test_what_names_no_dataset_is_refused() -> None:
    with pytest.raises(ValueError, match="contact point"):
        cluster_namespace([" ", ""], 9042)
    with pytest.raises(ValueError, match="port"):
        cluster_namespace(["node1"], 0)
    with pytest.raises(ValueError, match="not the bucket"):
        lake_dataset("s3://bucket")
    with pytest.raises(ValueError, match=r"keyspace\.table"):
        table_dataset(["node1"], 9042, "orders")
