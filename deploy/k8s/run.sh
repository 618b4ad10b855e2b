#!/usr/bin/env bash
# Runs a fleet campaign on the cluster kubectl points at: the claim and
# the Indexed Job (one pod per node), a wait for every pod, then the
# compare Job; prints where the fleet report is on the claim.
#
#   deploy/k8s/run.sh --nodes 4 --image registry.example/ckbench:0.1 --cpus 8 --memory 16Gi
#
# Takes render.sh's flags. Kubernetes has no job dependencies: this
# script is the "afterok".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
campaign=$(date +%Y%m%d-%H%M%S)
"$here/render.sh" --campaign "$campaign" --only fleet "$@" | kubectl apply -f -
kubectl wait --for=condition=complete --timeout=24h "job/ckbench-$campaign"
"$here/render.sh" --campaign "$campaign" --only compare "$@" | kubectl apply -f -
kubectl wait --for=condition=complete --timeout=1h "job/ckbench-compare-$campaign"
echo "fleet report: /results/fleet-$campaign/report/index.html on the claim ckbench-results"
