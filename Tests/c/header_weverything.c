/* The public header is clean under clang's -Weverything -Werror, as C99 and (compiled with
 * -x c++) as C++11: no exceptions are needed. (-Wunused-macros fires only for macros of the
 * main file, so the header is included here rather than compiled alone.) */
#include "afserialization.h"

int main(void) {
    return afs_version_number() == AFS_VERSION_NUMBER ? 0 : 1;
}
