// The public header compiles as C++11 (-Wall -Wextra -pedantic -Werror) and links.
#include "afserialization.h"
#include <cstdio>
#include <cstring>

int main() {
    afs_error err;
    afs_value *v = afs_value_new_dict();
    afs_status s = afs_value_dict_set(v, "k", AFS_NTS, afs_value_new_int(1), &err);
    char *q = afs_query_string(v, &err);
    bool ok = s == AFS_OK && q && std::strcmp(q, "k=1") == 0;
    afs_free(q);
    afs_value_free(v);
    std::printf("header_cxx: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
