/* The public header compiles as strict C99 (-std=c99 -Wall -Wextra -pedantic -Werror)
 * and its version macros agree with the library (afs_version, afs_version_number). */
#include "afserialization.h"
#include <stdio.h>
#include <string.h>

int main(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", AFS_VERSION_MAJOR, AFS_VERSION_MINOR, AFS_VERSION_PATCH);
    if (strcmp(afs_version(), expected) != 0) {
        fprintf(stderr, "afs_version() %s != header %s\n", afs_version(), expected);
        return 1;
    }
    if (AFS_VERSION_NUMBER != AFS_VERSION_MAJOR * 10000 + AFS_VERSION_MINOR * 100 + AFS_VERSION_PATCH) return 1;
    if (afs_version_number() != AFS_VERSION_NUMBER) {
        fprintf(stderr, "afs_version_number() %u != AFS_VERSION_NUMBER %d\n", afs_version_number(), AFS_VERSION_NUMBER);
        return 1;
    }
    if (AFS_NTS != SIZE_MAX) return 1;
    if (sizeof(afs_error) < 512 + 2 * sizeof(int)) return 1;
    printf("header_c99: afserialization %s\n", afs_version());
    return 0;
}
