"""The sandbox emulator: plays a ScyllaDB cluster's CDC side inside Apache Cassandra.

No ScyllaDB binary runs here, so the emulator writes what ScyllaDB would: generation
metadata in every source mode (raft, gossip, legacy V1, tablets) under prefixed keyspaces,
CDC log rows for a workload of base writes (in the stream the generation timeline maps
each write to), per-node clocks with skew, and faults on demand. One concept per module:

* :mod:`.schema_setup`: keyspaces and tables (ScyllaDB's and the emulator's own);
* :mod:`.state`: simulated nodes, known generations, CDC tables;
* :mod:`.cluster`: :class:`SandboxCluster`, ``join_node`` and clocks;
* :mod:`.metadata_writers`: how each mode writes a generation;
* :mod:`.tablets`, :mod:`.tablet_map`: per-table stream sets, splits and merges;
* :mod:`.cql_types`, :mod:`.log_schema`, :mod:`.log_rows`, :mod:`.tables`: column types,
  CDC tables and their log rows;
* :mod:`.schema_changes`: ``ALTER TABLE`` of a CDC table, its log changed as ScyllaDB does;
* :mod:`.base_writes`: one base write and the CQL that applies it to the base table;
* :mod:`.workload`, :mod:`.writes`, :mod:`.values`, :mod:`.routing`: random writes and
  values, placed the way a ScyllaDB coordinator would place them;
* :mod:`.faults`, :mod:`.rewrite`, :mod:`.verify`: fault injection, the V1 rewrite, checks.
"""

from cdcgen_dev.emulator.cluster import JoinResult, SandboxCluster
from cdcgen_dev.emulator.faults import FaultKind, GenerationFault
from cdcgen_dev.emulator.log_schema import (
    BaseTableSpec,
    Column,
    Field,
    UserType,
    every_shape_table,
    orders_table,
)
from cdcgen_dev.emulator.rewrite import RewriteReport, rewrite_v1
from cdcgen_dev.emulator.schema_changes import (
    AddColumn,
    CdcOptions,
    DropColumn,
    SchemaChange,
    alter_cdc_table,
)
from cdcgen_dev.emulator.state import EmulatorError, GenerationRecord, SimNode
from cdcgen_dev.emulator.tables import create_cdc_table
from cdcgen_dev.emulator.tablets import merge_tablets, split_tablets
from cdcgen_dev.emulator.workload import WorkloadReport, WorkloadSpec, run_workload

__all__ = [
    "AddColumn",
    "BaseTableSpec",
    "CdcOptions",
    "Column",
    "DropColumn",
    "EmulatorError",
    "FaultKind",
    "Field",
    "GenerationFault",
    "GenerationRecord",
    "JoinResult",
    "RewriteReport",
    "SandboxCluster",
    "SchemaChange",
    "SimNode",
    "UserType",
    "WorkloadReport",
    "WorkloadSpec",
    "alter_cdc_table",
    "create_cdc_table",
    "every_shape_table",
    "merge_tablets",
    "orders_table",
    "rewrite_v1",
    "run_workload",
    "split_tablets",
]
