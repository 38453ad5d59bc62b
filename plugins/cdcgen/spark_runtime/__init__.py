"""The Spark edge of the package: one configuration per job kind, and the fan-out of
per-stream work over Spark tasks. Nothing here knows the pipeline's orchestration;
pyspark is imported inside functions only (DAG files import the configurations).
"""
