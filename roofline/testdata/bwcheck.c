// bwcheck: an independent C check of ckbench's bandwidth ceilings (issue #3).
// Same method as roofline.Measure: a pinned thread, per-size buffers, a
// warm-up, samples of at least 1 ms, median of the samples, and the best
// of PASSES passes over all sizes in turn (a neighbour on a shared host
// that slows one pass does not lower the ceiling); AVX-512 loads into 8
// accumulators (read), 8-vector copies, and normal/non-temporal stores.
// Build and run by hand:
//
//   gcc -O3 -march=native -o /tmp/bwcheck roofline/testdata/bwcheck.c && /tmp/bwcheck
//
// and compare with `ckbench roofline --threads 1` (levels, read curve).
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

static void readk(float *p, size_t n) {
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	for (size_t i = 0; i < n; i += 128) {
		a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
		a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
		a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
		a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
		a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
		a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
		a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
		a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
	}
	__m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
	                         _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
	sink += _mm512_reduce_add_ps(s);
}

static void copyk(float *d, const float *s, size_t n) {
	for (size_t i = 0; i < n; i += 128)
		for (int j = 0; j < 128; j += 16) _mm512_store_ps(d + i + j, _mm512_load_ps(s + i + j));
}

static void writek(float *d, size_t n, int nt) {
	__m512 v = _mm512_set1_ps(0.5f);
	if (nt) {
		for (size_t i = 0; i < n; i += 16) _mm512_stream_ps(d + i, v);
		_mm_sfence();
	} else {
		for (size_t i = 0; i < n; i += 16) _mm512_store_ps(d + i, v);
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
	#define CALL() do { switch (kind) { \
		case 0: readk(a, n); break; \
		case 1: copyk(b, a, half); break; \
		case 2: writek(a, n, 0); break; \
		default: writek(a, n, 1); } } while (0)
	double t0 = now();
	while (now() - t0 < 20e6) CALL();
	int calls = 1;
	for (;;) {
		double s = now();
		for (int i = 0; i < calls; i++) CALL();
		if (now() - s >= 1e6) break;
		calls *= 2;
	}
	double samples[200];
	int k = 0;
	double begin = now();
	while (k < 200 && (k < 10 || now() - begin < 200e6)) {
		double s = now();
		for (int i = 0; i < calls; i++) CALL();
		samples[k++] = (now() - s) / calls;
	}
	qsort(samples, k, sizeof samples[0], cmp);
	double moved = kind == 1 ? 2.0 * half * 4 : (double)bytes;
	return moved / samples[k / 2];
}

int main(void) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	sched_setaffinity(0, sizeof set, &set);
	const char *names[] = {"read", "copy", "write", "write-nt"};
	size_t sizes[] = {16 << 10, 512 << 10, 16 << 20, 1ul << 30};
	const char *levels[] = {"L1 (16 KiB)", "L2 (512 KiB)", "L3 (16 MiB)", "DRAM (1 GiB)"};
	enum { PASSES = 4 };
	double best[4][4] = {{0}};
	for (int p = 0; p < PASSES; p++)
		for (int s = 0; s < 4; s++)
			for (int k = 0; k < 4; k++) {
				double v = measure(k, sizes[s]);
				if (v > best[s][k]) best[s][k] = v;
			}
	for (int s = 0; s < 4; s++) {
		printf("%-13s", levels[s]);
		for (int k = 0; k < 4; k++) printf("  %s %6.1f GB/s", names[k], best[s][k]);
		printf("\n");
	}
	return sink == 12345.0f;
}
