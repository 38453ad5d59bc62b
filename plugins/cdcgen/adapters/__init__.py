"""Adapters: the ports of :mod:`cdcgen.ports` implemented over cassandra-driver."""
