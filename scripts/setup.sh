#!/usr/bin/env bash
# Idempotent set-up of everything the demo and the tests need on a fresh machine:
# Java 17+, Maven (for Cassandra's jars), the pinned virtualenv with the project
# installed editable. Quick when nothing changed: a stamp keyed on the inputs.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "need root to install $* (apt-get); install them and re-run"
    exit 1
  fi
  if [ ! -f /var/lib/apt/periodic/cdcgen-updated ]; then
    apt-get update -qq >&2 && mkdir -p /var/lib/apt/periodic && touch /var/lib/apt/periodic/cdcgen-updated
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

# Java 17+ runs Cassandra 5 and Spark 4; a JDK's javac compiles the lake's log store
# for S3 (cdcgen.spark_runtime.log_store).
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] \
  || ! command -v javac >/dev/null 2>&1; then
  log "installing a Java 17 JDK (openjdk-17-jdk-headless)"
  apt_install openjdk-17-jdk-headless
fi
if ! command -v mvn >/dev/null 2>&1; then
  log "installing Maven (fetches Cassandra's jars from Maven Central)"
  apt_install maven
fi

PYTHON=${PYTHON:-python3.11}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    PYTHON=python3
  else
    log "installing Python 3.11"
    apt_install python3.11 python3.11-venv
  fi
fi

stamp_inputs() { cat constraints.txt pyproject.toml harness/pyproject.toml; "$PYTHON" --version 2>&1; }
want=$(stamp_inputs | sha256sum | cut -d' ' -f1)
stamp=.venv/.cdcgen-stamp
if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/cdcgen ]; }; then
  if [ ! -x .venv/bin/python ]; then
    log "creating .venv"
    "$PYTHON" -m venv .venv
  fi
  # uv (pinned in constraints.txt like the rest) installs the same pins as pip would,
  # in parallel; bytecode is compiled at install time as pip does, so the first test
  # session does not pay for it. pip still checks the result.
  log "installing the pinned stack into .venv with uv (a few minutes on a fresh machine)"
  .venv/bin/pip install -q -c constraints.txt uv
  .venv/bin/uv pip install -q --python .venv/bin/python --compile-bytecode \
    -c constraints.txt -e '.[stack,dev]' -e ./harness
  .venv/bin/pip check >&2
  echo "$want" > "$stamp"
  log "ready"
fi
# Delta Lake's and S3A's jars in PySpark's jars/, and the lake's log store for S3
# compiled there (checked every time: a reinstalled pyspark comes without them); a
# no-op when all are there with the pinned hashes.
.venv/bin/python -m cdcgen.spark_runtime.install
# The scripts and styles GX's Data Docs load, from the npm registry, SHA-256 pinned, so
# the pages load nothing from a CDN (a no-op once installed).
.venv/bin/python -m cdcgen.validation.docs_assets

# moto's S3 server (the object-store tests' S3) in a virtualenv of its own: its
# botocore cannot share .venv's pinned python-dateutil. Stamped like .venv.
s3_want=$( { cat harness/s3-server-requirements.txt; "$PYTHON" --version 2>&1; } | sha256sum | cut -d' ' -f1)
s3_stamp=.venv-s3/.cdcgen-stamp
if ! { [ -f "$s3_stamp" ] && [ "$(cat "$s3_stamp")" = "$s3_want" ] && [ -x .venv-s3/bin/moto_server ]; }; then
  log "installing moto's S3 server into .venv-s3"
  [ -x .venv-s3/bin/python ] || "$PYTHON" -m venv .venv-s3
  .venv/bin/uv pip install -q --python .venv-s3/bin/python --compile-bytecode --no-deps \
    -r harness/s3-server-requirements.txt
  echo "$s3_want" > "$s3_stamp"
fi
