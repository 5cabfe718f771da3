#!/usr/bin/env bash
# run.sh: the sharded run of this directory on a Kubernetes cluster (docs/campaigns.md): creates
# the run's volume (pvc.yaml) and the shard Job (shards-job.yaml), waits until that Job has ended,
# Complete or Failed (a shard with a failing case fails its index; the merge must still run and
# report it), then runs the merge Job (merge-job.yaml), waits for it and prints its log.
# KUBECTL names kubectl with any flags it needs (default: kubectl; e.g. KUBECTL="kubectl -n gpu").
# POLL is the seconds between two looks at a Job (default 30).
# Exit status: 0 when the merged certificate is CERTIFIED, 1 when it is not or the merge was
# refused (its log says which), 2 when a Job could not be created.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
read -r -a kubectl <<<"${KUBECTL:-kubectl}"
poll=${POLL:-30}

# ended JOB: waits until JOB has the condition Complete or Failed, and prints which.
ended() {
	local conds
	while :; do
		conds=$("${kubectl[@]}" get job "$1" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}')
		case " $conds " in
		*" Complete "*) echo Complete && return ;;
		*" Failed "*) echo Failed && return ;;
		esac
		sleep "$poll"
	done
}

"${kubectl[@]}" apply -f "$here/pvc.yaml" -f "$here/shards-job.yaml" || exit 2
echo "run.sh: job/octant-shards ended: $(ended octant-shards)"
"${kubectl[@]}" apply -f "$here/merge-job.yaml" || exit 2
merge=$(ended octant-merge)
"${kubectl[@]}" logs job/octant-merge || true
echo "run.sh: job/octant-merge ended: $merge (merged certificate: /run/octant/merged on claim octant-run)"
[ "$merge" = Complete ]
