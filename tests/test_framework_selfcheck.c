/*
 * Checks tests/test.h itself: a framework that let a NaN through ENSURE_NEAR, truncated integers
 * or exited 0 after a failure would make every other test unable to fail. The exit codes are
 * checked by ctest (tests/CMakeLists.txt: the WILL_FAIL entries).
 */
#include "test.h"

#include <stdint.h>

static int reached_after_failure;

/* Runs fn, which must fail exactly once, and takes its failure back off the count. */
static int fails_once(void (*fn)(void)) {
    test_state_ *s = test_state();
    int before = s->failures;
    int failed;
    printf("  (the next line is an expected failure)\n");
    fn();
    failed = s->failures - before;
    s->failures = before;
    return failed == 1;
}

static void ensure_false(void) {
    ENSURE(1 + 1 == 3);
    reached_after_failure = 1;
}

static void near_nan(void) {
    ENSURE_NEAR(NAN, 0.0, 1.0);
}
static void near_nan_tol(void) {
    ENSURE_NEAR(1.0, 1.0, NAN);
}
static void near_inf(void) {
    ENSURE_NEAR(INFINITY, INFINITY, 1.0);
}
static void near_far_below(void) {
    ENSURE_NEAR(1.0, 1.1, 0.05);
}
static void near_far_above(void) {
    ENSURE_NEAR(1.1f, 1.0f, 0.05);
}
static void eq_int_wide(void) {
    ENSURE_EQ_INT((int64_t)1 << 40, ((int64_t)1 << 40) + 1);
}

static void test_ensure_stops_on_failure(void) {
    reached_after_failure = 0;
    ENSURE(fails_once(ensure_false));
    ENSURE(reached_after_failure == 0);
}

static void test_ensure_near(void) {
    ENSURE(fails_once(near_nan));
    ENSURE(fails_once(near_nan_tol));
    ENSURE(fails_once(near_inf));
    ENSURE(fails_once(near_far_below));
    ENSURE(fails_once(near_far_above));
    ENSURE_NEAR(1.0, 1.0 + 1e-12, 1e-9);
    ENSURE_NEAR(-2.0f, -2.0f, 0.0);
}

static void test_ensure_eq_int(void) {
    ENSURE(fails_once(eq_int_wide));
    ENSURE_EQ_INT((int64_t)1 << 40, (int64_t)1 << 40);
    ENSURE_EQ_INT(-3, -3);
}

static void test_arguments_evaluated_once(void) {
    int i = 0, j = 0;
    ENSURE_NEAR(i++, 0, 0);
    ENSURE_EQ_INT(j++, 0);
    ENSURE(i == 1 && j == 1);
}

static void deliberate_failure(void) {
    ENSURE_EQ_INT(2 + 2, 5);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--deliberate-failure") == 0) {
        /* Must exit non-zero (ctest: WILL_FAIL). */
        test_begin(1, argv);
        RUN_SUBTEST(deliberate_failure);
        return test_end();
    }
    test_begin(argc, argv);
    RUN_SUBTEST(test_ensure_stops_on_failure);
    RUN_SUBTEST(test_ensure_near);
    RUN_SUBTEST(test_ensure_eq_int);
    RUN_SUBTEST(test_arguments_evaluated_once);
    return test_end();
}
