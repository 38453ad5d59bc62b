"""Replication of a table's changes from the lake to a sink table (YugabyteDB xCluster)."""
