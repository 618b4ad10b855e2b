#!/usr/bin/env bash
# Renders ckbench-fleet.yaml and ckbench-compare.yaml with the values
# given, to stdout (multi-document YAML for kubectl apply -f -).
#
#   deploy/k8s/render.sh --nodes 4 --image registry.example/ckbench:0.1 --cpus 8 --memory 16Gi
#
# Flags: --nodes N (pods, one per node), --image, --cpus (whole CPUs per
# pod), --memory, --storage (the claim), --campaign (default: the time),
# --sku VALUE (nodeSelector ckbench.dev/sku=VALUE), --args "sweep all flags"
# (default: --preset default --threads 1,all), --only fleet|compare.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
NODES=2 IMAGE=ckbench:latest CPUS=2 MEMORY=4Gi STORAGE=10Gi CAMPAIGN=$(date +%Y%m%d-%H%M%S) SKU="" CKBENCH_ARGS="--preset default --threads 1,all" ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
  --nodes) NODES=$2 ;; --image) IMAGE=$2 ;; --cpus) CPUS=$2 ;; --memory) MEMORY=$2 ;;
  --storage) STORAGE=$2 ;; --campaign) CAMPAIGN=$2 ;; --sku) SKU=$2 ;; --args) CKBENCH_ARGS=$2 ;; --only) ONLY=$2 ;;
  -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "render.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
case "$NODES" in ''|*[!0-9]*|0) echo "render.sh: --nodes $NODES: a count of nodes" >&2; exit 2 ;; esac
case "$CPUS" in ''|*[!0-9]*|0) echo "render.sh: --cpus $CPUS: whole CPUs (the static CPU manager pins only those)" >&2; exit 2 ;; esac
NODE_SELECTOR="{}"
[ -n "$SKU" ] && NODE_SELECTOR="{\"ckbench.dev/sku\": \"$SKU\"}"
render() {
  sed -e "s|\${NODES}|$NODES|g" -e "s|\${IMAGE}|$IMAGE|g" -e "s|\${CPUS}|$CPUS|g" -e "s|\${MEMORY}|$MEMORY|g" \
    -e "s|\${STORAGE}|$STORAGE|g" -e "s|\${CAMPAIGN}|$CAMPAIGN|g" -e "s|\${NODE_SELECTOR}|$NODE_SELECTOR|g" \
    -e "s|\${CKBENCH_ARGS}|$CKBENCH_ARGS|g" "$1"
}
[ "$ONLY" = compare ] || render "$here/ckbench-fleet.yaml"
[ -n "$ONLY" ] || echo "---"
[ "$ONLY" = fleet ] || render "$here/ckbench-compare.yaml"
