// bwcheck: an independent C check of ckbench's bandwidth ceilings (issues
// #3, #10). Same method as roofline.Measure: a pinned thread, one arena for
// every size, a warm-up, samples of at least 1 ms (the set read reps times
// in one call), median of the samples, and the best of PASSES passes over
// all sizes in turn (a neighbour on a shared host that slows one pass does
// not lower the ceiling); 8 accumulators of the widest loads (read),
// 8-vector copies, normal and non-temporal stores.
//
// Build and compare (gcc or clang; AVX2 or AVX-512 CPUs):
//
//   gcc -O3 -march=native -o /tmp/bwcheck roofline/testdata/bwcheck.c
//   /tmp/bwcheck > /tmp/bw.tsv
//   ckbench roofline --threads 1 --run-id rl
//   go run roofline/testdata/bwcompare.go out/rl/roofline.json /tmp/bw.tsv
//
// On an AVX-512 CPU, add -mno-avx512f to build the AVX2 loops and compare
// them with `ckbench roofline --isa avx2` (the code an AVX2-only CPU runs);
// `make bwcheck` does both.
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static float sink;

// The widest loads the compiler was allowed: AVX-512 with -march=native on
// a CPU that has it, else AVX2 (-march=native on an AVX2-only CPU, or
// -mno-avx512f on an AVX-512 one, to check ckbench's avx2 tier there).
#ifdef __AVX512F__
#define WIDTH "avx512"
#define VF 16
typedef __m512 vec;
#define vzero _mm512_setzero_ps
#define vload _mm512_load_ps
#define vadd _mm512_add_ps
#define vstore _mm512_store_ps
#define vstream _mm512_stream_ps
#define vset1 _mm512_set1_ps
static float hsum(vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX2__)
#define WIDTH "avx2"
#define VF 8
typedef __m256 vec;
#define vzero _mm256_setzero_ps
#define vload _mm256_load_ps
#define vadd _mm256_add_ps
#define vstore _mm256_store_ps
#define vstream _mm256_stream_ps
#define vset1 _mm256_set1_ps
static float hsum(vec v) {
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}
#else
#error "bwcheck needs AVX2 or AVX-512: build with -march=native on an x86-64 CPU that has them"
#endif

// readk sums n floats (a multiple of 16 vectors) into 8 accumulators, its
// two halves side by side, two vectors of each at a time: the loop of
// ckbench's readSum2 kernels (the read curve reads two streams: from DRAM
// faster than one).
// It passes over them reps times in one call, as ckbench's does, so that an
// L1-sized set is not measured against the cost of a call and a reduction.
static void readk(float *p, size_t n, long reps) {
	vec a0 = vzero(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	float *q = p + n / 2;
	for (long r = 0; r < reps; r++)
	for (size_t i = 0; i < n / 2; i += 8 * VF) {
		a0 = vadd(a0, vload(p + i));
		a1 = vadd(a1, vload(p + i + VF));
		a4 = vadd(a4, vload(q + i));
		a5 = vadd(a5, vload(q + i + VF));
		a2 = vadd(a2, vload(p + i + 2 * VF));
		a3 = vadd(a3, vload(p + i + 3 * VF));
		a6 = vadd(a6, vload(q + i + 2 * VF));
		a7 = vadd(a7, vload(q + i + 3 * VF));
		a0 = vadd(a0, vload(p + i + 4 * VF));
		a1 = vadd(a1, vload(p + i + 5 * VF));
		a4 = vadd(a4, vload(q + i + 4 * VF));
		a5 = vadd(a5, vload(q + i + 5 * VF));
		a2 = vadd(a2, vload(p + i + 6 * VF));
		a3 = vadd(a3, vload(p + i + 7 * VF));
		a6 = vadd(a6, vload(q + i + 6 * VF));
		a7 = vadd(a7, vload(q + i + 7 * VF));
	}
	vec s = vadd(vadd(vadd(a0, a1), vadd(a2, a3)), vadd(vadd(a4, a5), vadd(a6, a7)));
	sink += hsum(s);
}

static void copyk(float *d, const float *s, size_t n) {
	for (size_t i = 0; i < n; i += 8 * VF)
		for (int j = 0; j < 8 * VF; j += VF) vstore(d + i + j, vload(s + i + j));
}

static void writek(float *d, size_t n, int nt) {
	vec v = vset1(0.5f);
	if (nt) {
		for (size_t i = 0; i < n; i += VF) vstream(d + i, v);
		_mm_sfence();
	} else {
		for (size_t i = 0; i < n; i += VF) vstore(d + i, v);
	}
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

// measure returns GB/s (bytes per call / median ns per call).
// arena is one buffer for every size, faulted once, as roofline.Measure
// keeps one per thread: on a VM the DRAM rate of a buffer depends on where
// the host put its pages (fresh 1 GiB buffers read at 12.5 to 15.5 GB/s
// here), so both programs read from the same kind of allocation.
static float *arena;
#define ARENA (2ul << 30)

static double measure(int kind, size_t bytes) {
	size_t n = bytes / 4;
	if (!arena) {
		arena = aligned_alloc(64, 2 * ARENA);
		for (size_t i = 0; i < 2 * ARENA / 4; i++) arena[i] = 1.0f;
	}
	float *a = arena, *b = arena + ARENA / 4;
	size_t half = n / 2 / 128 * 128;
	#define CALL(reps) do { switch (kind) { \
		case 0: readk(a, n, reps); break; \
		case 1: for (long r_ = 0; r_ < (reps); r_++) copyk(b, a, half); break; \
		case 2: for (long r_ = 0; r_ < (reps); r_++) writek(a, n, 0); break; \
		default: for (long r_ = 0; r_ < (reps); r_++) writek(a, n, 1); } } while (0)
	double t0 = now();
	while (now() - t0 < 20e6) CALL(1);
	long reps = 1;
	for (;;) {
		double s = now();
		CALL(reps);
		if (now() - s >= 1e6) break;
		reps *= 2;
	}
	double samples[200];
	int k = 0;
	double begin = now();
	while (k < 200 && (k < 10 || now() - begin < 200e6)) {
		double s = now();
		CALL(reps);
		samples[k++] = (now() - s) / reps;
	}
	qsort(samples, k, sizeof samples[0], cmp);
	double moved = kind == 1 ? 2.0 * half * 4 : (double)bytes;
	return moved / samples[k / 2];
}

// Output, one line per measurement: kernel, working set in bytes, GB/s
// (best of PASSES passes over all sizes in turn). roofline/testdata/
// bwcompare.go reads it beside a roofline.json.
enum { NSIZES = 19, PASSES = 4 };

int main(int argc, char **argv) {
	int cpu = 1, all = 0, nsizes = NSIZES;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-all")) all = 1;
		else if (!strcmp(argv[i], "-cpu") && i + 1 < argc) cpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-sizes") && i + 1 < argc && atoi(argv[i + 1]) > 0) nsizes = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bwcheck [-cpu N] [-all] [-sizes K]\n"
			                "  read bandwidth from 4 KiB to 1 GiB (powers of two) on CPU N (default 1);\n"
			                "  -all: also copy, write and write-nt; -sizes K: only the first K sizes\n");
			return 2;
		}
	}
	if (nsizes > NSIZES) nsizes = NSIZES;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set)) {
		perror("sched_setaffinity");
		return 2;
	}
	const char *names[] = {"read", "copy", "write", "write-nt"};
	int kinds = all ? 4 : 1;
	static double best[4][NSIZES];
	for (int p = 0; p < PASSES; p++)
		for (int s = 0; s < nsizes; s++)
			for (int k = 0; k < kinds; k++) {
				double v = measure(k, (size_t)4096 << s);
				if (v > best[k][s]) best[k][s] = v;
			}
	printf("# bwcheck %s, CPU %d, best of %d passes\n", WIDTH, cpu, PASSES);
	for (int k = 0; k < kinds; k++)
		for (int s = 0; s < nsizes; s++) printf("%s\t%zu\t%.2f\n", names[k], (size_t)4096 << s, best[k][s]);
	return sink == 12345.0f;
}
