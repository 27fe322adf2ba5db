/*
 * test.h — a tiny test framework for pbf's tests, in the style of Box2D's test macros.
 *
 *     #include "test.h"
 *
 *     static void test_default_def(void)
 *     {
 *         pbf_world_def def = pbf_default_world_def();
 *         ENSURE(pbf_world_def_validate(&def, NULL) == PBF_OK);
 *         ENSURE_EQ_INT(def.threads, 0);
 *         ENSURE_NEAR(def.rest_density, 1000.0, 1e-3);
 *     }
 *
 *     int main(int argc, char **argv)
 *     {
 *         test_begin(argc, argv);           // argv[1], if given, filters subtests by substring
 *         RUN_SUBTEST(test_default_def);
 *         return test_end();                // non-zero if anything failed or nothing ran
 *     }
 *
 * A failed ENSURE* prints "file:line: ..." with the expression and the values, marks the running
 * subtest failed and returns from the function it is in (so later lines never use a pointer that
 * was just found NULL). Use ENSURE* in void functions; in helpers returning a value, test a
 * condition and call test_fail_() yourself, or make the helper void.
 *
 * Subtests run in the order given, in one process; each is timed. `./test_x name` runs only the
 * subtests whose function name contains `name`; a filter that matches nothing is a failure.
 */
#ifndef PBF_TEST_H
#define PBF_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct test_state_ {
    const char *filter;  /* substring of subtest names to run, NULL = all */
    const char *current; /* name of the running subtest */
    int failures;        /* failed checks in the whole run */
    int subtests_run;
    int subtests_failed;
} test_state_;

/* One state per test program (a function-local static avoids unused-variable warnings). */
static inline test_state_ *test_state(void) {
    static test_state_ state;
    return &state;
}

static inline double test_now_(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#if defined(__GNUC__)
#define TEST_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define TEST_PRINTF_(f, a)
#endif

/* Records a failure; `fmt` describes it. Prefer the ENSURE* macros. */
TEST_PRINTF_(3, 4) static inline void test_fail_(const char *file, int line, const char *fmt, ...) {
    test_state_ *s = test_state();
    va_list ap;
    s->failures++;
    fprintf(stdout, "%s:%d: %s: ", file, line, s->current ? s->current : "main");
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

/* The condition must hold. */
#define ENSURE(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            test_fail_(__FILE__, __LINE__, "ENSURE(%s) failed", #cond);                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* |a - b| <= tol, all three converted to double; NaN anywhere fails. */
#define ENSURE_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double test_a_ = (double)(a), test_b_ = (double)(b), test_t_ = (double)(tol);              \
        if (!(fabs(test_a_ - test_b_) <= test_t_)) {                                               \
            test_fail_(__FILE__, __LINE__,                                                         \
                       "ENSURE_NEAR(%s, %s, %s) failed: %.9g vs %.9g, difference %.3g > %.3g", #a, \
                       #b, #tol, test_a_, test_b_, fabs(test_a_ - test_b_), test_t_);              \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* a == b as integers (long long). */
#define ENSURE_EQ_INT(a, b)                                                                        \
    do {                                                                                           \
        long long test_a_ = (long long)(a), test_b_ = (long long)(b);                              \
        if (test_a_ != test_b_) {                                                                  \
            test_fail_(__FILE__, __LINE__, "ENSURE_EQ_INT(%s, %s) failed: %lld != %lld", #a, #b,   \
                       test_a_, test_b_);                                                          \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Call at the start of main: takes the optional subtest filter from argv[1]. */
static inline void test_begin(int argc, char **argv) {
    test_state_ *s = test_state();
    s->filter = (argc > 1 && argv[1][0] != '\0') ? argv[1] : NULL;
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep output in order with crashes and sanitizers */
}

static inline void test_run_(void (*fn)(void), const char *name) {
    test_state_ *s = test_state();
    int before = s->failures;
    double t0;
    if (s->filter && !strstr(name, s->filter)) {
        return;
    }
    s->current = name;
    printf("[ RUN  ] %s\n", name);
    t0 = test_now_();
    fn();
    s->subtests_run++;
    if (s->failures != before) {
        s->subtests_failed++;
        printf("[ FAIL ] %s (%.3f s)\n", name, test_now_() - t0);
    } else {
        printf("[  OK  ] %s (%.3f s)\n", name, test_now_() - t0);
    }
    s->current = NULL;
}

/* Runs `fn` (a `void fn(void)`) unless the filter excludes it. */
#define RUN_SUBTEST(fn) test_run_(fn, #fn)

/* Call at the end of main and return its value: prints a summary; 0 only if at least one
 * subtest ran and no check failed. */
static inline int test_end(void) {
    test_state_ *s = test_state();
    if (s->subtests_run == 0) {
        printf("no subtest ran%s%s%s\n", s->filter ? " (filter \"" : "", s->filter ? s->filter : "",
               s->filter ? "\" matches none)" : "");
        return 1;
    }
    printf("%d passed, %d failed\n", s->subtests_run - s->subtests_failed, s->subtests_failed);
    if (s->failures != 0 && s->subtests_failed == 0) {
        printf("%d check(s) failed outside subtests\n", s->failures);
    }
    return s->failures == 0 ? 0 : 1;
}

#endif /* PBF_TEST_H */
