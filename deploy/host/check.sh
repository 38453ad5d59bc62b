#!/usr/bin/env bash
# What the stack needs of the host, checked before any ScyllaDB node starts (the
# host-check service of docker-compose.yaml). Every shortfall is named with its fix.
#
# ScyllaDB asks the kernel for asynchronous I/O contexts at start-up: 11026 per shard
# (ScyllaDB's image documentation: reactor::max_aio + detect_aio_poll +
# reactor_backend_aio::max_polls), and refuses to start without them ("Could not setup
# Async I/O"). fs.aio-max-nr is the host's, shared by every container: too few, and this
# check fails (exit 1) rather than leave three nodes restarting. Memory, CPUs and disk
# are warned about, as Airflow's own compose file's init does, the nodes' memory added.
#
# HOST_PROC and DATA_DIR let a test point it at other files (and a df first on PATH at
# another disk).
set -u
proc="${HOST_PROC:-/proc}"
data="${DATA_DIR:-/}"
nodes="${SCYLLA_NODES:-3}"
shards_per_node="${SCYLLA_SMP:-1}"
need_aio=$((11026 * nodes * shards_per_node))
need_memory_mb=$((4096 + nodes * 1024))
need_cpus=2
need_disk_mb=10240
missing=()
short=()

aio_max=$(cat "$proc/sys/fs/aio-max-nr")
aio_used=$(cat "$proc/sys/fs/aio-nr")
if (( aio_max - aio_used < need_aio )); then
  missing+=("fs.aio-max-nr: $((aio_max - aio_used)) asynchronous I/O contexts free, ScyllaDB needs $need_aio ($nodes node(s) x $shards_per_node shard(s) x 11026); on the host: sudo sysctl -w fs.aio-max-nr=1048576")
fi
memory_kb=$(awk '/^MemTotal:/ {print $2}' "$proc/meminfo")
if (( memory_kb / 1024 < need_memory_mb )); then
  short+=("memory: $((memory_kb / 1024)) MB, the stack needs $need_memory_mb MB (Airflow's 4 GB and 1 GB per ScyllaDB node); give Docker more memory")
fi
cpus=$(grep -c '^processor' "$proc/cpuinfo")
if (( cpus < need_cpus )); then
  short+=("CPUs: $cpus, the stack needs $need_cpus; give Docker more CPUs")
fi
disk_mb=$(df -Pm "$data" | awk 'NR == 2 {print $4}')
if (( disk_mb < need_disk_mb )); then
  short+=("disk: $disk_mb MB free, the stack needs $need_disk_mb MB; free some space for Docker")
fi

for line in "${short[@]}"; do echo "host-check: warning: $line" >&2; done
if (( ${#missing[@]} )); then
  echo "host-check: ScyllaDB cannot start on this host:" >&2
  for line in "${missing[@]}"; do echo "  - $line" >&2; done
  exit 1
fi
echo "host-check: fs.aio-max-nr is enough for $nodes ScyllaDB node(s)"
