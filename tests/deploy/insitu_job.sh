#!/usr/bin/env bash
# An in-situ job, run under `collect -o RUN -- bash insitu_job.sh WORKDIR STEPS SLOW_S`: a Dask
# scheduler and 2 workers from the CLI, an MPI "simulation" of 3 ranks (MPICH's mpiexec) that
# scatters one block per rank per step into Dask, and an analytics client that reduces each
# step once all its blocks are there (insitu_sim.py, insitu_analytics.py).
set -euo pipefail
W=$1
STEPS=$2
SLOW=$3
HERE=$(cd "$(dirname "$0")" && pwd)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
dask scheduler --scheduler-file "$W/scheduler.json" --host 127.0.0.1 --no-dashboard &
for _ in $(seq 600); do [ -f "$W/scheduler.json" ] && break; sleep 0.1; done
dask worker --scheduler-file "$W/scheduler.json" --nworkers 2 --nthreads 1 --host 127.0.0.1 \
  --no-dashboard &
mpiexec -n 3 python "$HERE/insitu_sim.py" "$W/scheduler.json" "$STEPS" "$SLOW" &
SIM=$!
python "$HERE/insitu_analytics.py" "$W/scheduler.json" "$STEPS" 3 "$W/truth.json"
wait $SIM
