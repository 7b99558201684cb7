/* Tiny assertion helpers shared by the C test programs (one program per area, run by
 * ctest). A failed check prints file:line and what was expected, and the program exits
 * non-zero at the end through check_summary(). */
#ifndef AFS_TEST_CHECK_H
#define AFS_TEST_CHECK_H

#include <stdio.h>
#include <string.h>
#include "afserialization.h"

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond) do { check_count++; if (!(cond)) { check_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

/* Compare two C strings (either may be NULL). */
#define CHECK_STR(actual, expected) do { const char *a_ = (actual), *e_ = (expected); check_count++; \
    if (!((a_ == NULL && e_ == NULL) || (a_ && e_ && strcmp(a_, e_) == 0))) { check_failures++; \
    fprintf(stderr, "%s:%d: %s\n  got:      %s\n  expected: %s\n", __FILE__, __LINE__, #actual, \
            a_ ? a_ : "(null)", e_ ? e_ : "(null)"); } } while (0)

/* Check a status and, on failure statuses, that err names the expected status. */
#define CHECK_STATUS(call, expected) do { afs_status s_ = (call); check_count++; \
    if (s_ != (expected)) { check_failures++; \
    fprintf(stderr, "%s:%d: %s\n  got status %s, expected %s\n", __FILE__, __LINE__, #call, \
            afs_status_name(s_), afs_status_name(expected)); } } while (0)

/* Check that err carries `code` and a message containing `needle`. */
#define CHECK_ERROR(err, code_, needle) do { check_count++; \
    if ((err).code != (code_) || strstr((err).message, (needle)) == NULL) { check_failures++; \
    fprintf(stderr, "%s:%d: expected %s containing \"%s\"\n  got %s: %s\n", __FILE__, __LINE__, \
            afs_status_name(code_), (needle), afs_status_name((err).code), (err).message); } } while (0)

static int check_summary(const char *program) {
    if (check_failures) {
        fprintf(stderr, "%s: %d of %d checks failed\n", program, check_failures, check_count);
        return 1;
    }
    printf("%s: all %d checks passed\n", program, check_count);
    return 0;
}

#endif
