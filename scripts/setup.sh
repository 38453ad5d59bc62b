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

# Java 17+ runs Cassandra 5 and Spark 4.
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  log "installing Java 17 (openjdk-17-jre-headless)"
  apt_install openjdk-17-jre-headless
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
  log "installing the pinned stack into .venv (about a minute or two)"
  .venv/bin/pip install -q --upgrade-strategy only-if-needed -c constraints.txt -e '.[stack,dev]' -e ./harness
  .venv/bin/pip check >&2
  echo "$want" > "$stamp"
  log "ready"
fi
# Delta Lake's two jars in PySpark's jars/ (checked every time: a reinstalled
# pyspark comes without them); a no-op when both are there with the pinned hash.
.venv/bin/python -m cdcgen.spark.delta
