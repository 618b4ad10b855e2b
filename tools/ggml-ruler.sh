#!/bin/sh
# ggml-ruler.sh: GGML's CPU backend as a ruler for ckbench, on this machine,
# in the same minutes. It times GGML's FLASH_ATTN_EXT on the decode shape
# that issue #12 compares (one query token, 32 query heads over 8 f16 KV
# heads, hd 128, 4096 keys) and ckbench's decode-flash-gqa on the same
# shape, at one thread each, in alternation (ROUNDS, default 3), and prints
# both times per call, each round's ratio and their median.
#
#   tools/ggml-ruler.sh [GGML_DIR]
#
# GGML_DIR (default ${TMPDIR:-/tmp}/ggml-ruler) is cloned from
# https://github.com/ggml-org/ggml when it holds no checkout, and built
# there (cmake, Release, GGML_NATIVE=ON): GGML is measured, never copied
# into ckbench. Its test-backend-ops runs on every core; the script sets its
# thread count (N_THREADS in tests/test-backend-ops.cpp, in GGML_DIR's
# copy) to THREADS (default 1) and pins it with taskset where there is one.
# Needs git, cmake, a C++ compiler and Go. Not part of make test.
set -eu

dir=${1:-${TMPDIR:-/tmp}/ggml-ruler}
threads=${THREADS:-1}
rounds=${ROUNDS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)

for tool in git cmake go; do
	command -v "$tool" >/dev/null 2>&1 || { echo "ggml-ruler: $tool not found: install it first" >&2; exit 2; }
done
case $threads in
'' | *[!0-9]* | 0) echo "ggml-ruler: THREADS=$threads: give a thread count ≥ 1" >&2; exit 2 ;;
esac
case $rounds in
'' | *[!0-9]* | 0) echo "ggml-ruler: ROUNDS=$rounds: give a count ≥ 1" >&2; exit 2 ;;
esac

if [ ! -d "$dir/.git" ]; then
	echo "ggml-ruler: cloning ggml into $dir" >&2
	git clone --quiet --depth 1 https://github.com/ggml-org/ggml "$dir"
fi
src=$dir/tests/test-backend-ops.cpp
# The one line that sets the thread count (outside Emscripten).
sed -i.orig "s/^\(#[[:space:]]*define N_THREADS\) std::thread::hardware_concurrency()\$/\1 $threads/; s/^\(#[[:space:]]*define N_THREADS\) [0-9][0-9]*\$/\1 $threads/" "$src"
if ! grep -q "define N_THREADS $threads\$" "$src"; then
	echo "ggml-ruler: could not set N_THREADS to $threads in $src (its form changed?): set it there by hand and run again" >&2
	exit 1
fi
echo "ggml-ruler: building test-backend-ops ($(git -C "$dir" log -1 --format='%h %cs'), N_THREADS $threads)" >&2
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON >/dev/null
cmake --build "$dir/build" --target test-backend-ops -j >/dev/null

pin=""
if [ "$threads" = 1 ] && command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
	pin="taskset -c 0"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$root" && go build -o "$out/ckbench" ./cmd/ckbench)

# ggml_time: one test-backend-ops run of the shape, its µs per call. -p (a
# regex over a case's parameters) keeps the run to this shape's cases; the
# grep picks the one case if -p matched more.
ggml_time() {
	LD_LIBRARY_PATH="$dir/build/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" $pin "$dir/build/bin/test-backend-ops" perf -b CPU -o FLASH_ATTN_EXT \
		-p 'hsk=128,hsv=128,nh=8,nr23=\[4,1\],kv=4096,nb=1,.*type_K=f16,type_V=f16' 2>&1 |
		grep 'hsk=128,hsv=128,nh=8,nr23=\[4,1\],kv=4096,nb=1,' | grep 'type_K=f16,type_V=f16' | head -1 |
		sed -n 's/.* \([0-9.][0-9.]*\) us\/run.*/\1/p'
}

# ckbench_time: one ckbench sweep of the shape, the fastest timed tier's
# µs per call, its tier and status. It reads points.jsonl, one JSON object a
# line (points.csv quotes reasons that hold commas).
ckbench_time() {
	rm -rf "$out/ruler"
	"$out/ckbench" sweep attention --kernel decode-flash-gqa --heads 32:8 --ctx 4096 --kv f16 --hd 128 \
		--exp fast --threads "$threads" --min-time 2s --roofline none --no-progress --out "$out" --run-id ruler >/dev/null 2>&1 || return 0
	awk -v th="$threads" '
		function field(k, re) { return match($0, "\"" k "\":" re) ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) : "" }
		field("kernel", "\"[^\"]*\"") == "\"decode-flash-gqa\"" && field("th", "[0-9]+") == th {
			ns = field("ns_median", "[0-9.eE+]+")
			if (ns != "" && (best == "" || ns + 0 < best + 0)) { best = ns; isa = field("isa", "\"[^\"]*\""); st = field("status", "\"[^\"]*\"") }
		}
		END { if (best != "") { gsub(/"/, "", isa); gsub(/"/, "", st); printf "%.1f %s %s\n", best / 1000, isa, st } }' "$out/ruler/points.jsonl"
}

# Rounds alternate the two, so that a noisy spell of a shared host falls on
# both: the ratio is the median of the rounds' ratios.
echo "ggml-ruler: FLASH_ATTN_EXT (GGML) against decode-flash-gqa (ckbench): f16 K and V, hd 128, 8 KV heads × 4 query heads, 4096 keys, one token, $threads thread(s), $rounds rounds" >&2
ratios=""
r=1
while [ "$r" -le "$rounds" ]; do
	g=$(ggml_time)
	[ -n "$g" ] || { echo "ggml-ruler: test-backend-ops printed no FLASH_ATTN_EXT case of that shape (its test list changed?)" >&2; exit 1; }
	c=$(ckbench_time)
	[ -n "$c" ] || { echo "ggml-ruler: ckbench timed no decode-flash-gqa point: run $out/ckbench sweep attention --kernel decode-flash-gqa --heads 32:8 --ctx 4096 --kv f16 to see why" >&2; exit 1; }
	set -- $c
	ratio=$(awk -v g="$g" -v c="$1" 'BEGIN { printf "%.2f", g / c }')
	echo "round $r: GGML $g µs/call, ckbench $1 µs/call (tier $2, $3): ${ratio}×"
	ratios="$ratios $ratio"
	r=$((r + 1))
done
# ckbench drops the samples a pause of the host lengthened (the sampler's
# stall filter, where the host pauses); test-backend-ops averages over them.
pauses=$(grep -o 'host pauses: [^;"]*' "$out/ruler/machine.json" 2>/dev/null | head -1)
[ -z "$pauses" ] || echo "($pauses: ckbench's time leaves out the samples they lengthened, GGML's includes them)"
printf '%s\n' $ratios | sort -n | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "median ratio: %.2f× (the GGML time over the ckbench time; ckbench points marked unstable spread more than its 3 %% limit)\n", m }'
