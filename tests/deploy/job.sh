#!/usr/bin/env bash
# The job-script pattern, run under `collect -o RUN -- bash job.sh WORKDIR CLIENT`: the script
# starts the scheduler and the workers itself; `collect`'s environment makes them record.
set -euo pipefail
W=$1
CLIENT=$2
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
dask scheduler --scheduler-file "$W/scheduler.json" --host 127.0.0.1 --no-dashboard &
for _ in $(seq 600); do [ -f "$W/scheduler.json" ] && break; sleep 0.1; done
dask worker --scheduler-file "$W/scheduler.json" --nworkers 2 --nthreads 2 --host 127.0.0.1 \
  --no-dashboard &
CLIENT_WORKERS=2 python "$CLIENT" "$W/scheduler.json" "$W/truth.json" "$W/data"
wait
