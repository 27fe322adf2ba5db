/*
 * The verdicts of `pbf validate` (app/validate/): a value that misses its target is "missed"
 * even when it is within the looser CI tolerance; the CI verdict is separate and named as such.
 * No simulation runs here (`ctest -L validation` runs the cases themselves).
 */
#include <math.h>
#include <string.h>

#include "test.h"

#include "validate.h"
#include "validate_template.h"

static void test_target_verdict(void) {
    /* at most the target (ge = 0) */
    ENSURE(pbfapp_validate_verdict(0.4, 0.5, 0) == PBFAPP_VERDICT_MET);
    ENSURE(pbfapp_validate_verdict(0.5, 0.5, 0) == PBFAPP_VERDICT_MET);
    ENSURE(pbfapp_validate_verdict(0.785, 0.5, 0) == PBFAPP_VERDICT_MISSED);
    /* at least the target (ge = 1): a yes/no check, 1 = yes */
    ENSURE(pbfapp_validate_verdict(1.0, 1.0, 1) == PBFAPP_VERDICT_MET);
    ENSURE(pbfapp_validate_verdict(0.0, 1.0, 1) == PBFAPP_VERDICT_MISSED);
    /* not measured, and a measurement that is not a number (a failed run) */
    ENSURE(pbfapp_validate_verdict(NAN, 0.5, 0) == PBFAPP_VERDICT_NOT_RUN);
    ENSURE(pbfapp_validate_verdict(INFINITY, 0.5, 0) == PBFAPP_VERDICT_MISSED);
    ENSURE(strcmp(pbfapp_validate_verdict_name(PBFAPP_VERDICT_MET), "met") == 0);
    ENSURE(strcmp(pbfapp_validate_verdict_name(PBFAPP_VERDICT_MISSED), "missed") == 0);
    ENSURE(strcmp(pbfapp_validate_verdict_name(PBFAPP_VERDICT_NOT_RUN), "not run") == 0);
}

static void test_ci_verdict_is_separate(void) {
    /* 0.785 % against a target of 0.5 % and a CI tolerance of 1 %: missed, but CI passes */
    ENSURE(pbfapp_validate_verdict(0.785, 0.5, 0) == PBFAPP_VERDICT_MISSED);
    ENSURE(pbfapp_validate_ci_verdict(0.785, 1.0, 0) == PBFAPP_CI_WITHIN);
    ENSURE(pbfapp_validate_ci_verdict(1.2, 1.0, 0) == PBFAPP_CI_OUTSIDE);
    ENSURE(pbfapp_validate_ci_verdict(0.785, NAN, 0) == PBFAPP_CI_NOT_CHECKED);
    ENSURE(pbfapp_validate_ci_verdict(NAN, 1.0, 0) == PBFAPP_CI_OUTSIDE);
    ENSURE(strstr(pbfapp_validate_ci_verdict_name(PBFAPP_CI_WITHIN), "CI tolerance") != NULL);
}

static void test_line_of_a_missed_target_within_the_ci_tolerance(void) {
    char line[512];
    pbfapp_validate_check_line(line, sizeof line, "settled: average density error ≤ 0.5 %", "%",
                               0.785, 0.5, 1.0, 0, 18);
    printf("%s\n", line);
    ENSURE(strncmp(line, "missed ", 7) == 0);
    ENSURE(strstr(line, "n = 18: 0.785 % (target ≤ 0.5 %)") != NULL);
    ENSURE(strstr(line, "within the looser CI tolerance ≤ 1 %") != NULL);
    ENSURE(strstr(line, "ok") == NULL);
    ENSURE(strstr(line, "met") == NULL);
    ENSURE(strstr(line, "FAIL") == NULL);
}

static void test_line_of_a_met_target(void) {
    char line[512];
    pbfapp_validate_check_line(line, sizeof line, "front within 10 %", "%", 7.46, 10.0, 10.0, 0,
                               18);
    printf("%s\n", line);
    ENSURE(strcmp(line, "met     front within 10 %: n = 18: 7.46 % (target ≤ 10 %)") == 0);
}

static void test_line_outside_the_ci_tolerance(void) {
    char line[512];
    pbfapp_validate_check_line(line, sizeof line, "whole run: maximum density error ≤ 3 %", "%",
                               9.5, 3.0, 9.0, 0, 18);
    printf("%s\n", line);
    ENSURE(strncmp(line, "missed ", 7) == 0);
    ENSURE(strstr(line, "outside the CI tolerance ≤ 9 %: FAIL") != NULL);
    /* the CI tolerance is the target itself */
    pbfapp_validate_check_line(line, sizeof line, "front within 10 %", "%", 10.4, 10.0, 10.0, 0,
                               18);
    printf("%s\n", line);
    ENSURE(strstr(line, "missed  front within 10 %: n = 18: 10.4 % (target ≤ 10 %); outside the "
                        "CI tolerance ≤ 10 % (the target): FAIL") == line);
}

static void test_line_of_a_yes_no_check(void) {
    char line[512];
    pbfapp_validate_check_line(line, sizeof line, "stable for 1 s", "", 0.0, 1.0, 1.0, 1, 18);
    printf("%s\n", line);
    ENSURE(strncmp(line, "missed ", 7) == 0);
    ENSURE(strstr(line, "n = 18: no (target yes); the CI test requires yes: FAIL") != NULL);
    pbfapp_validate_check_line(line, sizeof line, "stable for 1 s", "", 1.0, 1.0, 1.0, 1, 18);
    ENSURE(strcmp(line, "met     stable for 1 s: n = 18: yes (target yes)") == 0);
    /* not run and not checked by CI */
    pbfapp_validate_check_line(line, sizeof line, "stable for 1 s", "", NAN, 1.0, NAN, 1, 18);
    printf("%s\n", line);
    ENSURE(strncmp(line, "not run ", 8) == 0);
    ENSURE(strstr(line, "CI") == NULL);
}

/* The reports' text templates: placeholders filled with their format, other text as it is. */
static void test_template(void) {
    const tvalue v[] = {TV_F("L", 0.146), TV_D("n", 18), TV_S("out", "docs/validation"),
                        TV_F("shift", 0.0123)};
    char buf[256] = "";
    FILE *f = tmpfile();
    ENSURE(f != NULL);
    if (!f) return;
    template_write(f, "L = {L:%.3f} m, n = {n}, `{out}/`, {shift:%+.3f}, 5 % {not a value}", v,
                   sizeof v / sizeof v[0]);
    rewind(f);
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = '\0';
    fclose(f);
    printf("%s\n", buf);
    ENSURE(strcmp(buf, "L = 0.146 m, n = 18, `docs/validation/`, +0.012, 5 % {not a value}") == 0);
}

int main(int argc, char **argv) {
    test_begin(argc, argv);
    RUN_SUBTEST(test_target_verdict);
    RUN_SUBTEST(test_ci_verdict_is_separate);
    RUN_SUBTEST(test_line_of_a_missed_target_within_the_ci_tolerance);
    RUN_SUBTEST(test_line_of_a_met_target);
    RUN_SUBTEST(test_line_outside_the_ci_tolerance);
    RUN_SUBTEST(test_line_of_a_yes_no_check);
    RUN_SUBTEST(test_template);
    return test_end();
}
