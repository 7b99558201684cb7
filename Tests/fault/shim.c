/*
 * libafsfault.so — an LD_PRELOAD fault-injection shim for the system calls the library's
 * body streams make: open/open64/openat/openat64, read, pread/pread64, fstat, write,
 * writev, copy_file_range, sendfile/sendfile64, close, rename.
 *
 * Rules come from the environment variable AFS_FAULT (read at load), or at run time from
 * afs_fault_set(spec) (a program finds it with dlsym(RTLD_DEFAULT, "afs_fault_set"); Python
 * with ctypes.CDLL(None).afs_fault_set). A spec is rules separated by ';', each rule
 * comma-separated key=value items:
 *
 *   op=NAMES      calls the rule applies to, '|'-separated: open read pread fstat write
 *                 writev cfr (copy_file_range) sendfile close rename realloc; "io" means
 *                 read|pread|write|writev|cfr|sendfile. realloc is where the library's
 *                 checked allocations go (every buffer that grows with the input, and the
 *                 probe before a large Swift array or string): errno=ENOMEM on it makes
 *                 that allocation fail, so counting realloc calls (nth) walks the sites
 *   min=N         realloc only: count only calls asking for at least N bytes
 *                 (for realloc, path=SUBSTR selects the calling object: only calls made
 *                 from a loaded object whose file name contains SUBSTR count, e.g.
 *                 path=libafserialization leaves Python's own reallocs alone)
 *   path=SUBSTR   only calls that involve a path containing SUBSTR: the path argument of
 *                 open/rename, or the target of /proc/self/fd/N for every descriptor the
 *                 call uses (so a file part, a temporary file or "socket:" can be chosen)
 *   nth=N         fire from the Nth matching call on (1-based, default 1)
 *   times=K       fire on K matching calls (default 1; 0 = every one from nth on)
 *   and one effect:
 *   errno=NAME    fail with -1 and this errno (EIO EINTR ENOSPC EPIPE EAGAIN ENOSYS EXDEV
 *                 EINVAL EACCES EMFILE ENOENT EBADF EFBIG ECONNRESET ENOMEM EROFS EDQUOT);
 *                 for close the descriptor is closed first (as Linux does)
 *   max=K         a short transfer: at most K bytes (read, pread, write, writev, cfr,
 *                 sendfile)
 *   limit=N       a full disk: the matching writes together store N bytes; the call that
 *                 crosses N stores what fits, later ones fail with ENOSPC (times defaults
 *                 to 0 here)
 *   truncate=K    before the call, truncate the file the call reads to K bytes
 *   grow=K        before the call, append K bytes ('+') to that file
 *   unlink        before the call, remove that file
 *
 * Example: AFS_FAULT='op=pread,path=big.bin,nth=3,errno=EIO'
 *
 * Every rule a call falls under fires: side effects first (in rule order), then the first
 * errno/max/limit rule decides the call (e.g. "max=16384 always" plus "truncate at the 3rd").
 *
 * afs_fault_fired() returns how many times rules fired since the last afs_fault_set, so a
 * test can check that its fault really happened. AFS_FAULT_LOG=1 traces each firing on
 * stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define AFS_SHIM_API __attribute__((visibility("default")))

enum {
    OP_OPEN = 1 << 0, OP_READ = 1 << 1, OP_PREAD = 1 << 2, OP_FSTAT = 1 << 3,
    OP_WRITE = 1 << 4, OP_WRITEV = 1 << 5, OP_CFR = 1 << 6, OP_SENDFILE = 1 << 7,
    OP_CLOSE = 1 << 8, OP_RENAME = 1 << 9, OP_REALLOC = 1 << 10
};
enum effect { E_NONE, E_ERRNO, E_MAX, E_LIMIT, E_TRUNCATE, E_GROW, E_UNLINK };

typedef struct {
    unsigned ops;
    char path[256];
    long nth, times;
    enum effect effect;
    long arg;          /* errno, max, limit, truncate or grow size */
    long seen;         /* matching calls so far */
    long stored;       /* limit: bytes stored so far */
    long min;          /* realloc: smallest size counted */
} rule_t;

#define MAX_RULES 16
static rule_t rules[MAX_RULES];
static int nrules;
static long fired;
static int trace;
static volatile int realloc_rules;   /* whether any rule is about realloc */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the real functions ------------------------------------------------------------- */

#define REAL(name) static __typeof__(&name) real_##name;
REAL(open) REAL(open64) REAL(openat) REAL(openat64) REAL(read) REAL(pread) REAL(pread64)
REAL(fstat) REAL(write) REAL(writev) REAL(copy_file_range) REAL(sendfile) REAL(sendfile64)
REAL(close) REAL(rename)
#undef REAL
/* The shipped library calls fstat as __fxstat (Sources/CAFSerialization/glibc_compat.c binds
 * it to glibc 2.2.5's name, which glibc 2.33 and later still export), so both are caught. */
int __fxstat(int ver, int fd, struct stat *st);
static int (*real___fxstat)(int, int, struct stat *);

static void resolve(void) {
    static int done;
    if (done) return;
#define LOAD(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
    LOAD(open); LOAD(open64); LOAD(openat); LOAD(openat64); LOAD(read); LOAD(pread);
    LOAD(pread64); LOAD(fstat); LOAD(write); LOAD(writev); LOAD(copy_file_range);
    LOAD(sendfile); LOAD(sendfile64); LOAD(close); LOAD(rename); LOAD(__fxstat);
#undef LOAD
    done = 1;
}

/* ---- parsing -------------------------------------------------------------------------- */

static const struct { const char *name; int value; } errnos[] = {
    {"EIO", EIO}, {"EINTR", EINTR}, {"ENOSPC", ENOSPC}, {"EPIPE", EPIPE}, {"EAGAIN", EAGAIN},
    {"ENOSYS", ENOSYS}, {"EXDEV", EXDEV}, {"EINVAL", EINVAL}, {"EACCES", EACCES},
    {"EMFILE", EMFILE}, {"ENOENT", ENOENT}, {"EBADF", EBADF}, {"EFBIG", EFBIG},
    {"ECONNRESET", ECONNRESET}, {"ENOMEM", ENOMEM}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT},
};

static unsigned parse_ops(const char *s, size_t n) {
    static const struct { const char *name; unsigned bits; } names[] = {
        {"open", OP_OPEN}, {"read", OP_READ}, {"pread", OP_PREAD}, {"fstat", OP_FSTAT},
        {"write", OP_WRITE}, {"writev", OP_WRITEV}, {"cfr", OP_CFR}, {"sendfile", OP_SENDFILE},
        {"close", OP_CLOSE}, {"rename", OP_RENAME}, {"realloc", OP_REALLOC},
        {"io", OP_READ | OP_PREAD | OP_WRITE | OP_WRITEV | OP_CFR | OP_SENDFILE},
    };
    unsigned bits = 0;
    while (n > 0) {
        size_t k = 0;
        while (k < n && s[k] != '|') k++;
        unsigned b = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == k && strncmp(names[i].name, s, k) == 0) b = names[i].bits;
        if (!b) return 0;
        bits |= b;
        s += k;
        n -= k;
        if (n) { s++; n--; }
    }
    return bits;
}

/* Parses one rule (a NUL-terminated copy); 0 or -1. */
static int parse_rule(char *text, rule_t *r) {
    memset(r, 0, sizeof *r);
    r->nth = 1;
    r->times = 1;
    int times_given = 0;
    for (char *save = NULL, *item = strtok_r(text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        const char *val = eq ? eq + 1 : "";
        size_t klen = eq ? (size_t)(eq - item) : strlen(item);
#define KEY(k) (klen == strlen(k) && strncmp(item, k, klen) == 0)
        if (KEY("op")) {
            if (!(r->ops = parse_ops(val, strlen(val)))) return -1;
        } else if (KEY("path")) {
            snprintf(r->path, sizeof r->path, "%s", val);
        } else if (KEY("nth")) {
            r->nth = atol(val);
        } else if (KEY("times")) {
            r->times = atol(val);
            times_given = 1;
        } else if (KEY("errno")) {
            r->effect = E_ERRNO;
            r->arg = -1;
            for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
                if (strcmp(errnos[i].name, val) == 0) r->arg = errnos[i].value;
            if (r->arg < 0) return -1;
        } else if (KEY("max")) {
            r->effect = E_MAX;
            r->arg = atol(val);
        } else if (KEY("limit")) {
            r->effect = E_LIMIT;
            r->arg = atol(val);
        } else if (KEY("truncate")) {
            r->effect = E_TRUNCATE;
            r->arg = atol(val);
        } else if (KEY("grow")) {
            r->effect = E_GROW;
            r->arg = atol(val);
        } else if (KEY("min")) {
            r->min = atol(val);
        } else if (KEY("unlink")) {
            r->effect = E_UNLINK;
        } else {
            return -1;
        }
#undef KEY
    }
    if (r->effect == E_LIMIT && !times_given) r->times = 0;   /* a full disk stays full */
    return r->ops && r->effect != E_NONE ? 0 : -1;
}

/** Replaces the rules (NULL or "" removes them all) and resets the counters.
 *  @return the number of rules, or -1 for a spec that does not parse (no rules then). */
AFS_SHIM_API int afs_fault_set(const char *spec) {
    pthread_mutex_lock(&lock);
    nrules = 0;
    fired = 0;
    int result = 0;
    if (spec && *spec) {
        char *copy = strdup(spec);
        char *save = NULL;
        for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
            if (nrules == MAX_RULES) { result = -1; break; }
            char *rt = strdup(t);
            int ok = parse_rule(rt, &rules[nrules]);
            free(rt);
            if (ok != 0) { result = -1; break; }
            nrules++;
        }
        free(copy);
        if (result < 0) nrules = 0;
        else result = nrules;
    }
    realloc_rules = 0;
    for (int i = 0; i < nrules; i++)
        if (rules[i].ops & OP_REALLOC) realloc_rules = 1;
    pthread_mutex_unlock(&lock);
    return result;
}

/** How many times rules fired since the last afs_fault_set. */
AFS_SHIM_API long afs_fault_fired(void) {
    pthread_mutex_lock(&lock);
    long n = fired;
    pthread_mutex_unlock(&lock);
    return n;
}

__attribute__((constructor)) static void shim_init(void) {
    resolve();
    trace = getenv("AFS_FAULT_LOG") != NULL;
    const char *spec = getenv("AFS_FAULT");
    if (spec && afs_fault_set(spec) < 0) {
        fprintf(stderr, "afsfault: cannot parse AFS_FAULT=%s\n", spec);
        abort();
    }
}

/* ---- matching --------------------------------------------------------------------------- */

static void fd_path(int fd, char *out, size_t cap) {
    char link[64];
    out[0] = 0;
    if (fd < 0) return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, cap - 1);
    out[n > 0 ? n : 0] = 0;
}

typedef struct {
    const char *path;   /* the path argument, if any */
    int fd1, fd2;       /* descriptors involved (-1: none); fd1 is the one read from */
} call_t;

/* Side effects of a firing rule on the file `file` (before the call goes ahead). */
static void side_effect(const rule_t *r, const char *file) {
    int saved = errno;
    if (r->effect == E_TRUNCATE) {
        if (truncate(file, (off_t)r->arg) != 0) perror("afsfault: truncate");
    } else if (r->effect == E_GROW) {
        int fd = real_open(file, O_WRONLY | O_APPEND);
        if (fd >= 0) {
            char plus[4096];
            memset(plus, '+', sizeof plus);
            for (long left = r->arg; left > 0;) {
                size_t k = left > (long)sizeof plus ? sizeof plus : (size_t)left;
                if (real_write(fd, plus, k) != (ssize_t)k) break;
                left -= (long)k;
            }
            real_close(fd);
        }
    } else if (r->effect == E_UNLINK) {
        if (unlink(file) != 0) perror("afsfault: unlink");
    }
    errno = saved;
}

/* Counts the call for every rule it matches; every rule whose window (nth, times) it falls
 * in fires: side effects at once, in rule order; the first errno/max/limit rule among them
 * is returned for the call itself (or NULL). */
static rule_t *match(unsigned op, const call_t *c) {
    if (nrules == 0) return NULL;   /* racy read is fine: rules change between tests */
    char p1[512], p2[512];
    fd_path(c->fd1, p1, sizeof p1);
    fd_path(c->fd2, p2, sizeof p2);
    rule_t *fire[MAX_RULES];
    const char *on[MAX_RULES];
    int nf = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nrules; i++) {
        rule_t *r = &rules[i];
        if (!(r->ops & op)) continue;
        const char *which = NULL;
        if (!r->path[0]) which = c->path ? c->path : p1;
        else if (c->path && strstr(c->path, r->path)) which = c->path;
        else if (p1[0] && strstr(p1, r->path)) which = p1;
        else if (p2[0] && strstr(p2, r->path)) which = p2;
        if (!which) continue;
        r->seen++;
        if (r->seen < r->nth) continue;
        if (r->times > 0 && r->seen >= r->nth + r->times) continue;
        fire[nf] = r;
        on[nf++] = which;
        fired++;
        if (trace) fprintf(stderr, "afsfault: rule %d fires on op %#x (%s), call %ld\n", i, op, which, r->seen);
    }
    pthread_mutex_unlock(&lock);
    rule_t *transfer = NULL;
    for (int i = 0; i < nf; i++) {
        if (fire[i]->effect == E_TRUNCATE || fire[i]->effect == E_GROW || fire[i]->effect == E_UNLINK)
            side_effect(fire[i], on[i]);
        else if (!transfer)
            transfer = fire[i];
    }
    return transfer;
}

/* The byte count a write may use under a limit rule; 0 with errno ENOSPC means full. */
static size_t limited(rule_t *r, size_t want) {
    if (!r) return want;
    if (r->effect == E_MAX) return want < (size_t)r->arg ? want : (size_t)r->arg;
    if (r->effect == E_LIMIT) {
        pthread_mutex_lock(&lock);
        long room = r->arg - r->stored;
        pthread_mutex_unlock(&lock);
        if (room <= 0) return 0;
        return want < (size_t)room ? want : (size_t)room;
    }
    return want;
}

static void account(rule_t *r, ssize_t n) {
    if (r && r->effect == E_LIMIT && n > 0) {
        pthread_mutex_lock(&lock);
        r->stored += n;
        pthread_mutex_unlock(&lock);
    }
}

#define PREPARE(op, pathv, a, b)                                          \
    resolve();                                                           \
    call_t call_ = { (pathv), (a), (b) };                                \
    rule_t *r_ = match((op), &call_);                                    \
    if (r_ && r_->effect == E_ERRNO) { errno = (int)r_->arg; return -1; }

/* ---- the interposed functions ----------------------------------------------------------- */

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

AFS_SHIM_API int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    PREPARE(OP_OPEN, path, -1, -1)
    return real_open(path, flags, mode);
}
AFS_SHIM_API int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    PREPARE(OP_OPEN, path, -1, -1)
    return real_open64(path, flags, mode);
}
AFS_SHIM_API int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    PREPARE(OP_OPEN, path, -1, -1)
    return real_openat(dirfd, path, flags, mode);
}
AFS_SHIM_API int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    PREPARE(OP_OPEN, path, -1, -1)
    return real_openat64(dirfd, path, flags, mode);
}

AFS_SHIM_API ssize_t read(int fd, void *buf, size_t n) {
    PREPARE(OP_READ, NULL, fd, -1)
    return real_read(fd, buf, limited(r_, n));
}
AFS_SHIM_API ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    PREPARE(OP_PREAD, NULL, fd, -1)
    return real_pread(fd, buf, limited(r_, n), off);
}
AFS_SHIM_API ssize_t pread64(int fd, void *buf, size_t n, off_t off) {
    PREPARE(OP_PREAD, NULL, fd, -1)
    return real_pread64(fd, buf, limited(r_, n), off);
}
AFS_SHIM_API int fstat(int fd, struct stat *st) {
    PREPARE(OP_FSTAT, NULL, fd, -1)
    return real_fstat(fd, st);
}
AFS_SHIM_API int __fxstat(int ver, int fd, struct stat *st) {
    PREPARE(OP_FSTAT, NULL, fd, -1)
    return real___fxstat(ver, fd, st);
}

AFS_SHIM_API ssize_t write(int fd, const void *buf, size_t n) {
    PREPARE(OP_WRITE, NULL, fd, -1)
    size_t k = limited(r_, n);
    if (k == 0 && n > 0) { errno = ENOSPC; return -1; }
    ssize_t w = real_write(fd, buf, k);
    account(r_, w);
    return w;
}
AFS_SHIM_API ssize_t writev(int fd, const struct iovec *iov, int count) {
    PREPARE(OP_WRITEV, NULL, fd, -1)
    size_t total = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    size_t k = limited(r_, total);
    if (k == 0 && total > 0) { errno = ENOSPC; return -1; }
    if (k == total) {
        ssize_t w = real_writev(fd, iov, count);
        account(r_, w);
        return w;
    }
    /* a shorter vector holding the first k bytes */
    struct iovec part[1024];
    int m = 0;
    for (size_t left = k; m < count && m < 1024 && left > 0; m++) {
        part[m] = iov[m];
        if (part[m].iov_len > left) part[m].iov_len = left;
        left -= part[m].iov_len;
    }
    ssize_t w = real_writev(fd, part, m);
    account(r_, w);
    return w;
}
AFS_SHIM_API ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n, unsigned flags) {
    PREPARE(OP_CFR, NULL, in, out)
    size_t k = limited(r_, n);
    if (k == 0 && n > 0) { errno = ENOSPC; return -1; }
    if (!real_copy_file_range) { errno = ENOSYS; return -1; }
    ssize_t w = real_copy_file_range(in, in_off, out, out_off, k, flags);
    account(r_, w);
    return w;
}
AFS_SHIM_API ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    PREPARE(OP_SENDFILE, NULL, in, out)
    size_t k = limited(r_, n);
    if (k == 0 && n > 0) { errno = ENOSPC; return -1; }
    ssize_t w = real_sendfile(out, in, off, k);
    account(r_, w);
    return w;
}
AFS_SHIM_API ssize_t sendfile64(int out, int in, off_t *off, size_t n) {
    PREPARE(OP_SENDFILE, NULL, in, out)
    size_t k = limited(r_, n);
    if (k == 0 && n > 0) { errno = ENOSPC; return -1; }
    ssize_t w = real_sendfile64(out, in, off, k);
    account(r_, w);
    return w;
}

/* realloc: counted without paths or descriptors (no allocation, no system call here). */
extern void *__libc_realloc(void *p, size_t n);

AFS_SHIM_API void *realloc(void *p, size_t n) {
    if (realloc_rules) {
        int fail = 0;
        Dl_info caller;
        int known = dladdr(__builtin_return_address(0), &caller) && caller.dli_fname;
        pthread_mutex_lock(&lock);
        for (int i = 0; i < nrules; i++) {
            rule_t *r = &rules[i];
            if (!(r->ops & OP_REALLOC) || (long)n < r->min) continue;
            if (r->path[0] && (!known || !strstr(caller.dli_fname, r->path))) continue;
            r->seen++;
            if (r->seen < r->nth) continue;
            if (r->times > 0 && r->seen >= r->nth + r->times) continue;
            fired++;
            if (r->effect == E_ERRNO) fail = (int)r->arg;
            break;
        }
        pthread_mutex_unlock(&lock);
        if (fail) {
            errno = fail;
            return NULL;
        }
    }
    return __libc_realloc(p, n);
}

AFS_SHIM_API int close(int fd) {
    resolve();
    call_t c = { NULL, fd, -1 };
    rule_t *r = match(OP_CLOSE, &c);
    int rc = real_close(fd);
    if (r && r->effect == E_ERRNO) {   /* closed all the same, as Linux does */
        errno = (int)r->arg;
        return -1;
    }
    return rc;
}
AFS_SHIM_API int rename(const char *from, const char *to) {
    PREPARE(OP_RENAME, to, -1, -1)
    return real_rename(from, to);
}
