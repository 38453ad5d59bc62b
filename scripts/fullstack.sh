#!/usr/bin/env bash
# The full Airflow stack on this machine (no Docker): PostgreSQL from Debian's
# packages on 127.0.0.1:55432, Airflow's api-server (http://127.0.0.1:28080),
# scheduler, dag-processor and triggerer, logs under var/fullstack/logs.
#
#   scripts/fullstack.sh up        # install what is missing, start, wait until healthy
#   scripts/fullstack.sh status
#   scripts/fullstack.sh screenshot http://127.0.0.1:28080/dags/cdc_generations grid.png
#   scripts/fullstack.sh down      # stop everything it started
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m cdcgen_dev.devstack "$@"
