#!/usr/bin/env bash
# submit.sh SHARDS CASES LIB RUN_DIR [CONFORM_FLAG...]
#
# Submits a sharded `octant conform --cases CASES` run to Slurm (docs/campaigns.md): a job array
# of SHARDS tasks, one GPU each (octant-shard.sbatch, --array=0-(SHARDS-1)), and the merge job
# (octant-merge.sbatch) with --dependency=afterany on the array, and prints both job ids. Shard i
# writes RUN_DIR/shards/i, the merge RUN_DIR/merged, Slurm's logs go to RUN_DIR/logs. RUN_DIR must
# be on a file system every node sees, and must hold no shards yet (a stale shard of the same
# flags would be merged as if it were this run's). Partition, account, time limit: sbatch reads
# SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT from the environment. OCTANT (the octant
# binary, default octant on PATH) is passed on to the jobs; SBATCH (default sbatch) names sbatch.
set -euo pipefail

die() {
	echo "submit.sh: $*" >&2
	exit 2
}

[ $# -ge 4 ] || die "usage: submit.sh SHARDS CASES LIB RUN_DIR [CONFORM_FLAG...]: expected at least 4 arguments, found $#"
shards=$1 cases=$2 lib=$3 run_dir=$4
shift 4
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "SHARDS: expected a whole number of shards >= 1, found '$shards'"
[[ $cases =~ ^(0|[1-9][0-9]*)$ ]] || die "CASES: expected a whole number of random cases per unit >= 0, found '$cases'"
[ -e "$lib" ] || die "LIB: $lib not found (a path on the submitting host, seen by the nodes at the same path)"
if [ -d "$run_dir/shards" ] && [ -n "$(ls -A "$run_dir/shards")" ]; then
	die "RUN_DIR: $run_dir/shards already holds shards: expected a fresh run directory (re-run one shard alone with sbatch --array=I, docs/campaigns.md)"
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
deploy=$(dirname "$here")
mkdir -p "$run_dir/logs"
run_dir=$(cd "$run_dir" && pwd)
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
sbatch=${SBATCH:-sbatch}
export OCTANT=${OCTANT:-octant}

# --parsable prints "JOBID" or "JOBID;CLUSTER".
array=$("$sbatch" --parsable --array=0-$((shards - 1)) --export=ALL \
	--output="$run_dir/logs/shard-%A_%a.out" \
	"$here/octant-shard.sbatch" "$shards" "$cases" "$lib" "$run_dir" "$@")
array_id=${array%%;*}
[[ $array_id =~ ^[0-9]+$ ]] || die "sbatch printed '$array' for the shard array: expected a job id"
merge=$("$sbatch" --parsable --dependency=afterany:"$array_id" --export=ALL \
	--output="$run_dir/logs/merge-%j.out" \
	"$here/octant-merge.sbatch" "$shards" "$run_dir" "$deploy")
merge_id=${merge%%;*}
[[ $merge_id =~ ^[0-9]+$ ]] || die "sbatch printed '$merge' for the merge job: expected a job id"
echo "shards: job $array_id (array 0-$((shards - 1)), one GPU each; logs $run_dir/logs/shard-${array_id}_I.out)"
echo "merge: job $merge_id (after every shard ends: --dependency=afterany:$array_id; result $run_dir/merged/certificate.json)"
