"""The gate before publication: a generation's GX suites, recorded for the report site.

What the suites decide travels to the publish step as a
:class:`~cdcgen.pipeline.outcomes.ValidationOutcome` (the Airflow edge turns it into
XCom); a failed one raises :class:`~cdcgen.pipeline.errors.GenerationRejected` carrying
the same outcome, so the run can record why without parsing a message.
"""

from __future__ import annotations

from dataclasses import replace

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import Generation
from cdcgen.generation_lake.lake_tables import read_artifact
from cdcgen.pipeline.errors import GenerationRejected
from cdcgen.pipeline.outcomes import ValidationOutcome, expectation_outcomes
from cdcgen.pipeline.reporting import record_generation


def validate(
    config: PipelineConfig, generation: Generation, *, dag_id: str = "", run_id: str = ""
) -> ValidationOutcome:
    """Run the GX suites on the extracted generation and record the outcome.

    Raises :class:`GenerationRejected` if any expectation fails; its message is the
    validation summary (each failed expectation with a few offending streams) and the
    report page.
    """
    from cdcgen.validation.generation_suite import validate_generation

    artifact = read_artifact(config.lake_path, generation)
    result = validate_generation(config, artifact)
    outcome = ValidationOutcome(
        generation=generation,
        passed=bool(result.passed),
        summary=result.summary,
        data_docs=str(result.report_index) if result.report_index else None,
        failed=tuple(f.describe() for f in result.failures),
        expectations=expectation_outcomes(result.checks),
        skipped=tuple(result.skipped),
        ring=result.ring,
        ring_known=result.ring_known,
        lake_version=artifact.version,
        description_sha256=artifact.description_sha256,
    )
    page = record_generation(
        config, generation, outcome, published=False, dag_id=dag_id, run_id=run_id
    )
    outcome = replace(outcome, page=page)
    if not outcome.passed:
        raise GenerationRejected(
            f"{generation.label} failed validation and will not be published.\n"
            f"{outcome.summary}\nReport page: {page}",
            outcome,
        )
    return outcome
