#!/usr/bin/env bash
# A command's forked jobs die with it: `pbf validate --jobs 2` killed with SIGTERM while its
# cases run leaves no process behind (app/run/jobs.c: every job ends when its parent does).
# Usage: run_jobs_die.sh PBF
set -u
pbf=$1
tmp=$(mktemp -d)
trap 'pkill -KILL -f -- "--out ${tmp}/v" 2>/dev/null; rm -rf "${tmp}"' EXIT
"${pbf}" validate --fast --no-plots --jobs 2 --out "${tmp}/v" > "${tmp}/log" 2>&1 &
parent=$!
# wait until it runs its jobs
for _ in $(seq 1 200); do
    [[ -n "$(pgrep -P "${parent}")" ]] && break
    sleep 0.1
done
jobs_seen=$(pgrep -P "${parent}" | wc -l)
if [[ ${jobs_seen} -lt 1 ]]; then
    echo "FAIL pbf validate --jobs 2 started no job within 20 s"
    cat "${tmp}/log"
    exit 1
fi
kill -TERM "${parent}"
wait "${parent}"
rc=$?
left=""
for _ in $(seq 1 50); do
    left=$(pgrep -f -- "--out ${tmp}/v" || true)
    [[ -z "${left}" ]] && break
    sleep 0.1
done
if [[ -n "${left}" ]]; then
    echo "FAIL after SIGTERM to pbf validate (exit ${rc}), its jobs still run: $(echo ${left})"
    exit 1
fi
echo "ok   pbf validate stopped by SIGTERM (exit ${rc}) with ${jobs_seen} jobs running: none left"
