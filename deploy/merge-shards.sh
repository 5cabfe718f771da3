#!/bin/sh
# merge-shards.sh SHARDS SHARD_ROOT OUT [MERGE_FLAG...]
#
# The merge step of a sharded `octant conform --cases N --shard i/SHARDS` run whose shard i wrote
# its certificate into SHARD_ROOT/i: runs `octant merge OUT SHARD_ROOT/i...` on the shards that
# have a certificate.json. A shard without one (its task failed before writing it, was cancelled
# or never started) is left out and printed as not run here; octant merge then lists it under
# shards_not_run and the merged verdict is NOT CERTIFIED (docs/campaigns.md). POSIX sh, so that it
# runs in a minimal container; OCTANT names the octant binary (default: octant on PATH).
# Exit status: octant merge's (0 certified, 1 not certified, 2 refused), 2 when no shard has a
# certificate or the arguments are wrong.
set -u
if [ $# -lt 3 ]; then
	echo "usage: merge-shards.sh SHARDS SHARD_ROOT OUT [MERGE_FLAG...]: expected at least 3 arguments, found $#" >&2
	exit 2
fi
n=$1 root=$2 out=$3
shift 3
case $n in
'' | *[!0-9]* | 0*)
	echo "merge-shards.sh: SHARDS: expected a whole number of shards >= 1, found '$n'" >&2
	exit 2
	;;
esac
octant=${OCTANT:-octant}
set --  "$@" "$out"
found=0
i=0
while [ "$i" -lt "$n" ]; do
	if [ -f "$root/$i/certificate.json" ]; then
		set -- "$@" "$root/$i"
		found=$((found + 1))
	else
		echo "merge-shards.sh: shard $i/$n: no certificate in $root/$i (its task failed before writing one, or did not run): not run"
	fi
	i=$((i + 1))
done
if [ "$found" -eq 0 ]; then
	echo "merge-shards.sh: none of the $n shards under $root has a certificate.json: nothing to merge" >&2
	exit 2
fi
echo "merge-shards.sh: $octant merge $*"
exec "$octant" merge "$@"
