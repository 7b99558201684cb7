/* glibc_compat.c: the shipped library's C-library functions bound to old symbol versions,
 * so that libafserialization.so built on a new distribution loads on glibc 2.28 and later
 * (the manylinux_2_28 policy: RHEL 8, Debian 10, Ubuntu 18.10 and later).
 *
 * Compiled only when AFS_GLIBC_COMPAT is defined (scripts/build-library.sh, the release
 * build of the shipped library); development, sanitizer and fuzz builds leave it out (the
 * sanitizers intercept pthread_create and friends themselves).
 *
 * How: every function below is defined here under its own name, so every reference in the
 * library (the core, the statically linked Swift runtime and its C++ parts) binds to it
 * instead of to the C library's newest version; the version script keeps these
 * definitions local, so nothing is exported. Each one calls the C library's function
 * under an old version, named with `.symver`:
 *   - pthread_*, dl*, sem_open: GLIBC_2.2.5, the versions of libpthread.so.0 and
 *     libdl.so.2 before glibc 2.34 moved them into libc (build-library.sh adds those two
 *     libraries to DT_NEEDED, so an old glibc loads them; on 2.34+ they are empty stubs);
 *   - pthread_getattr_np, pthread_sigmask: GLIBC_2.2.5 (2.32 gave them new versions);
 *   - stat, fstat: __xstat/__fxstat (exported until 2.33 as the only names);
 *   - exp, exp2, log, log2 (2.29) and hypotf (2.35): the GLIBC_2.2.5 versions, which
 *     compute the same results (the new versions changed errno handling and speed);
 *   - std::__throw_bad_array_new_length (GLIBCXX_3.4.29, GCC 11): throws std::bad_alloc
 *     (its base class) through the GLIBCXX_3.4 function.
 * Tests/packaging/check_glibc.sh (ctest `glibc_versions`) fails when a newer version
 * creeps back in.
 */
#if defined(AFS_GLIBC_COMPAT) && defined(__linux__) && defined(__x86_64__)

#include <stdarg.h>
#include <stddef.h>

#define AFS_OLD(local, name, version) __asm__(".symver " #local "," #name "@" version)
/* The definitions: hidden, so the library never exports them (the version script alone
 * leaves a definition that shares its name with a versioned reference in .dynsym). */
#define AFS_HIDDEN __attribute__((visibility("hidden")))

/* --- threads -------------------------------------------------------------------------- */
extern int afs_old_pthread_create(void *, const void *, void *(*)(void *), void *);
extern int afs_old_pthread_join(unsigned long, void **);
extern int afs_old_pthread_once(int *, void (*)(void));
extern int afs_old_pthread_attr_setstacksize(void *, size_t);
extern int afs_old_pthread_attr_getstack(const void *, void **, size_t *);
extern int afs_old_pthread_getattr_np(unsigned long, void *);
extern int afs_old_pthread_sigmask(int, const void *, void *);
extern void *afs_old_sem_open(const char *, int, ...);
AFS_OLD(afs_old_pthread_create, pthread_create, "GLIBC_2.2.5");
AFS_OLD(afs_old_pthread_join, pthread_join, "GLIBC_2.2.5");
AFS_OLD(afs_old_pthread_once, pthread_once, "GLIBC_2.2.5");
AFS_OLD(afs_old_pthread_attr_setstacksize, pthread_attr_setstacksize, "GLIBC_2.2.5");
AFS_OLD(afs_old_pthread_attr_getstack, pthread_attr_getstack, "GLIBC_2.2.5");
AFS_OLD(afs_old_pthread_getattr_np, pthread_getattr_np, "GLIBC_2.2.5");
AFS_OLD(afs_old_pthread_sigmask, pthread_sigmask, "GLIBC_2.2.5");
AFS_OLD(afs_old_sem_open, sem_open, "GLIBC_2.2.5");

AFS_HIDDEN int pthread_create(void *thread, const void *attr, void *(*start)(void *), void *arg) {
    return afs_old_pthread_create(thread, attr, start, arg);
}
AFS_HIDDEN int pthread_join(unsigned long thread, void **result) { return afs_old_pthread_join(thread, result); }
AFS_HIDDEN int pthread_once(int *once, void (*init)(void)) { return afs_old_pthread_once(once, init); }
AFS_HIDDEN int pthread_attr_setstacksize(void *attr, size_t size) {
    return afs_old_pthread_attr_setstacksize(attr, size);
}
AFS_HIDDEN int pthread_attr_getstack(const void *attr, void **addr, size_t *size) {
    return afs_old_pthread_attr_getstack(attr, addr, size);
}
AFS_HIDDEN int pthread_getattr_np(unsigned long thread, void *attr) {
    return afs_old_pthread_getattr_np(thread, attr);
}
AFS_HIDDEN int pthread_sigmask(int how, const void *set, void *old) {
    return afs_old_pthread_sigmask(how, set, old);
}
AFS_HIDDEN void *sem_open(const char *name, int oflag, ...) {
    if (oflag & 0100 /* O_CREAT */) {
        va_list ap;
        va_start(ap, oflag);
        unsigned int mode = va_arg(ap, unsigned int);
        unsigned int value = va_arg(ap, unsigned int);
        va_end(ap);
        return afs_old_sem_open(name, oflag, mode, value);
    }
    return afs_old_sem_open(name, oflag);
}

/* --- the dynamic loader --------------------------------------------------------------- */
extern void *afs_old_dlopen(const char *, int);
extern void *afs_old_dlsym(void *, const char *);
extern int afs_old_dladdr(const void *, void *);
extern char *afs_old_dlerror(void);
AFS_OLD(afs_old_dlopen, dlopen, "GLIBC_2.2.5");
AFS_OLD(afs_old_dlsym, dlsym, "GLIBC_2.2.5");
AFS_OLD(afs_old_dladdr, dladdr, "GLIBC_2.2.5");
AFS_OLD(afs_old_dlerror, dlerror, "GLIBC_2.2.5");

AFS_HIDDEN void *dlopen(const char *file, int mode) { return afs_old_dlopen(file, mode); }
AFS_HIDDEN void *dlsym(void *handle, const char *name) { return afs_old_dlsym(handle, name); }
AFS_HIDDEN int dladdr(const void *address, void *info) { return afs_old_dladdr(address, info); }
char *dlerror(void) { return afs_old_dlerror(); }

/* --- files ---------------------------------------------------------------------------- */
struct stat;
extern int afs_old_xstat(int, const char *, struct stat *);
extern int afs_old_fxstat(int, int, struct stat *);
AFS_OLD(afs_old_xstat, __xstat, "GLIBC_2.2.5");
AFS_OLD(afs_old_fxstat, __fxstat, "GLIBC_2.2.5");
enum { afs_stat_ver_linux = 1 }; /* _STAT_VER on x86_64 */

AFS_HIDDEN int stat(const char *path, struct stat *buf) { return afs_old_xstat(afs_stat_ver_linux, path, buf); }
AFS_HIDDEN int fstat(int fd, struct stat *buf) { return afs_old_fxstat(afs_stat_ver_linux, fd, buf); }

/* --- libm ----------------------------------------------------------------------------- */
extern double afs_old_exp(double);
extern double afs_old_exp2(double);
extern double afs_old_log(double);
extern double afs_old_log2(double);
extern float afs_old_hypotf(float, float);
AFS_OLD(afs_old_exp, exp, "GLIBC_2.2.5");
AFS_OLD(afs_old_exp2, exp2, "GLIBC_2.2.5");
AFS_OLD(afs_old_log, log, "GLIBC_2.2.5");
AFS_OLD(afs_old_log2, log2, "GLIBC_2.2.5");
AFS_OLD(afs_old_hypotf, hypotf, "GLIBC_2.2.5");

AFS_HIDDEN double exp(double x) { return afs_old_exp(x); }
AFS_HIDDEN double exp2(double x) { return afs_old_exp2(x); }
AFS_HIDDEN double log(double x) { return afs_old_log(x); }
AFS_HIDDEN double log2(double x) { return afs_old_log2(x); }
AFS_HIDDEN float hypotf(float x, float y) { return afs_old_hypotf(x, y); }

/* --- libstdc++ ------------------------------------------------------------------------ */
extern void _ZSt17__throw_bad_allocv(void) __attribute__((noreturn));
AFS_HIDDEN void _ZSt28__throw_bad_array_new_lengthv(void) __attribute__((noreturn));
AFS_HIDDEN void _ZSt28__throw_bad_array_new_lengthv(void) { _ZSt17__throw_bad_allocv(); }

#else
/* An empty translation unit is not ISO C. */
typedef int afs_glibc_compat_unused;
#endif
