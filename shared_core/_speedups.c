/* Compiled versions of the hot loops of a single add: numpy or Python does the same where this
 * module was not built (setup.py marks it optional: no C compiler, no module, same answers).
 *
 * near(): the near-duplicate check of every add (shared_core.index.vectors). It compares the new
 *   fact's centred sign code with every stored one: the first two 64-bit words of every code
 *   (stored column by column) against a bound, then the rest for the few rows that pass. numpy
 *   needs seven passes over 100k-row temporaries (xor, bitwise_count, per word, then add, compare,
 *   nonzero): at 100k memories ~125 us alone and ~230 us of a ~1.1 ms add. One pass here, reading
 *   the two head words once and keeping only the rows that pass (AVX-512's one-instruction popcount
 *   or AVX2's nibble lookups where the CPU has them; at 1M rows ~0.25 ms against ~0.4): ~60 us
 *   alone, ~90-135 inside an add, where the 1.6 MB of codes come from memory. The few hundred rows
 *   that pass the head have their other words fetched ahead (prefetched, checked a batch later):
 *   one cache miss after another cost 35 us more in a store of similar texts.
 * nearest(): the codes nearest a search's query, the candidates it scores again: the bits that
 *   differ from the query's, each weighted by the query's component there (bit planes), in one
 *   pass over the codes (four rows at a time with AVX2) and one over their distances, where numpy
 *   needs passes per word and plane, a gather and an argpartition.
 * similarities(): the exact scores of the few rows left, their vectors fetched together.
 * fnv1a_64(): seed 003's content hash of every text written (shared_core.embed.hashes), ~20 us
 *   per 100-byte text in a Python loop.
 * hashing_signs(): the sign bits of the hashing embedder's feature directions (splitmix64 of the
 *   feature's key and each dimension's salt), for the ~16 features a new text brings: ~35 us in
 *   numpy, bit for bit the same here.
 * hashing_project(): one text's weighted sum of its features' directions, where numpy needs ~15
 *   calls on small arrays (together 11 % of a single add at 100k). Its sums run in feature order,
 *   numpy's in its matrix product's, so a weight of 1 + ln(count) may round differently in the
 *   last bit: the vectors agree to 1e-6, the others exactly.
 *
 * tests/core/test_near_duplicates.py and test_embedders.py compare each with its fallback.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define OPENKOI_X86 1
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

static inline int popcount64(uint64_t x) {
#if defined(__GNUC__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
#endif
}

/* -- near ------------------------------------------------------------------------------------- */

/* What one scan needs: the head columns, the row-major tail, the query's code and the bounds;
 * the rows that pass go to slots/dist (up to cap of them; count says how many passed). Rows that
 * pass the head wait in ``waiting`` while their tail words are fetched (prefetched when they
 * pass; checked a batch later, so the scan does not stall on each row's cache miss). */
#define WAITING 64
typedef struct {
    const uint64_t *head0, *head1, *tail, *code;
    Py_ssize_t size, tail_words, cap, count;
    int head_bound, bound;
    int64_t *slots;
    uint16_t *dist;
    Py_ssize_t waiting_row[WAITING];
    int waiting_distance[WAITING], waiting;
} Scan;

/* The second stage for one row that passed the head: the rest of its code, then the whole bound. */
static inline void check_tail(Scan *s, Py_ssize_t row, int head_distance) {
    int total = head_distance;
    const uint64_t *words = s->tail + row * s->tail_words;
    for (Py_ssize_t w = 0; w < s->tail_words; w++) {
        total += popcount64(words[w] ^ s->code[2 + w]);
    }
    if (total <= s->bound) {
        if (s->count < s->cap) {
            s->slots[s->count] = row;
            s->dist[s->count] = (uint16_t)total;
        }
        s->count++;
    }
}

static void check_waiting(Scan *s) {
    for (int i = 0; i < s->waiting; i++) check_tail(s, s->waiting_row[i], s->waiting_distance[i]);
    s->waiting = 0;
}

static inline void keep_if_near(Scan *s, Py_ssize_t row, int head_distance) {
    if (s->tail_words == 0) {
        check_tail(s, row, head_distance);
        return;
    }
    PREFETCH(s->tail + row * s->tail_words);
    s->waiting_row[s->waiting] = row;
    s->waiting_distance[s->waiting] = head_distance;
    if (++s->waiting == WAITING) check_waiting(s);
}

/* The head of rows from..size-1, one row at a time. Inlined into each kernel, so it is compiled with
 * that kernel's instructions (the popcnt kernel's POPCNT). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void scan_rows(Scan *s, Py_ssize_t from) {
    const uint64_t c0 = s->code[0], c1 = s->code[1];
    for (Py_ssize_t i = from; i < s->size; i++) {
        int d = popcount64(s->head0[i] ^ c0) + popcount64(s->head1[i] ^ c1);
        if (d <= s->head_bound) keep_if_near(s, i, d);
    }
}

static void scan_portable(Scan *s) { scan_rows(s, 0); }

#ifdef OPENKOI_X86
__attribute__((target("popcnt"))) static void scan_popcnt(Scan *s) { scan_rows(s, 0); }

/* The rows of a vector step from ``first`` that passed the head: bit k of ``near`` set for row
 * first + k, whose distance is lanes[k]. */
static inline void keep_lanes(Scan *s, Py_ssize_t first, unsigned near, const uint64_t *lanes) {
    do {
        int lane = __builtin_ctz(near);
        near &= near - 1;
        keep_if_near(s, first + lane, (int)lanes[lane]);
    } while (near);
}

/* Four rows at a time: each byte's set bits by a nibble lookup (vpshufb), summed per row (vpsadbw). */
__attribute__((target("avx2,popcnt"))) static void scan_avx2(Scan *s) {
    const __m256i lookup = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i c0 = _mm256_set1_epi64x((long long)s->code[0]);
    const __m256i c1 = _mm256_set1_epi64x((long long)s->code[1]);
    const __m256i limit = _mm256_set1_epi64x(s->head_bound + 1);
    Py_ssize_t i = 0;
    for (; i + 4 <= s->size; i += 4) {
        __m256i a = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(s->head0 + i)), c0);
        __m256i b = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(s->head1 + i)), c1);
        __m256i bits = _mm256_add_epi8(
            _mm256_add_epi8(_mm256_shuffle_epi8(lookup, _mm256_and_si256(a, nibble)),
                            _mm256_shuffle_epi8(lookup, _mm256_and_si256(_mm256_srli_epi16(a, 4), nibble))),
            _mm256_add_epi8(_mm256_shuffle_epi8(lookup, _mm256_and_si256(b, nibble)),
                            _mm256_shuffle_epi8(lookup, _mm256_and_si256(_mm256_srli_epi16(b, 4), nibble))));
        __m256i distances = _mm256_sad_epu8(bits, _mm256_setzero_si256()); /* 4 x 64-bit sums */
        int near = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(limit, distances)));
        if (near) { /* rare: a few hundred rows in 100k */
            uint64_t lanes[4];
            _mm256_storeu_si256((__m256i *)lanes, distances);
            keep_lanes(s, i, (unsigned)near, lanes);
        }
    }
    scan_rows(s, i);  /* the last rows, fewer than four */
}

/* Eight rows at a time, each row's set bits counted by one instruction (vpopcntq): a million
 * rows' codes (16 MB) in ~0.25 ms here against the AVX2 kernel's ~0.4, which counts by nibbles. */
__attribute__((target("avx512f,avx512vpopcntdq,popcnt"))) static void scan_avx512(Scan *s) {
    const __m512i c0 = _mm512_set1_epi64((long long)s->code[0]);
    const __m512i c1 = _mm512_set1_epi64((long long)s->code[1]);
    const __m512i limit = _mm512_set1_epi64(s->head_bound);
    Py_ssize_t i = 0;
    for (; i + 8 <= s->size; i += 8) {
        __m512i a = _mm512_xor_si512(_mm512_loadu_si512((const void *)(s->head0 + i)), c0);
        __m512i b = _mm512_xor_si512(_mm512_loadu_si512((const void *)(s->head1 + i)), c1);
        __m512i distances = _mm512_add_epi64(_mm512_popcnt_epi64(a), _mm512_popcnt_epi64(b));
        unsigned near = _mm512_cmple_epu64_mask(distances, limit);
        if (near) {
            uint64_t lanes[8];
            _mm512_storeu_si512((void *)lanes, distances);
            keep_lanes(s, i, near, lanes);
        }
    }
    scan_rows(s, i);  /* the last rows, fewer than eight */
}
#endif

/* -- nearest's ranking ------------------------------------------------------------------------ */

/* What one ranking needs: the codes (word w of row i at codes[w * stride + i]), the rows in scope
 * (mask, or every row), the query's code and its weights as bit planes (plane p, word w at
 * planes[p * words + w]: a differing bit counts 2^p for each plane that has it; plain Hamming
 * distance is one plane of ones); dist holds each row's distance (UNRANKED: out of scope) and hist
 * how many rows in scope lie at each. */
#define UNRANKED 0xffff
#define MAX_PLANES 3 /* the largest distance, 7 x 64 x 64 bits, stays below UNRANKED */
typedef struct {
    const uint64_t *codes, *code, *planes;
    const uint8_t *mask;
    Py_ssize_t words, stride, size;
    int levels;
    uint16_t *dist;
    Py_ssize_t *hist;
} Ranking;

static inline void keep_distance(Ranking *r, Py_ssize_t row, int d) {
    if (r->mask != NULL && !r->mask[row]) {
        r->dist[row] = UNRANKED;
        return;
    }
    r->dist[row] = (uint16_t)d;
    r->hist[d]++;
}

/* Rows from..size-1, one at a time. Inlined into each kernel, as scan_rows is. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void rank_rows(Ranking *r, Py_ssize_t from) {
    for (Py_ssize_t i = from; i < r->size; i++) {
        if (r->mask != NULL && !r->mask[i]) {
            r->dist[i] = UNRANKED;
            continue;
        }
        int d = 0;
        for (Py_ssize_t w = 0; w < r->words; w++) {
            uint64_t differ = r->codes[w * r->stride + i] ^ r->code[w];
            for (int p = 0; p < r->levels; p++) d += popcount64(differ & r->planes[p * r->words + w]) << p;
        }
        keep_distance(r, i, d);
    }
}

static void rank_portable(Ranking *r) { rank_rows(r, 0); }

#ifdef OPENKOI_X86
__attribute__((target("popcnt"))) static void rank_popcnt(Ranking *r) { rank_rows(r, 0); }

/* Four rows at a time (a word of each is contiguous in the column): each plane's bits counted by
 * nibble lookups, the planes summed bytewise as 4 x, 2 x and 1 x (at most 8 x 7 = 56 a byte), then
 * the bytes of each row (vpsadbw). Three planes cost the scalar kernel three popcounts a word:
 * 25 ms at a million rows of four words against ~9.5 here (plain Hamming one row at a time: 9.3). */
__attribute__((target("avx2,popcnt"))) static void rank_avx2(Ranking *r) {
    const __m256i lookup = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256i code[64], planes[MAX_PLANES][64];
    for (Py_ssize_t w = 0; w < r->words; w++) {
        code[w] = _mm256_set1_epi64x((long long)r->code[w]);
        for (int p = 0; p < r->levels; p++) planes[p][w] = _mm256_set1_epi64x((long long)r->planes[p * r->words + w]);
    }
    Py_ssize_t i = 0;
    for (; i + 4 <= r->size; i += 4) {
        __m256i total = _mm256_setzero_si256();
        for (Py_ssize_t w = 0; w < r->words; w++) {
            __m256i differ = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(r->codes + w * r->stride + i)),
                                              code[w]);
            __m256i bytes = _mm256_setzero_si256();
            for (int p = r->levels - 1; p >= 0; p--) { /* bytes = 2 x bytes + this plane's bits */
                __m256i bits = _mm256_and_si256(differ, planes[p][w]);
                __m256i count = _mm256_add_epi8(
                    _mm256_shuffle_epi8(lookup, _mm256_and_si256(bits, nibble)),
                    _mm256_shuffle_epi8(lookup, _mm256_and_si256(_mm256_srli_epi16(bits, 4), nibble)));
                bytes = _mm256_add_epi8(_mm256_add_epi8(bytes, bytes), count);
            }
            total = _mm256_add_epi64(total, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
        }
        uint64_t lanes[4];
        _mm256_storeu_si256((__m256i *)lanes, total);
        for (int lane = 0; lane < 4; lane++) keep_distance(r, i + lane, (int)lanes[lane]);
    }
    rank_rows(r, i); /* the last rows, fewer than four */
}
#endif

typedef void (*ScanFunction)(Scan *);
typedef void (*RankFunction)(Ranking *);
typedef struct {
    const char *name;
    ScanFunction scan;
    RankFunction rank;
} Kernel;

/* The scan's kernels in this build, fastest first; PyInit__speedups keeps those the CPU can run. */
static Kernel kernels[] = {
#ifdef OPENKOI_X86
    {"avx512", scan_avx512, rank_avx2},
    {"avx2", scan_avx2, rank_avx2},
    {"popcnt", scan_popcnt, rank_popcnt},
#endif
    {"portable", scan_portable, rank_portable},
};
static const int kernel_count = (int)(sizeof(kernels) / sizeof(kernels[0]));
static int usable[sizeof(kernels) / sizeof(kernels[0])];
static int current = 0;

static int get_buffer(PyObject *object, Py_buffer *view, int writable, Py_ssize_t at_least, const char *what) {
    if (PyObject_GetBuffer(object, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len < at_least) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, fewer than the %zd the scan reads", what, view->len,
                     at_least);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(near_doc,
"near(head0, head1, tail, tail_words, size, code, head_bound, bound, slots, dist) -> int\n\n"
"Rows 0..size-1 whose code differs from ``code`` in at most ``head_bound`` bits of its first two\n"
"words (``head0[i]``, ``head1[i]``) and at most ``bound`` bits in all (the rest in ``tail``, row\n"
"major, ``tail_words`` per row): their numbers go to ``slots`` (int64) and their distances to\n"
"``dist`` (uint16), as many as fit; returns how many rows passed (call again with larger\n"
"buffers when that is more than fit).");

static PyObject *near(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *head0_obj, *head1_obj, *tail_obj, *code_obj, *slots_obj, *dist_obj;
    Py_ssize_t tail_words, size;
    int head_bound, bound;
    if (!PyArg_ParseTuple(args, "OOOnnOiiOO:near", &head0_obj, &head1_obj, &tail_obj, &tail_words, &size,
                          &code_obj, &head_bound, &bound, &slots_obj, &dist_obj)) {
        return NULL;
    }
    if (size < 0 || tail_words < 0 || head_bound < 0 || bound < 0) {
        PyErr_SetString(PyExc_ValueError, "size, tail_words and the bounds must not be negative");
        return NULL;
    }
    Py_buffer head0, head1, tail, code, slots, dist;
    Py_ssize_t row_bytes = (Py_ssize_t)sizeof(uint64_t);
    if (get_buffer(head0_obj, &head0, 0, size * row_bytes, "head0") < 0) return NULL;
    if (get_buffer(head1_obj, &head1, 0, size * row_bytes, "head1") < 0) goto release_head0;
    if (get_buffer(tail_obj, &tail, 0, size * tail_words * row_bytes, "tail") < 0) goto release_head1;
    if (get_buffer(code_obj, &code, 0, (2 + tail_words) * row_bytes, "code") < 0) goto release_tail;
    if (get_buffer(slots_obj, &slots, 1, 0, "slots") < 0) goto release_code;
    if (get_buffer(dist_obj, &dist, 1, 0, "dist") < 0) goto release_slots;

    Scan scan = {
        .head0 = head0.buf, .head1 = head1.buf, .tail = tail.buf, .code = code.buf,
        .size = size, .tail_words = tail_words, .count = 0, .head_bound = head_bound, .bound = bound,
        .slots = slots.buf, .dist = dist.buf,
    };
    scan.cap = slots.len / (Py_ssize_t)sizeof(int64_t);
    if (dist.len / (Py_ssize_t)sizeof(uint16_t) < scan.cap) scan.cap = dist.len / (Py_ssize_t)sizeof(uint16_t);
    Py_BEGIN_ALLOW_THREADS
    kernels[current].scan(&scan);
    check_waiting(&scan);  /* the rows still waiting for their tails */
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&dist);
    PyBuffer_Release(&slots);
    PyBuffer_Release(&code);
    PyBuffer_Release(&tail);
    PyBuffer_Release(&head1);
    PyBuffer_Release(&head0);
    return PyLong_FromSsize_t(scan.count);

release_slots:
    PyBuffer_Release(&slots);
release_code:
    PyBuffer_Release(&code);
release_tail:
    PyBuffer_Release(&tail);
release_head1:
    PyBuffer_Release(&head1);
release_head0:
    PyBuffer_Release(&head0);
    return NULL;
}

PyDoc_STRVAR(kernels_doc, "near_kernels() -> tuple[str, ...]\n\nThe kernels of near() this CPU can run, fastest first.");

static PyObject *list_kernels(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    PyObject *names = PyList_New(0);
    for (int i = 0; names != NULL && i < kernel_count; i++) {
        if (!usable[i]) continue;
        PyObject *name = PyUnicode_FromString(kernels[i].name);
        if (name == NULL || PyList_Append(names, name) < 0) Py_CLEAR(names);
        Py_XDECREF(name);
    }
    if (names == NULL) return NULL;
    PyObject *tuple = PyList_AsTuple(names);
    Py_DECREF(names);
    return tuple;
}

PyDoc_STRVAR(use_doc, "use_near_kernel(name) -> str\n\nnear() and nearest() scan with the kernel ``name`` from now on (the tests try each);\nreturns the one before. nearest() runs the AVX2 kernel's ranking for avx512.");

static PyObject *use_kernel(PyObject *module, PyObject *arg) {
    (void)module;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) return NULL;
    for (int i = 0; i < kernel_count; i++) {
        if (usable[i] && strcmp(kernels[i].name, name) == 0) {
            const char *before = kernels[current].name;
            current = i;
            return PyUnicode_FromString(before);
        }
    }
    PyErr_Format(PyExc_ValueError, "no kernel %R on this CPU; near_kernels() lists those there are", arg);
    return NULL;
}

/* -- nearest ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(nearest_doc,
"nearest(codes, words, stride, size, mask, code, pool, slots, planes=None) -> int\n\n"
"The ``pool`` rows of 0..size-1 (those where ``mask`` is true; None: all) whose sign codes are\n"
"nearest ``code`` in Hamming distance, ties to the lower row, in row order into ``slots`` (int64);\n"
"returns how many were written (fewer than ``pool`` when fewer rows are in scope). Word w of row i\n"
"is codes[w * stride + i] (uint64). ``planes`` (uint64, 1 to 3 planes of ``words`` words): a bit\n"
"that differs counts 2^p for each plane p that has it set, instead of 1. One pass over the codes,\n"
"then one over their distances: numpy needs a pass per word, a gather and an argpartition (23 ms\n"
"at 1M rows of 384 bits against ~6).");

static PyObject *nearest(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *codes_obj, *mask_obj, *code_obj, *slots_obj, *planes_obj = Py_None;
    Py_ssize_t words, stride, size, pool;
    if (!PyArg_ParseTuple(args, "OnnnOOnO|O:nearest", &codes_obj, &words, &stride, &size, &mask_obj, &code_obj,
                          &pool, &slots_obj, &planes_obj)) {
        return NULL;
    }
    if (words < 1 || words > 64 || size < 0 || stride < size || pool < 0) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= words <= 64, 0 <= size <= stride and pool >= 0");
        return NULL;
    }
    Py_buffer codes, mask = {0}, code, slots, planes = {0};
    PyObject *result = NULL;
    Py_ssize_t row_bytes = (Py_ssize_t)sizeof(uint64_t);
    if (get_buffer(codes_obj, &codes, 0, ((words - 1) * stride + size) * row_bytes, "codes") < 0) return NULL;
    int masked = mask_obj != Py_None;
    if (masked && get_buffer(mask_obj, &mask, 0, size, "mask") < 0) goto release_codes;
    if (get_buffer(code_obj, &code, 0, words * row_bytes, "code") < 0) goto release_mask;
    int weighted = planes_obj != Py_None;
    if (weighted && get_buffer(planes_obj, &planes, 0, words * row_bytes, "planes") < 0) goto release_code;
    int levels = weighted ? (int)(planes.len / (words * row_bytes)) : 1;
    if (weighted && (planes.len % (words * row_bytes) != 0 || levels > MAX_PLANES)) {
        PyErr_Format(PyExc_ValueError, "planes must hold 1 to %d planes of %zd words", MAX_PLANES, words);
        goto release_planes;
    }
    if (get_buffer(slots_obj, &slots, 1, pool * (Py_ssize_t)sizeof(int64_t), "slots") < 0) goto release_planes;

    Py_ssize_t bins = ((1 << levels) - 1) * 64 * words + 1;
    uint16_t *dist = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(uint16_t));
    Py_ssize_t *hist = PyMem_Calloc((size_t)bins, sizeof(Py_ssize_t));
    if (dist == NULL || hist == NULL) {
        PyErr_NoMemory();
        goto free_buffers;
    }
    uint64_t ones[64]; /* no planes: every bit counts 1 */
    for (Py_ssize_t w = 0; w < words; w++) ones[w] = ~(uint64_t)0;
    Ranking ranking = {
        .codes = codes.buf, .code = code.buf, .planes = weighted ? (const uint64_t *)planes.buf : ones,
        .mask = masked ? mask.buf : NULL, .words = words, .stride = stride, .size = size, .levels = levels,
        .dist = dist, .hist = hist,
    };
    int64_t *out = slots.buf;
    Py_ssize_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    kernels[current].rank(&ranking);
    /* the distance below which every row is kept, and how many rows at it are kept too */
    Py_ssize_t cutoff = 0, below = 0;
    while (cutoff < bins && below + hist[cutoff] < pool) below += hist[cutoff++];
    Py_ssize_t at_cutoff = pool - below;
    for (Py_ssize_t i = 0; i < size && count < pool; i++) {
        Py_ssize_t d = dist[i];
        if (d < cutoff || (d == cutoff && at_cutoff > 0)) {
            if (d == cutoff) at_cutoff--;
            out[count++] = i;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(count);

free_buffers:
    PyMem_Free(hist);
    PyMem_Free(dist);
    PyBuffer_Release(&slots);
release_planes:
    if (weighted) PyBuffer_Release(&planes);
release_code:
    PyBuffer_Release(&code);
release_mask:
    if (masked) PyBuffer_Release(&mask);
release_codes:
    PyBuffer_Release(&codes);
    return result;
}

/* -- similarities ------------------------------------------------------------------------------ */

PyDoc_STRVAR(similarities_doc,
"similarities(vectors, slots, query, out)\n\n"
"out[i] = vectors[slots[i]] . query, summed in float64: the exact scores of the rows near() kept.\n"
"``vectors`` is a float32 matrix of len(query) columns; the rows are fetched together first\n"
"(prefetched), as they lie anywhere in it.");

static PyObject *similarities(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *vectors_obj, *slots_obj, *query_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOO:similarities", &vectors_obj, &slots_obj, &query_obj, &out_obj)) return NULL;
    Py_buffer vectors, slots, query, out;
    PyObject *result = NULL;
    if (get_buffer(vectors_obj, &vectors, 0, 0, "vectors") < 0) return NULL;
    if (get_buffer(slots_obj, &slots, 0, 0, "slots") < 0) goto release_vectors;
    if (get_buffer(query_obj, &query, 0, 0, "query") < 0) goto release_slots;
    Py_ssize_t count = slots.len / (Py_ssize_t)sizeof(int64_t), dims = query.len / (Py_ssize_t)sizeof(float);
    if (get_buffer(out_obj, &out, 1, count * (Py_ssize_t)sizeof(double), "out") < 0) goto release_query;
    Py_ssize_t rows = dims ? vectors.len / (dims * (Py_ssize_t)sizeof(float)) : 0;
    const int64_t *slot = slots.buf;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (slot[i] < 0 || slot[i] >= rows) {
            PyErr_Format(PyExc_ValueError, "slot %lld is not one of the %zd rows of vectors", (long long)slot[i], rows);
            goto release_out;
        }
    }
    const float *matrix = vectors.buf, *q = query.buf;
    double *score = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count && i < 64; i++) {
        const char *row = (const char *)(matrix + slot[i] * dims);
        for (Py_ssize_t byte = 0; byte < dims * (Py_ssize_t)sizeof(float); byte += 64) PREFETCH(row + byte);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        const float *row = matrix + slot[i] * dims;
        double sum = 0.0;
        for (Py_ssize_t d = 0; d < dims; d++) sum += (double)row[d] * (double)q[d];
        score[i] = sum;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
release_out:
    PyBuffer_Release(&out);
release_query:
    PyBuffer_Release(&query);
release_slots:
    PyBuffer_Release(&slots);
release_vectors:
    PyBuffer_Release(&vectors);
    return result;
}

/* -- fnv1a_64 --------------------------------------------------------------------------------- */

PyDoc_STRVAR(fnv_doc,
"fnv1a_64(data, start) -> int\n\n64-bit FNV-1a of the bytes ``data``, continued from the state ``start``\n"
"(the offset basis for a fresh hash).");

static PyObject *fnv1a_64(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer data;
    unsigned long long start;
    if (!PyArg_ParseTuple(args, "y*K:fnv1a_64", &data, &start)) return NULL;
    uint64_t value = (uint64_t)start;
    const unsigned char *bytes = data.buf;
    for (Py_ssize_t i = 0; i < data.len; i++) {
        value ^= bytes[i];
        value *= 0x100000001B3ULL;
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLongLong(value);
}

/* -- hashing_signs ----------------------------------------------------------------------------- */

PyDoc_STRVAR(signs_doc,
"hashing_signs(keys, salts, out)\n\n"
"For each uint64 key and each of the uint64 ``salts`` (one per dimension), the top bit of\n"
"splitmix64's mix of key ^ salt, packed eight dimensions to a byte, first dimension in the high\n"
"bit (as numpy.packbits): row i of ``out`` (uint8, len(keys) x len(salts) / 8) for key i.");

static PyObject *hashing_signs(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *keys_obj, *salts_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO:hashing_signs", &keys_obj, &salts_obj, &out_obj)) return NULL;
    Py_buffer keys, salts, out;
    if (get_buffer(keys_obj, &keys, 0, 0, "keys") < 0) return NULL;
    if (get_buffer(salts_obj, &salts, 0, 0, "salts") < 0) goto release_keys;
    Py_ssize_t count = keys.len / (Py_ssize_t)sizeof(uint64_t), dims = salts.len / (Py_ssize_t)sizeof(uint64_t);
    if (dims % 8) {
        PyErr_Format(PyExc_ValueError, "salts: %zd dimensions, not a multiple of 8", dims);
        goto release_salts;
    }
    if (get_buffer(out_obj, &out, 1, count * (dims / 8), "out") < 0) goto release_salts;
    const uint64_t *k = keys.buf, *salt = salts.buf;
    unsigned char *bits = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        for (Py_ssize_t byte = 0; byte < dims / 8; byte++) {
            unsigned packed = 0;
            for (int j = 0; j < 8; j++) {
                uint64_t x = k[i] ^ salt[byte * 8 + j];
                x ^= x >> 30;
                x *= 0xBF58476D1CE4E5B9ULL;
                x ^= x >> 27;
                x *= 0x94D049BB133111EBULL;
                packed |= (unsigned)(x >> 63) << (7 - j);  /* splitmix64's last step keeps the top bit */
            }
            bits[i * (dims / 8) + byte] = (unsigned char)packed;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    PyBuffer_Release(&salts);
    PyBuffer_Release(&keys);
    Py_RETURN_NONE;

release_salts:
    PyBuffer_Release(&salts);
release_keys:
    PyBuffer_Release(&keys);
    return NULL;
}

/* -- hashing_project ----------------------------------------------------------------------------- */

PyDoc_STRVAR(project_doc,
"hashing_project(ids, weights, codes, out)\n\n"
"The hashing embedder's sum for one text: ``ids`` are its feature ids, each as often as it occurs;\n"
"each distinct id adds weights[id] x (1 + ln count) times its direction, +1 where its bit in\n"
"``codes`` (uint8 rows of dims / 8, first dimension in the high bit) is 0 and -1 where it is 1,\n"
"into ``out`` (float32, dims). Not normalised.");

static float byte_bits[256][8];  /* each byte's bits, first in the high bit, as 0.0 or 1.0 (filled at import) */

static int compare_ids(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

static PyObject *hashing_project(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *ids_obj, *weights_obj, *codes_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOO:hashing_project", &ids_obj, &weights_obj, &codes_obj, &out_obj)) return NULL;
    PyObject *ids = PySequence_Fast(ids_obj, "ids must be a sequence of feature ids");
    if (ids == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ids);
    Py_ssize_t *sorted = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n > 0 ? n : 1));
    if (sorted == NULL) {
        Py_DECREF(ids);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        sorted[i] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(ids, i));
        if (sorted[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(sorted);
            Py_DECREF(ids);
            return NULL;
        }
    }
    Py_DECREF(ids);
    Py_buffer weights, codes, out;
    PyObject *result = NULL;
    if (get_buffer(weights_obj, &weights, 0, 0, "weights") < 0) goto free_sorted;
    if (get_buffer(codes_obj, &codes, 0, 0, "codes") < 0) goto release_weights;
    if (get_buffer(out_obj, &out, 1, 0, "out") < 0) goto release_codes;
    Py_ssize_t dims = out.len / (Py_ssize_t)sizeof(float), row = dims / 8;
    Py_ssize_t features = weights.len / (Py_ssize_t)sizeof(float);
    if (dims % 8 || row == 0 || codes.len / row < features) {
        PyErr_Format(PyExc_ValueError, "codes hold %zd bytes: fewer than %zd features of %zd dimensions", codes.len,
                     features, dims);
        goto release_out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (sorted[i] < 0 || sorted[i] >= features) {
            PyErr_Format(PyExc_ValueError, "feature id %zd is not below the %zd weights", sorted[i], features);
            goto release_out;
        }
    }
    qsort(sorted, (size_t)n, sizeof(Py_ssize_t), compare_ids);
    const float *weight = weights.buf;
    const unsigned char *code = codes.buf;
    float *sum = out.buf, total = 0.0f;
    for (Py_ssize_t i = 0; i < n; i++) PREFETCH(code + sorted[i] * row);  /* rows anywhere in the table */
    for (Py_ssize_t d = 0; d < dims; d++) sum[d] = 0.0f;
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t id = sorted[i], count = 1;
        while (i + count < n && sorted[i + count] == id) count++;
        i += count;
        /* as numpy computes it: the float32 weight times a float64 (1 + ln count), rounded to float32 */
        float w = count == 1 ? weight[id] : (float)((double)weight[id] * (log((double)count) + 1.0));
        total += w;
        const unsigned char *bits = code + id * row;
        for (Py_ssize_t byte = 0; byte < row; byte++) {
            const float *bit = byte_bits[bits[byte]];  /* w x 0 or w x 1: exact, in any order of steps */
            float *o = sum + byte * 8;
            for (int j = 0; j < 8; j++) o[j] += w * bit[j];
        }
    }
    for (Py_ssize_t d = 0; d < dims; d++) sum[d] = total - 2.0f * sum[d];
    result = Py_None;
    Py_INCREF(result);
release_out:
    PyBuffer_Release(&out);
release_codes:
    PyBuffer_Release(&codes);
release_weights:
    PyBuffer_Release(&weights);
free_sorted:
    PyMem_Free(sorted);
    return result;
}

static PyMethodDef methods[] = {
    {"near", near, METH_VARARGS, near_doc},
    {"near_kernels", list_kernels, METH_NOARGS, kernels_doc},
    {"use_near_kernel", use_kernel, METH_O, use_doc},
    {"nearest", nearest, METH_VARARGS, nearest_doc},
    {"similarities", similarities, METH_VARARGS, similarities_doc},
    {"fnv1a_64", fnv1a_64, METH_VARARGS, fnv_doc},
    {"hashing_signs", hashing_signs, METH_VARARGS, signs_doc},
    {"hashing_project", hashing_project, METH_VARARGS, project_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "Compiled hot loops of shared_core, each with a numpy or Python fallback.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
#ifdef OPENKOI_X86
    __builtin_cpu_init();
#endif
    for (int i = 0; i < kernel_count; i++) {
        usable[i] = 1;
#ifdef OPENKOI_X86
        if (kernels[i].scan == scan_avx512) {
            usable[i] = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
        }
        if (kernels[i].scan == scan_avx2) usable[i] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
        if (kernels[i].scan == scan_popcnt) usable[i] = __builtin_cpu_supports("popcnt");
#endif
    }
    for (int v = 0; v < 256; v++) {
        for (int j = 0; j < 8; j++) byte_bits[v][j] = (float)((v >> (7 - j)) & 1);
    }
    current = kernel_count - 1;  /* portable: always usable */
    for (int i = kernel_count - 1; i >= 0; i--) {
        if (usable[i]) current = i;
    }
    return PyModule_Create(&module);
}
