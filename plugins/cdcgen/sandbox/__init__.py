"""The local sandbox: a real Cassandra (``cassandra``) and a ScyllaDB CDC emulator."""
