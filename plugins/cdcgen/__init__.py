"""cdcgen: follow ScyllaDB CDC generations exactly, from detection to publication."""

__version__ = "0.1.0"
