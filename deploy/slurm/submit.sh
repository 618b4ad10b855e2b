#!/usr/bin/env bash
# Submits a fleet run to Slurm: one ckbench job per node (a job array over a
# partition, or one job per named node), each running the whole suite on a
# node of its own (--exclusive), then a compare job that runs after all of
# them succeed and writes the fleet comparison and report.
#
#   deploy/slurm/submit.sh --results /shared/ckbench --partition lab --count 8
#   deploy/slurm/submit.sh --results /shared/ckbench --nodelist sku-a1,sku-a2,sku-b1 -- --preset full --threads 1,all
#
# Flags after -- go to ckbench sweep all (default: --preset default).
# --ckbench is the binary (default: ckbench on PATH, else bin/ckbench): it
# and --results must be on a file system every node sees. --shared runs
# the tasks without --exclusive, one CPU each (a test on a small cluster:
# the numbers then share a node and are not a node's).
# An array over a partition gives each task a node of its own while the
# partition has --count free nodes; two tasks can still follow each other
# on one node. --nodelist names each node, one job each: every node once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results="" partition="" count="" nodelist="" shared=0 ckbench=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
  --results) results=$2; shift 2 ;;
  --partition) partition=$2; shift 2 ;;
  --count) count=$2; shift 2 ;;
  --nodelist) nodelist=$2; shift 2 ;;
  --ckbench) ckbench=$2; shift 2 ;;
  --shared) shared=1; shift ;;
  --) shift; args=("$@"); break ;;
  -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "submit.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$results" ] || { echo "submit.sh: --results DIR: a folder every node sees" >&2; exit 2; }
if [ -z "$nodelist" ] && [ -z "$count" ]; then
  echo "submit.sh: give --count N (with --partition) or --nodelist n1,n2,..." >&2; exit 2
fi
if [ -z "$ckbench" ]; then
  ckbench=$(command -v ckbench || echo "$PWD/bin/ckbench")
fi
[ -x "$ckbench" ] || { echo "submit.sh: $ckbench is not an executable ckbench (make build, or --ckbench PATH)" >&2; exit 2; }
ckbench=$(cd "$(dirname "$ckbench")" && pwd)/$(basename "$ckbench")
mkdir -p "$results"
results=$(cd "$results" && pwd)
campaign=$(date +%Y%m%d-%H%M%S)
export CKBENCH="$ckbench" CKBENCH_RESULTS="$results" CKBENCH_CAMPAIGN="$campaign"
export CKBENCH_ARGS="${args[*]:-}"
opts=(--parsable --chdir "$results" --export=ALL)
[ -n "$partition" ] && opts+=(--partition "$partition")
if [ "$shared" = 1 ]; then opts+=(--cpus-per-task=1 --oversubscribe); else opts+=(--exclusive); fi
ids=()
if [ -n "$nodelist" ]; then
  IFS=, read -r -a nodes <<<"$nodelist"
  for n in "${nodes[@]}"; do
    ids+=("$(sbatch "${opts[@]}" --nodelist "$n" "$here/ckbench-node.sbatch")")
  done
else
  ids+=("$(sbatch "${opts[@]}" --array "0-$((count - 1))" "$here/ckbench-node.sbatch")")
fi
dep=$(IFS=:; echo "${ids[*]}")
copts=(--parsable --chdir "$results" --export=ALL --dependency "afterok:$dep" --kill-on-invalid-dep=yes)
[ -n "$partition" ] && copts+=(--partition "$partition")
[ "$shared" = 1 ] && copts+=(--cpus-per-task=1 --oversubscribe)
cmp=$(sbatch "${copts[@]}" "$here/ckbench-compare.sbatch")
echo "campaign $campaign: node job(s) ${ids[*]}, compare job $cmp"
echo "results: $results/<host>/$campaign-<task>/; fleet report: $results/fleet-$campaign/report/index.html"
echo "CKBENCH_CAMPAIGN=$campaign CKBENCH_NODE_JOBS=$dep CKBENCH_COMPARE_JOB=$cmp"
