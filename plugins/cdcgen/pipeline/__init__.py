"""Task bodies of the DAGs, as plain functions of a :class:`PipelineConfig`.

DAG files wire these into tasks; the demo, the CLI and tests call them directly.
They are thin adapters over the core, the source readers, the extract job, the
validation suites and the publisher, and keep everything they return
JSON-serialisable so it can travel through XCom.
"""
