/*
 * Fault injection for multipart body streams, driven through the LD_PRELOAD shim
 * (libafsfault.so, see shim.c): reads failing with EIO midway, EINTR, 1-byte short reads,
 * open/fstat failures, files deleted, replaced, grown or shrunk between append and read or
 * while being read, a full disk and failing close/rename while writing the body to a file,
 * a full disk, EINTR, short writes, unsupported kernel copies, EAGAIN and EIO on the
 * destination of afs_body_stream_write_to_fd, and a peer closing the socket (EPIPE with the
 * default SIGPIPE disposition); EINTR on a socket returned to the caller by interruptible
 * writes (afs_body_stream_set_interruptible, afs_request_set_interruptible) and resumed.
 *
 * Every scenario runs in a forked child (a crash, a hang or a SIGPIPE death is reported,
 * not fatal) twice: once to warm up the library's one-time caches, once measured. It must
 * end in a clear status and message, a stream position equal to the bytes delivered, the
 * descriptor count of /proc/self/fd back to where it was (also right after the failure,
 * while the stream is still alive) and the heap in use (mallinfo2) back to where it was.
 *
 * Output: one tab-separated line per scenario on stdout:
 *   name group description verdict status errno message fired fds_before fds_after
 *   heap_before heap_after pid notes
 * where message is the library's message with the scratch directory written <tmp>.
 *
 *   fault [--list] [--only NAME] [scratch-dir]      (LD_PRELOAD=libafsfault.so required)
 */
#define _GNU_SOURCE
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "afserialization.h"

/* ---- the shim --------------------------------------------------------------------------- */

static int (*shim_set)(const char *);
static long (*shim_fired)(void);

static void fault(const char *spec) {
    if (shim_set(spec) < 0) {
        fprintf(stderr, "fault: the shim rejected \"%s\"\n", spec);
        abort();
    }
}

/* ---- a scenario's outcome ------------------------------------------------------------------- */

typedef struct {
    afs_status status;     /* the status the scenario is about (AFS_OK when all went well) */
    int os_errno;
    char message[512];
    char notes[1024];      /* failed checks */
    int failures;
    long fired;
} outcome;

static outcome *cur;
static char scratch[512];

static void note(const char *fmt, ...) {
    cur->failures++;
    size_t n = strlen(cur->notes);
    if (n + 4 >= sizeof cur->notes) return;
    if (n) { strcat(cur->notes, "; "); n += 2; }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur->notes + n, sizeof cur->notes - n, fmt, ap);
    va_end(ap);
}

#define EXPECT(cond) do { if (!(cond)) note("line %d: %s", __LINE__, #cond); } while (0)
#define EXPECT_HAS(str, needle) do { if (!strstr((str), (needle))) \
    note("line %d: \"%s\" lacks \"%s\"", __LINE__, (str), (needle)); } while (0)

/* Writes <n> for the number after `prefix` in the outcome's message (offsets that depend on
 * timing or on the kernel's socket buffer sizes). */
static void mask_number_after(const char *prefix) {
    char *at = strstr(cur->message, prefix);
    if (!at) return;
    at += strlen(prefix);
    char *end = at;
    while (*end >= '0' && *end <= '9') end++;
    if (end == at) return;
    char rest[512];
    snprintf(rest, sizeof rest, "%s", end);
    snprintf(at, sizeof cur->message - (size_t)(at - cur->message), "<n>%s", rest);
}

/* Records err as the scenario's outcome. */
static void outcome_from(const afs_error *err) {
    cur->status = err->code;
    cur->os_errno = err->os_errno;
    snprintf(cur->message, sizeof cur->message, "%s", err->message);
}

/* ---- helpers ------------------------------------------------------------------------------- */

typedef struct { uint8_t *p; size_t n, cap; } bytes;

static void bytes_add(bytes *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (b->n + n > c) c *= 2;
        b->p = realloc(b->p, c);
        b->cap = c;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static int count_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n - 1;   /* the directory's own descriptor */
}

static size_t heap_in_use(void) { return mallinfo2().uordblks; }

static void spath(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", scratch, name); }

static void make_file(const char *name, size_t size, unsigned seed) {
    char p[600];
    spath(p, sizeof p, name);
    unlink(p);   /* whatever is there (a FIFO would block fopen) */
    rmdir(p);
    FILE *f = fopen(p, "wb");
    for (size_t i = 0; i < size; i++) fputc((int)((i * 31 + seed * 7 + (i >> 8)) & 0xFF), f);
    fclose(f);
}

static bytes read_whole(const char *path) {
    bytes b = {0};
    FILE *f = fopen(path, "rb");
    uint8_t buf[65536];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) bytes_add(&b, buf, n);
    if (f) fclose(f);
    return b;
}

/* Reads the rest; 0 at the end, -1 on a -1 read. */
static int drain(afs_body_stream *bs, size_t chunk, bytes *out) {
    static uint8_t buf[65536];
    for (;;) {
        int64_t r = afs_body_stream_read(bs, buf, chunk);
        if (r < 0) return -1;
        if (r == 0) return 0;
        bytes_add(out, buf, (size_t)r);
    }
}

static int same(const bytes *a, const uint8_t *b, size_t n) { return a->n == n && (n == 0 || memcmp(a->p, b, n) == 0); }

enum { BIG = 100000, SMALL = 1000 };

/* [field first=head][file big.bin][file small.txt][field last=tail], boundary fixed. */
static afs_request *request(afs_serializer *s) {
    afs_error err;
    char big[600], small[600];
    spath(big, sizeof big, "big.bin");
    spath(small, sizeof small, "small.txt");
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://example.com/upload", NULL, &err);
    afs_form_set_boundary(f, "fault-boundary", NULL);
    afs_form_append_form_data(f, "head", 4, "first", NULL);
    if (afs_form_append_file(f, big, "big", &err) != AFS_OK) note("append big: %s", err.message);
    if (afs_form_append_file(f, small, "small", &err) != AFS_OK) note("append small: %s", err.message);
    afs_form_append_form_data(f, "tail", 4, "last", NULL);
    afs_request *r = afs_form_finish(f, &err);
    afs_form_free(f);
    return r;
}

typedef struct {
    afs_serializer *s;
    afs_request *r;
    afs_body_stream *bs;
    bytes ref;           /* the whole body, read before any fault */
    size_t big_at;       /* body offset of big.bin's first byte */
} fixture;

static void setup(fixture *fx) {
    memset(fx, 0, sizeof *fx);
    make_file("big.bin", BIG, 1);
    make_file("small.txt", SMALL, 2);
    fx->s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_serializer_set_header(fx->s, "User-Agent", "fault", NULL);
    fx->r = request(fx->s);
    fx->bs = afs_request_body_stream(fx->r);
    EXPECT(drain(fx->bs, 65536, &fx->ref) == 0);
    EXPECT(fx->ref.n == afs_body_stream_content_length(fx->bs));
    const char *h = "filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n";
    uint8_t *at = memmem(fx->ref.p, fx->ref.n, h, strlen(h));
    fx->big_at = at ? (size_t)(at - fx->ref.p) + strlen(h) : 0;
    EXPECT(afs_body_stream_rewind(fx->bs, NULL) == AFS_OK);
}

static void teardown(fixture *fx) {
    afs_request_free(fx->r);
    afs_serializer_free(fx->s);
    free(fx->ref.p);
    char p[600];
    spath(p, sizeof p, "big.bin");
    unlink(p);
    rmdir(p);
    spath(p, sizeof p, "small.txt");
    unlink(p);
}

/* After a failing read: the error, a consistent position, stickiness, no open file. */
static void failed_read_is_clean(fixture *fx, const bytes *got, int fds_before, afs_status code, int os_errno, const char *needle) {
    afs_error err;
    memset(&err, 0, sizeof err);
    EXPECT(afs_body_stream_error(fx->bs, &err) == code);
    outcome_from(&err);
    if (os_errno >= 0) EXPECT(err.os_errno == os_errno);
    EXPECT_HAS(err.message, needle);
    EXPECT(afs_body_stream_position(fx->bs) == got->n);
    EXPECT(got->n <= fx->ref.n && memcmp(got->p, fx->ref.p, got->n) == 0);
    EXPECT(!afs_body_stream_has_bytes_available(fx->bs));
    uint8_t b[16];
    EXPECT(afs_body_stream_read(fx->bs, b, sizeof b) == -1);          /* sticky */
    afs_error again;
    afs_body_stream_error(fx->bs, &again);
    EXPECT(strcmp(again.message, err.message) == 0);
    EXPECT(count_fds() == fds_before);                                 /* the file is closed */
}

/* Puts big.bin back as it was, rewinds and checks the whole body again, without faults. */
static void rewind_and_compare(fixture *fx) {
    fault("");
    char p[600];
    spath(p, sizeof p, "big.bin");
    unlink(p);
    rmdir(p);
    make_file("big.bin", BIG, 1);
    afs_error err;
    EXPECT(afs_body_stream_rewind(fx->bs, &err) == AFS_OK);
    EXPECT(afs_body_stream_error(fx->bs, NULL) == AFS_OK);
    bytes again = {0};
    EXPECT(drain(fx->bs, 65536, &again) == 0);
    EXPECT(same(&again, fx->ref.p, fx->ref.n));
    free(again.p);
}

/* Runs a failing drain and the standard checks. */
static void read_fault(const char *spec, size_t chunk, afs_status code, int os_errno, const char *needle) {
    fixture fx;
    setup(&fx);
    int fds = count_fds();
    fault(spec);
    bytes got = {0};
    EXPECT(drain(fx.bs, chunk, &got) == -1);
    cur->fired = shim_fired();
    EXPECT(cur->fired > 0);
    failed_read_is_clean(&fx, &got, fds, code, os_errno, needle);
    rewind_and_compare(&fx);
    free(got.p);
    teardown(&fx);
}

/* Runs a drain that must succeed despite the faults. */
static void read_survives(const char *spec, size_t chunk) {
    fixture fx;
    setup(&fx);
    fault(spec);
    bytes got = {0};
    EXPECT(drain(fx.bs, chunk, &got) == 0);
    cur->fired = shim_fired();
    EXPECT(cur->fired > 0);
    fault("");
    EXPECT(same(&got, fx.ref.p, fx.ref.n));
    EXPECT(afs_body_stream_position(fx.bs) == fx.ref.n);
    cur->status = afs_body_stream_error(fx.bs, NULL);
    snprintf(cur->message, sizeof cur->message, "the body is byte for byte the one read without faults");
    free(got.p);
    teardown(&fx);
}

/* ---- reading: file parts ------------------------------------------------------------------- */

static void s_read_eio(void) {
    char spec[700];
    snprintf(spec, sizeof spec, "op=pread,path=%s/big.bin,nth=3,errno=EIO", scratch);
    read_fault(spec, 4096, AFS_E_IO, EIO, "Input/output error");
    EXPECT_HAS(cur->message, "big.bin");
}

static void s_read_eintr(void) { read_survives("op=pread,path=big.bin,nth=2,times=5,errno=EINTR", 4096); }

static void s_read_short(void) { read_survives("op=pread,path=afs_fault_,times=0,max=1", 65536); }

static void s_open_emfile(void) {
    read_fault("op=open,path=big.bin,errno=EMFILE", 4096, AFS_E_IO, EMFILE, "opening the file");
}

static void s_fstat_eio(void) {
    read_fault("op=fstat,path=big.bin,errno=EIO", 4096, AFS_E_IO, EIO, "examining the file");
}

static void s_grows_while_read(void) {
    fixture fx;
    setup(&fx);
    int fds = count_fds();
    fault("op=pread,path=big.bin,nth=3,grow=10");
    bytes got = {0};
    EXPECT(drain(fx.bs, 4096, &got) == -1);
    cur->fired = shim_fired();
    EXPECT(cur->fired == 1);
    failed_read_is_clean(&fx, &got, fds, AFS_E_LENGTH_MISMATCH, 0, "has more than the 100000 bytes");
    /* reading again: now the size is wrong from the start */
    fault("");
    EXPECT(afs_body_stream_rewind(fx.bs, NULL) == AFS_OK);
    bytes more = {0};
    EXPECT(drain(fx.bs, 4096, &more) == -1);
    afs_error err;
    afs_body_stream_error(fx.bs, &err);
    EXPECT(err.code == AFS_E_LENGTH_MISMATCH);
    EXPECT_HAS(err.message, "now has 100010 bytes but had 100000");
    EXPECT(afs_body_stream_position(fx.bs) == more.n);
    rewind_and_compare(&fx);
    free(got.p);
    free(more.p);
    teardown(&fx);
}

static void s_shrinks_while_read(void) {
    read_fault("op=pread,path=big.bin,nth=3,truncate=50000", 4096, AFS_E_LENGTH_MISMATCH, 0,
               "ended after 50000 of the 100000 bytes");
}

/* Deletes, replaces or swaps big.bin after finish; `how` says with what. */
static void replaced(const char *how) {
    fixture fx;
    setup(&fx);
    int fds = count_fds();
    char p[600], other[600];
    spath(p, sizeof p, "big.bin");
    spath(other, sizeof other, "other.bin");
    EXPECT(unlink(p) == 0);
    if (strcmp(how, "same-size") == 0) {
        make_file("other.bin", BIG, 9);
        EXPECT(rename(other, p) == 0);
    } else if (strcmp(how, "other-size") == 0) {
        make_file("other.bin", 500, 9);
        EXPECT(rename(other, p) == 0);
    } else if (strcmp(how, "directory") == 0) {
        EXPECT(mkdir(p, 0755) == 0);
    } else if (strcmp(how, "fifo") == 0) {
        EXPECT(mkfifo(p, 0644) == 0);
    }
    bytes got = {0};
    int rc = drain(fx.bs, 4096, &got);
    afs_error err;
    memset(&err, 0, sizeof err);
    afs_body_stream_error(fx.bs, &err);
    outcome_from(&err);
    if (strcmp(how, "same-size") == 0) {
        /* cannot be told apart: the new bytes go out, length and framing intact */
        EXPECT(rc == 0);
        EXPECT(got.n == fx.ref.n);
        bytes now = read_whole(p);
        EXPECT(now.n == BIG && got.n == fx.ref.n && memcmp(got.p + fx.big_at, now.p, BIG) == 0);
        EXPECT(memcmp(got.p, fx.ref.p, fx.big_at) == 0);
        free(now.p);
        snprintf(cur->message, sizeof cur->message, "cannot be detected: the replacement's bytes are sent, length and framing intact");
    } else {
        EXPECT(rc == -1);
        failed_read_is_clean(&fx, &got, fds, strcmp(how, "other-size") == 0 ? AFS_E_LENGTH_MISMATCH : AFS_E_IO,
                             strcmp(how, "deleted") == 0 ? ENOENT : 0,
                             strcmp(how, "deleted") == 0 ? "No such file or directory"
                             : strcmp(how, "other-size") == 0 ? "now has 500 bytes but had 100000"
                             : "is no longer a regular file");
        rewind_and_compare(&fx);   /* with the file back, the stream works again */
    }
    free(got.p);
    teardown(&fx);
}
static void s_deleted(void) { replaced("deleted"); }
static void s_replaced_same_size(void) { replaced("same-size"); }
static void s_replaced_other_size(void) { replaced("other-size"); }
static void s_replaced_by_directory(void) { replaced("directory"); }
static void s_replaced_by_fifo(void) { replaced("fifo"); }

/* ---- write_to_fd: sources failing ---------------------------------------------------------- */

static int open_out(const char *name, int flags) {
    char p[600];
    spath(p, sizeof p, name);
    return open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | flags, 0644);
}
static bytes out_bytes(const char *name) {
    char p[600];
    spath(p, sizeof p, name);
    bytes b = read_whole(p);
    unlink(p);
    return b;
}

/* write_to_fd into out.bin under `spec`: a source failure is sticky, the file holds exactly
 * the bytes counted, and after clearing the fault a seek to the position completes it. */
static void write_source_fault(const char *spec, afs_status code, int os_errno, const char *needle) {
    fixture fx;
    setup(&fx);
    int fd = open_out("out.bin", 0);
    int fds = count_fds();
    fault(spec);
    uint64_t w = 12345;
    afs_error err;
    memset(&err, 0, sizeof err);
    afs_status st = afs_body_stream_write_to_fd(fx.bs, fd, &w, &err);
    cur->fired = shim_fired();
    EXPECT(cur->fired > 0);
    outcome_from(&err);
    EXPECT(st == code);
    if (os_errno >= 0) EXPECT(err.os_errno == os_errno);
    EXPECT_HAS(err.message, needle);
    EXPECT(afs_body_stream_position(fx.bs) == w);
    EXPECT(afs_body_stream_error(fx.bs, NULL) == code);              /* a source: sticky */
    EXPECT(count_fds() == fds);
    fault("");
    make_file("big.bin", BIG, 1);                                    /* repaired */
    EXPECT(afs_body_stream_seek(fx.bs, w, &err) == AFS_OK);
    uint64_t w2 = 0;
    EXPECT(afs_body_stream_write_to_fd(fx.bs, fd, &w2, &err) == AFS_OK);
    EXPECT(w + w2 == fx.ref.n);
    close(fd);
    bytes file = out_bytes("out.bin");
    EXPECT(same(&file, fx.ref.p, fx.ref.n));
    free(file.p);
    teardown(&fx);
}

static void s_wfd_source_eio(void) {
    write_source_fault("op=cfr|pread,path=big.bin,times=0,errno=EIO", AFS_E_IO, EIO, "big.bin");
}
static void s_wfd_grows(void) {
    write_source_fault("op=cfr,path=big.bin,times=0,max=16384;op=cfr,path=big.bin,nth=3,grow=10",
                       AFS_E_LENGTH_MISMATCH, 0, "has more than the 100000 bytes");
}
static void s_wfd_shrinks(void) {
    write_source_fault("op=cfr,path=big.bin,times=0,max=16384;op=cfr,path=big.bin,nth=3,truncate=30000",
                       AFS_E_LENGTH_MISMATCH, 0, "ended after 32768 of the 100000 bytes");
}

/* write_to_fd into a regular file that must succeed despite the faults. */
static void write_survives(const char *spec) {
    fixture fx;
    setup(&fx);
    int fd = open_out("out.bin", 0);
    fault(spec);
    uint64_t w = 0;
    afs_error err;
    memset(&err, 0, sizeof err);
    afs_status st = afs_body_stream_write_to_fd(fx.bs, fd, &w, &err);
    cur->fired = shim_fired();
    EXPECT(cur->fired > 0);
    fault("");
    cur->status = st;
    if (st != AFS_OK) outcome_from(&err);
    EXPECT(st == AFS_OK);
    if (st == AFS_OK) snprintf(cur->message, sizeof cur->message, "the file holds byte for byte the body read without faults");
    EXPECT(w == fx.ref.n && afs_body_stream_position(fx.bs) == fx.ref.n);
    close(fd);
    bytes file = out_bytes("out.bin");
    EXPECT(same(&file, fx.ref.p, fx.ref.n));
    free(file.p);
    teardown(&fx);
}
static void s_wfd_cfr_eio_once(void) { write_survives("op=cfr,path=big.bin,errno=EIO"); }
static void s_wfd_cfr_exdev(void) { write_survives("op=cfr,times=0,errno=EXDEV"); }
static void s_wfd_cfr_enosys(void) { write_survives("op=cfr,times=0,errno=ENOSYS"); }
static void s_wfd_eintr(void) {
    write_survives("op=writev,path=out.bin,times=2,errno=EINTR;op=cfr,path=out.bin,times=2,errno=EINTR;"
                   "op=write,path=out.bin,times=2,errno=EINTR");
}
static void s_wfd_short(void) { write_survives("op=writev|write|cfr,path=out.bin,times=0,max=7"); }

/* ---- write_to_fd: the destination failing ------------------------------------------------------ */

/* A full disk after `limit` bytes: ENOSPC, exactly `limit` bytes written and counted, not
 * sticky, and a second call into another file writes the rest. */
static void disk_full(long limit) {
    fixture fx;
    setup(&fx);
    int fd = open_out("out.bin", 0);
    int fds = count_fds();
    char spec[128];
    snprintf(spec, sizeof spec, "op=write|writev|cfr,path=out.bin,limit=%ld", limit);
    fault(spec);
    uint64_t w = 0;
    afs_error err;
    memset(&err, 0, sizeof err);
    EXPECT(afs_body_stream_write_to_fd(fx.bs, fd, &w, &err) == AFS_E_IO);
    cur->fired = shim_fired();
    EXPECT(cur->fired > 0);
    fault("");
    outcome_from(&err);
    EXPECT(err.os_errno == ENOSPC);
    EXPECT_HAS(err.message, "No space left on device");
    EXPECT(w == (uint64_t)limit && afs_body_stream_position(fx.bs) == w);
    EXPECT(afs_body_stream_error(fx.bs, NULL) == AFS_OK);            /* the destination: not sticky */
    EXPECT(count_fds() <= fds + 1);          /* at most the file part it stopped in stays open */
    close(fd);
    int fd2 = open_out("out2.bin", 0);
    uint64_t w2 = 0;
    EXPECT(afs_body_stream_write_to_fd(fx.bs, fd2, &w2, &err) == AFS_OK);
    close(fd2);
    EXPECT(w + w2 == fx.ref.n);
    bytes a = out_bytes("out.bin"), b = out_bytes("out2.bin");
    EXPECT(a.n == w && b.n == w2 && memcmp(a.p, fx.ref.p, a.n) == 0 && memcmp(b.p, fx.ref.p + w, b.n) == 0);
    free(a.p);
    free(b.p);
    teardown(&fx);
}
static void s_wfd_disk_full_headers(void) { disk_full(100); }
static void s_wfd_disk_full_file_part(void) { disk_full(70000); }

static void s_wfd_dest_eio(void) {
    fixture fx;
    setup(&fx);
    int fd = open_out("out.bin", 0);
    fault("op=writev|write|cfr,path=out.bin,errno=EIO");
    uint64_t w = 99;
    afs_error err;
    EXPECT(afs_body_stream_write_to_fd(fx.bs, fd, &w, &err) == AFS_E_IO);
    cur->fired = shim_fired();
    fault("");
    outcome_from(&err);
    EXPECT(err.os_errno == EIO && w == 0 && afs_body_stream_position(fx.bs) == 0);
    EXPECT(afs_body_stream_error(fx.bs, NULL) == AFS_OK);
    EXPECT(afs_body_stream_write_to_fd(fx.bs, fd, &w, &err) == AFS_OK && w == fx.ref.n);
    close(fd);
    bytes file = out_bytes("out.bin");
    EXPECT(same(&file, fx.ref.p, fx.ref.n));
    free(file.p);
    teardown(&fx);
}

/* A reader thread on a socket: reads `stop_after` bytes (0: all) then closes. */
typedef struct { int fd; size_t stop_after; bytes got; } reader_t;
static void *reader(void *arg) {
    reader_t *rd = arg;
    uint8_t buf[8192];
    for (;;) {
        size_t want = sizeof buf;
        if (rd->stop_after && rd->stop_after - rd->got.n < want) want = rd->stop_after - rd->got.n;
        if (rd->stop_after && want == 0) break;
        ssize_t n = read(rd->fd, buf, want);
        if (n <= 0) break;
        bytes_add(&rd->got, buf, (size_t)n);
    }
    close(rd->fd);
    return NULL;
}

static void s_peer_closes_socket(void) {
    signal(SIGPIPE, SIG_DFL);                /* a SIGPIPE would kill this child */
    fixture fx;
    setup(&fx);
    int sv[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    int small = 4096;                        /* so the body cannot sit in the socket buffers */
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    int fds = count_fds();
    reader_t rd = { sv[1], 30000, {0} };
    pthread_t th;
    pthread_create(&th, NULL, reader, &rd);
    uint64_t w = 0;
    afs_error err;
    memset(&err, 0, sizeof err);
    EXPECT(afs_body_stream_write_to_fd(fx.bs, sv[0], &w, &err) == AFS_E_IO);
    pthread_join(th, NULL);
    outcome_from(&err);
    mask_number_after("body offset ");
    EXPECT(err.os_errno == EPIPE || err.os_errno == ECONNRESET);
    EXPECT(w >= 30000 && w < fx.ref.n && afs_body_stream_position(fx.bs) == w);
    EXPECT(rd.got.n == 30000 && memcmp(rd.got.p, fx.ref.p, rd.got.n) == 0);
    EXPECT(afs_body_stream_error(fx.bs, NULL) == AFS_OK);
    sigset_t pending;
    sigpending(&pending);
    EXPECT(!sigismember(&pending, SIGPIPE));
    EXPECT(count_fds() <= fds);              /* the reader closed its end; a file part may be open */
    close(sv[0]);
    bytes rest = {0};
    EXPECT(drain(fx.bs, 4096, &rest) == 0);
    EXPECT(rest.n == fx.ref.n - w && memcmp(rest.p, fx.ref.p + w, rest.n) == 0);
    cur->fired = 1;                          /* a real peer, no shim rule */
    free(rest.p);
    free(rd.got.p);
    teardown(&fx);
}

static void s_socket_sendfile_short(void) {
    fixture fx;
    setup(&fx);
    int sv[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    reader_t rd = { sv[1], 0, {0} };
    pthread_t th;
    pthread_create(&th, NULL, reader, &rd);
    fault("op=sendfile,times=0,max=1;op=writev,path=socket:,times=0,max=3");
    uint64_t w = 0;
    afs_error err;
    afs_status st = afs_body_stream_write_to_fd(fx.bs, sv[0], &w, &err);
    cur->fired = shim_fired();
    fault("");
    cur->status = st;
    EXPECT(st == AFS_OK && w == fx.ref.n);
    close(sv[0]);
    pthread_join(th, NULL);
    EXPECT(same(&rd.got, fx.ref.p, fx.ref.n));
    EXPECT(cur->fired > BIG);
    snprintf(cur->message, sizeof cur->message, "the peer receives byte for byte the body read without faults");
    free(rd.got.p);
    teardown(&fx);
}

static void s_nonblocking_socket_eagain(void) {
    fixture fx;
    setup(&fx);
    int sv[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    uint64_t w = 0;
    afs_error err;
    memset(&err, 0, sizeof err);
    EXPECT(afs_body_stream_write_to_fd(fx.bs, sv[0], &w, &err) == AFS_E_IO);
    outcome_from(&err);
    mask_number_after("body offset ");
    EXPECT(err.os_errno == EAGAIN);
    EXPECT(w < fx.ref.n && afs_body_stream_position(fx.bs) == w);
    EXPECT(afs_body_stream_error(fx.bs, NULL) == AFS_OK);
    /* a reader appears and the socket blocks again: the rest goes out */
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) & ~O_NONBLOCK);
    reader_t rd = { sv[1], 0, {0} };
    pthread_t th;
    pthread_create(&th, NULL, reader, &rd);
    uint64_t w2 = 0;
    EXPECT(afs_body_stream_write_to_fd(fx.bs, sv[0], &w2, &err) == AFS_OK);
    close(sv[0]);
    pthread_join(th, NULL);
    EXPECT(w + w2 == fx.ref.n && same(&rd.got, fx.ref.p, fx.ref.n));
    cur->fired = 1;
    free(rd.got.p);
    teardown(&fx);
}

/* Interruptible writes (issue 19): EINTR on the socket returns to the caller each time
 * (AFS_E_IO, errno EINTR, position = bytes written), and calling again resumes; the peer
 * gets every byte once. */
static void socket_eintr_interruptible(int request) {
    fixture fx;
    setup(&fx);
    int sv[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    reader_t rd = { sv[1], 0, {0} };
    pthread_t th;
    pthread_create(&th, NULL, reader, &rd);
    size_t hlen = 0;
    char *head = request ? afs_request_copy_head(fx.r, &hlen, NULL) : NULL;
    if (request) afs_request_set_interruptible(fx.r, true);
    else afs_body_stream_set_interruptible(fx.bs, true);
    fault("op=sendfile|writev|write,path=socket:,times=3,errno=EINTR");
    uint64_t w = 0, total = 0;
    afs_error err;
    int interrupted = 0, calls = 0;
    afs_status st;
    do {
        memset(&err, 0, sizeof err);
        st = request ? afs_request_write_to_fd(fx.r, sv[0], &w, &err) : afs_body_stream_write_to_fd(fx.bs, sv[0], &w, &err);
        total += w;
        calls++;
        if (st == AFS_E_IO && err.os_errno == EINTR) {
            interrupted++;
            EXPECT(request || afs_body_stream_position(fx.bs) == total);
            if (interrupted == 1) { outcome_from(&err); mask_number_after("offset "); }
        }
    } while (st == AFS_E_IO && err.os_errno == EINTR && calls < 10);
    cur->fired = shim_fired();
    fault("");
    EXPECT(st == AFS_OK && interrupted == 3 && total == hlen + fx.ref.n);
    close(sv[0]);
    pthread_join(th, NULL);
    EXPECT(rd.got.n == hlen + fx.ref.n && (!head || memcmp(rd.got.p, head, hlen) == 0));
    EXPECT(rd.got.n >= hlen && memcmp(rd.got.p + hlen, fx.ref.p, fx.ref.n) == 0);
    afs_free(head);
    free(rd.got.p);
    teardown(&fx);
}
static void s_socket_eintr_interruptible(void) { socket_eintr_interruptible(0); }
static void s_request_eintr_interruptible(void) { socket_eintr_interruptible(1); }

/* ---- afs_request_write_body_to_file ------------------------------------------------------------ */

static int leftovers(void) {
    int n = 0;
    DIR *d = opendir(scratch);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) if (strstr(e->d_name, ".tmp")) n++;
    if (d) closedir(d);
    return n;
}

/* write_body_to_file under `spec` must fail with `code`, keep the old file and leave no
 * temporary file; r's stream keeps its position and still gives the whole body. */
static void body_to_file_fault(const char *spec, afs_status code, int os_errno, const char *needle) {
    fixture fx;
    setup(&fx);
    char out[600];
    spath(out, sizeof out, "body.out");
    FILE *old = fopen(out, "wb");
    fputs("old", old);
    fclose(old);
    uint8_t b[100];
    EXPECT(afs_body_stream_read(fx.bs, b, sizeof b) == 100);
    int fds = count_fds();
    fault(spec);
    afs_error err;
    memset(&err, 0, sizeof err);
    afs_request *copy = afs_request_write_body_to_file(fx.r, out, &err);
    cur->fired = shim_fired();
    EXPECT(cur->fired > 0);
    fault("");
    outcome_from(&err);
    EXPECT(copy == NULL);
    afs_request_free(copy);
    EXPECT(err.code == code);
    if (os_errno >= 0) EXPECT(err.os_errno == os_errno);
    EXPECT_HAS(err.message, needle);
    bytes kept = read_whole(out);
    EXPECT(kept.n == 3 && memcmp(kept.p, "old", 3) == 0);
    free(kept.p);
    EXPECT(leftovers() == 0);
    EXPECT(count_fds() == fds);
    EXPECT(afs_body_stream_position(fx.bs) == 100);
    bytes rest = {0};
    EXPECT(drain(fx.bs, 65536, &rest) == 0);
    EXPECT(rest.n == fx.ref.n - 100 && memcmp(rest.p, fx.ref.p + 100, rest.n) == 0);
    free(rest.p);
    /* and without the fault it works */
    copy = afs_request_write_body_to_file(fx.r, out, &err);
    EXPECT(copy != NULL);
    afs_request_free(copy);
    bytes file = read_whole(out);
    EXPECT(same(&file, fx.ref.p, fx.ref.n));
    free(file.p);
    unlink(out);
    teardown(&fx);
}
static void s_file_disk_full(void) {
    body_to_file_fault("op=write|writev|cfr,path=body.out,limit=50000", AFS_E_IO, ENOSPC, "No space left on device");
}
static void s_file_close_eio(void) {
    body_to_file_fault("op=close,path=body.out.afs-,errno=EIO", AFS_E_IO, EIO, "Input/output error");
}
static void s_file_rename_fails(void) {
    body_to_file_fault("op=rename,path=body.out,errno=EXDEV", AFS_E_IO, EXDEV, "cannot rename the temporary file");
}
static void s_file_create_fails(void) {
    body_to_file_fault("op=open,path=body.out.afs-,errno=EROFS", AFS_E_IO, EROFS, "cannot create a temporary file");
}
static void s_file_source_eio(void) {
    body_to_file_fault("op=cfr|pread,path=big.bin,times=0,errno=EIO", AFS_E_IO, EIO, "big.bin");
}


/* ---- allocation failure, one site at a time ------------------------------------------------ *
 * The library's checked allocations (every buffer that grows with the input, and the probe
 * before a large Swift array or string) go through realloc. Each scenario runs one operation
 * again and again with the k-th realloc failing (k = 1, 2, …) until a run makes no realloc
 * call k: every site the operation reaches fails once. Each run must end in AFS_E_NO_MEMORY
 * or, for an allocation whose failure is harmless (giving back spare capacity), in AFS_OK;
 * never a crash, and (run twice, measured) without leaking. */

typedef afs_status (*alloc_op)(afs_error *e);

static void walk_alloc_sites(const char *what, alloc_op op, long min) {
    int failed_runs = 0, absorbed = 0;
    long k;
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) {
        /* valgrind replaces realloc, so the shim never sees it: run the operation once,
         * for valgrind's memory checks of the success path */
        afs_error e;
        memset(&e, 0, sizeof e);
        if (op(&e) != AFS_OK) note("%s under valgrind: %s", what, e.message);
        cur->status = AFS_E_NO_MEMORY;
        cur->os_errno = ENOMEM;
        return;
    }
    for (k = 1; k < 5000; k++) {
        char spec[96];
        snprintf(spec, sizeof spec, "op=realloc,path=libafserialization,min=%ld,nth=%ld,errno=ENOMEM", min, k);
        fault(spec);
        afs_error e;
        memset(&e, 0, sizeof e);
        afs_status st = op(&e);
        long fired = shim_fired();
        fault("");
        if (fired == 0) {
            if (st != AFS_OK) note("%s without a fault: %s: %s", what, afs_status_name(st), e.message);
            break;
        }
        if (st == AFS_E_NO_MEMORY) {
            failed_runs++;
            if (!strstr(e.message, "out of memory")) note("realloc #%ld: message \"%s\"", k, e.message);
        } else if (st == AFS_OK) {
            absorbed++;
        } else {
            note("realloc #%ld failing: %s (%s)", k, afs_status_name(st), e.message);
        }
    }
    if (failed_runs == 0) note("%s: no allocation failure was reported", what);
    cur->status = AFS_E_NO_MEMORY;
    cur->os_errno = ENOMEM;
    cur->fired = k - 1;
    snprintf(cur->message, sizeof cur->message,
             "%s: %ld realloc calls failed one at a time: %d gave AFS_E_NO_MEMORY, %d were harmless",
             what, k - 1, failed_runs, absorbed);
}

/* params {"user": {"name": "Zoë \"q\"", "tags": ["a", 1, 2.5, true, null], "blob": <20 KiB>},
 *         "n": [[[1]]]} — strings past the probe threshold, nesting, every scalar kind */
static afs_value *alloc_params(int with_null) {
    static char blob[20 * 1024 + 1];
    memset(blob, 'b', sizeof blob - 1);
    blob[10] = ' ';
    afs_error e;
    afs_value *d = afs_value_new_dict(), *u = afs_value_new_dict(), *t = afs_value_new_array();
    afs_value_dict_set(u, "name", AFS_NTS, afs_value_new_string("Zo\xc3\xab \"q\"", AFS_NTS, &e), &e);
    afs_value_append(t, afs_value_new_string("a", AFS_NTS, &e), &e);
    afs_value_append(t, afs_value_new_int(1), &e);
    afs_value_append(t, afs_value_new_double(2.5), &e);
    afs_value_append(t, afs_value_new_bool(true), &e);
    if (with_null) afs_value_append(t, afs_value_new_null(), &e);
    afs_value_dict_set(u, "tags", AFS_NTS, t, &e);
    afs_value_dict_set(u, "blob", AFS_NTS, afs_value_new_string(blob, AFS_NTS, &e), &e);
    afs_value_dict_set(d, "user", AFS_NTS, u, &e);
    afs_value *a = afs_value_new_array(), *b = afs_value_new_array(), *c = afs_value_new_array();
    afs_value_append(c, afs_value_new_int(1), &e);
    afs_value_append(b, c, &e);
    afs_value_append(a, b, &e);
    afs_value_dict_set(d, "n", AFS_NTS, a, &e);
    return d;
}

static afs_status request_op(afs_serializer_kind kind, int format, const char *method, afs_error *e) {
    afs_value *d = alloc_params(kind == AFS_SERIALIZER_HTTP);
    afs_serializer *s = afs_serializer_new(kind);
    if (format) afs_serializer_set_plist_format(s, format, e);
    afs_request *r = afs_serializer_request(s, method, "https://example.com/p", d, e);
    afs_status st = r ? AFS_OK : e->code;
    afs_request_free(r);
    afs_serializer_free(s);
    afs_value_free(d);
    return st;
}
static afs_status op_json(afs_error *e) { return request_op(AFS_SERIALIZER_JSON, 0, "POST", e); }
static afs_status op_plist_xml(afs_error *e) { return request_op(AFS_SERIALIZER_PLIST, AFS_PLIST_XML, "POST", e); }
static afs_status op_plist_binary(afs_error *e) { return request_op(AFS_SERIALIZER_PLIST, AFS_PLIST_BINARY, "POST", e); }
static afs_status op_form(afs_error *e) { return request_op(AFS_SERIALIZER_HTTP, 0, "POST", e); }
static afs_status op_query(afs_error *e) { return request_op(AFS_SERIALIZER_HTTP, 0, "GET", e); }

static afs_status op_escape(afs_error *e) {
    static char text[40 * 1024 + 1];
    memset(text, ' ', sizeof text - 1);
    char *out = afs_percent_escape(text, AFS_NTS, e);
    afs_status st = out ? AFS_OK : e->code;
    afs_free(out);
    return st;
}

static afs_status op_multipart(afs_error *e) {
    static char data[100 * 1024];
    memset(data, 'm', sizeof data);
    afs_value *d = alloc_params(1);
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "https://example.com/up", d, e);
    afs_status st = f ? AFS_OK : e->code;
    if (st == AFS_OK) st = afs_form_append_form_data(f, data, sizeof data, "data", e);
    if (st == AFS_OK) st = afs_form_append_file_data(f, data, sizeof data, "file", "f.bin", NULL, e);
    afs_request *r = NULL;
    if (st == AFS_OK) {
        r = afs_form_finish(f, e);
        if (!r) st = e->code;
    }
    if (st == AFS_OK) {
        char path[600];
        spath(path, sizeof path, "alloc-body.out");
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        st = afs_body_stream_write_to_fd(afs_request_body_stream(r), fd, NULL, e);
        close(fd);
        unlink(path);
    }
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
    afs_value_free(d);
    return st;
}

static const char alloc_json[] =
    "{\"a\":[1,2.5,\"x\\u00e9\",true,null,{\"k\":[[[]]]}],\"b\":{\"c\":\"d\"},\"e\":\"\\\"esc\\\"\"}";

static afs_status response_op(afs_response_kind kind, const char *type, const void *body, size_t len, afs_error *e) {
    afs_response_serializer *rs = afs_response_serializer_new(kind);
    afs_response_serializer_set_removes_keys_with_null_values(rs, true);
    afs_value *v = NULL;
    afs_status st = afs_response_object(rs, 200, type, body, len, &v, e);
    afs_value_free(v);
    afs_response_serializer_free(rs);
    return st;
}
static afs_status op_parse_json(afs_error *e) {
    afs_value *v = afs_value_parse_json(alloc_json, AFS_NTS, e);
    afs_status st = v ? AFS_OK : e->code;
    afs_value_free(v);
    return st;
}
static afs_status op_response_json(afs_error *e) {
    return response_op(AFS_RESPONSE_JSON, "application/json", alloc_json, strlen(alloc_json), e);
}
static afs_status op_response_plist(afs_error *e) {
    static const char xml[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict><key>a</key><array>"
        "<integer>1</integer><real>2.5</real><string>x&amp;y</string><true/><data>AAEC</data>"
        "<date>2001-01-01T00:00:00Z</date></array><key>b</key><dict><key>c</key><string>d</string></dict>"
        "</dict></plist>";
    return response_op(AFS_RESPONSE_PLIST, "application/x-plist", xml, strlen(xml), e);
}
static void s_alloc_json(void) { walk_alloc_sites("JSON request", op_json, 0); }
static void s_alloc_plist_xml(void) { walk_alloc_sites("XML plist request", op_plist_xml, 0); }
static void s_alloc_plist_binary(void) { walk_alloc_sites("binary plist request", op_plist_binary, 0); }
static void s_alloc_form(void) { walk_alloc_sites("form-urlencoded request", op_form, 0); }
static void s_alloc_query(void) { walk_alloc_sites("GET with a query", op_query, 0); }
static void s_alloc_escape(void) { walk_alloc_sites("afs_percent_escape", op_escape, 0); }
static void s_alloc_multipart(void) { walk_alloc_sites("multipart form, finish, write_to_fd", op_multipart, 0); }
static void s_alloc_parse_json(void) { walk_alloc_sites("afs_value_parse_json", op_parse_json, 0); }
static void s_alloc_response_json(void) { walk_alloc_sites("JSON response", op_response_json, 0); }
static void s_alloc_response_plist(void) { walk_alloc_sites("XML plist response", op_response_plist, 0); }

/* ---- body transforms (issue 22): chunked framing, compression ----------------------------- */

typedef struct { size_t pos, len; } counter_src;
static int64_t counter_read(void *ctx, uint8_t *buf, size_t max) {
    counter_src *c = ctx;
    size_t k = c->len - c->pos;
    if (k > max) k = max;
    for (size_t i = 0; i < k; i++) buf[i] = (uint8_t)('a' + (c->pos + i) % 23);
    c->pos += k;
    return (int64_t)k;
}
static int counter_rewind(void *ctx) { ((counter_src *)ctx)->pos = 0; return 0; }

/* A chunked request (a 200 KB file part and a source of unknown length), written with
 * afs_request_write_to_fd to a regular file while the file part fails inside its chunk. */
static void s_chunked_file_eio_in_chunk(void) {
    char path[600], out[600], spec[700];
    make_file("chunk.bin", 200000, 7);
    spath(path, sizeof path, "chunk.bin");
    spath(out, sizeof out, "chunked.out");
    afs_error e;
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_HTTP);
    afs_form *f = afs_serializer_multipart_form(s, "POST", "http://127.0.0.1/up", NULL, &e);
    counter_src c = { 0, 50000 };
    EXPECT(afs_form_append_file(f, path, "f", &e) == AFS_OK);
    EXPECT(afs_form_append_stream(f, counter_read, counter_rewind, NULL, &c, AFS_LENGTH_UNKNOWN, "s", "s.bin", NULL, &e) == AFS_OK);
    afs_request *r = afs_form_finish(f, &e);
    EXPECT(r && afs_request_is_chunked(r));
    int fds = count_fds();
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    snprintf(spec, sizeof spec, "op=cfr|pread|sendfile,path=chunk.bin,nth=2,times=0,errno=EIO");
    fault(spec);
    uint64_t n = 0;
    afs_status st = afs_request_write_to_fd(r, fd, &n, &e);
    cur->fired = shim_fired();
    fault("");
    close(fd);
    EXPECT(cur->fired > 0);
    EXPECT(st == AFS_E_IO);
    outcome_from(&e);
    EXPECT_HAS(e.message, "chunk.bin");
    EXPECT(count_fds() == fds);
    /* the next attempt (a new connection) sends the whole request again */
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    afs_error e2;
    EXPECT(afs_request_write_to_fd(r, fd, &n, &e2) == AFS_E_IO);  /* the sticky source error */
    close(fd);
    EXPECT(afs_body_stream_rewind(afs_request_body_stream(r), &e2) == AFS_OK);
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT(afs_request_write_to_fd(r, fd, &n, &e2) == AFS_OK);
    close(fd);
    bytes got = read_whole(out);
    EXPECT(got.n == n && got.n > 250000 && memcmp(got.p + got.n - 5, "0\r\n\r\n", 5) == 0);
    EXPECT(got.n > 5 && memcmp(got.p, "POST /up HTTP/1.1\r\n", 19) == 0);  /* the head again */
    free(got.p);
    unlink(out);
    afs_request_free(r);
    afs_form_free(f);
    afs_serializer_free(s);
}

/* A 100 KB body compressed with `coding` while streaming, then exactly; digests too. */
static afs_status compress_op(const char *coding, afs_error *e) {
    static char data[100 * 1024];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (char)('a' + (i * 7 + i / 13) % 19);
    afs_value *d = afs_value_new_dict();
    afs_value_dict_set(d, "blob", AFS_NTS, afs_value_new_string(data, sizeof data, NULL), NULL);
    afs_serializer *s = afs_serializer_new(AFS_SERIALIZER_JSON);
    afs_request *r = afs_serializer_request(s, "POST", "http://127.0.0.1/x", d, e);
    afs_request *x = afs_serializer_request(s, "POST", "http://127.0.0.1/x", d, e);
    afs_status st = r && x ? AFS_OK : e->code;
    if (st == AFS_OK) st = afs_request_set_content_encoding(r, coding, 1, 0, e);
    if (st == AFS_OK) st = afs_request_add_digest(r, "sha-256", AFS_DIGEST_HEADER, e);
    if (st == AFS_OK) st = afs_request_add_digest(r, "md5", AFS_DIGEST_TRAILER, e);
    if (st == AFS_OK) {
        char path[600];
        spath(path, sizeof path, "compressed.out");
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        uint64_t n;
        st = afs_request_write_to_fd(r, fd, &n, e);
        close(fd);
        unlink(path);
    }
    if (st == AFS_OK) st = afs_request_set_content_encoding(x, coding, 1, AFS_COMPRESS_EXACT, e);
    afs_request_free(r);
    afs_request_free(x);
    afs_serializer_free(s);
    afs_value_free(d);
    return st;
}
static afs_status op_gzip(afs_error *e) { return compress_op("gzip", e); }
static afs_status op_br(afs_error *e) { return compress_op("br", e); }
static void s_alloc_compress_gzip(void) { walk_alloc_sites("gzip compression (chunked, exact, digests)", op_gzip, 0); }
static void s_alloc_compress_br(void) { walk_alloc_sites("br compression (chunked, exact, digests)", op_br, 0); }

/* ---- the table ------------------------------------------------------------------------------ */

typedef struct {
    const char *name, *group, *description;
    void (*fn)(void);
} scenario;

static const scenario scenarios[] = {
    {"read-eio-midway", "read", "pread of a file part fails with EIO on its 3rd call", s_read_eio},
    {"read-eintr", "read", "pread interrupted (EINTR) 5 times", s_read_eintr},
    {"read-short-1-byte", "read", "every pread returns 1 byte; body read with 64 KiB buffers", s_read_short},
    {"open-emfile", "read", "opening the file part fails with EMFILE", s_open_emfile},
    {"fstat-eio", "read", "fstat of the opened file part fails with EIO", s_fstat_eio},
    {"deleted-before-read", "read", "file deleted between append and read", s_deleted},
    {"replaced-same-size", "read", "file replaced by another of the same size", s_replaced_same_size},
    {"replaced-other-size", "read", "file replaced by a 500-byte file", s_replaced_other_size},
    {"replaced-by-directory", "read", "file replaced by a directory", s_replaced_by_directory},
    {"replaced-by-fifo", "read", "file replaced by a FIFO without writer", s_replaced_by_fifo},
    {"grows-while-read", "read", "file grows by 10 bytes during the 3rd pread", s_grows_while_read},
    {"shrinks-while-read", "read", "file truncated to 50000 bytes during the 3rd pread", s_shrinks_while_read},
    {"wfd-source-eio", "write_to_fd", "copy_file_range and pread of the file part fail with EIO", s_wfd_source_eio},
    {"wfd-grows", "write_to_fd", "file grows by 10 bytes at the 3rd copy_file_range (16 KiB each)", s_wfd_grows},
    {"wfd-shrinks", "write_to_fd", "file truncated to 30000 bytes at the 3rd copy_file_range (16 KiB each)", s_wfd_shrinks},
    {"wfd-cfr-eio-once", "write_to_fd", "one copy_file_range fails with EIO (falls back to read/write)", s_wfd_cfr_eio_once},
    {"wfd-cfr-exdev", "write_to_fd", "copy_file_range always EXDEV", s_wfd_cfr_exdev},
    {"wfd-cfr-enosys", "write_to_fd", "copy_file_range always ENOSYS", s_wfd_cfr_enosys},
    {"wfd-eintr", "write_to_fd", "writev, write and copy_file_range interrupted (EINTR) twice each", s_wfd_eintr},
    {"wfd-short-writes", "write_to_fd", "every write, writev and copy_file_range moves at most 7 bytes", s_wfd_short},
    {"wfd-disk-full-headers", "write_to_fd", "disk full after 100 bytes (inside the headers)", s_wfd_disk_full_headers},
    {"wfd-disk-full-file-part", "write_to_fd", "disk full after 70000 bytes (inside a file part)", s_wfd_disk_full_file_part},
    {"wfd-destination-eio", "write_to_fd", "the first write to the destination fails with EIO", s_wfd_dest_eio},
    {"wfd-peer-closes-socket", "write_to_fd", "socket peer reads 30000 bytes and closes (SIGPIPE default)", s_peer_closes_socket},
    {"wfd-socket-short", "write_to_fd", "sendfile moves 1 byte and writev 3 bytes per call to a socket", s_socket_sendfile_short},
    {"wfd-nonblocking-eagain", "write_to_fd", "non-blocking socket with a full buffer (EAGAIN), then a reader", s_nonblocking_socket_eagain},
    {"wfd-socket-eintr-interruptible", "write_to_fd", "afs_body_stream_set_interruptible: sendfile, writev and write to a socket interrupted (EINTR) 3 times, each returned to the caller, then resumed", s_socket_eintr_interruptible},
    {"wfd-request-eintr-interruptible", "write_to_fd", "afs_request_set_interruptible: the request's writes to a socket interrupted (EINTR) 3 times, each returned to the caller, then resumed", s_request_eintr_interruptible},
    {"file-disk-full", "write_body_to_file", "disk full after 50000 bytes of the temporary file", s_file_disk_full},
    {"file-close-eio", "write_body_to_file", "close of the temporary file fails with EIO", s_file_close_eio},
    {"file-rename-fails", "write_body_to_file", "rename over the destination fails with EXDEV", s_file_rename_fails},
    {"file-create-fails", "write_body_to_file", "creating the temporary file fails with EROFS", s_file_create_fails},
    {"file-source-eio", "write_body_to_file", "a file part fails with EIO (copy_file_range and pread)", s_file_source_eio},
    {"alloc-json-request", "alloc", "each realloc of a JSON request (nested params, a 20 KiB string) fails in turn", s_alloc_json},
    {"alloc-plist-xml-request", "alloc", "each realloc of an XML plist request fails in turn", s_alloc_plist_xml},
    {"alloc-plist-binary-request", "alloc", "each realloc of a binary plist request fails in turn", s_alloc_plist_binary},
    {"alloc-form-request", "alloc", "each realloc of a form-urlencoded POST fails in turn", s_alloc_form},
    {"alloc-query-request", "alloc", "each realloc of a GET with a query string fails in turn", s_alloc_query},
    {"alloc-percent-escape", "alloc", "each realloc of afs_percent_escape (40 KiB) fails in turn", s_alloc_escape},
    {"alloc-multipart", "alloc", "each realloc of a multipart form (params, 100 KiB parts), finish and write_to_fd fails in turn", s_alloc_multipart},
    {"alloc-parse-json", "alloc", "each realloc of afs_value_parse_json fails in turn", s_alloc_parse_json},
    {"alloc-response-json", "alloc", "each realloc of a JSON response (null removal on) fails in turn", s_alloc_response_json},
    {"alloc-response-plist", "alloc", "each realloc of an XML plist response fails in turn", s_alloc_response_plist},
    {"chunked-file-eio-in-chunk", "write_to_fd", "a chunked request's file part fails with EIO inside its chunk (copy_file_range, pread)", s_chunked_file_eio_in_chunk},
    {"alloc-compress-gzip", "alloc", "each realloc of gzip compression (zlib's own allocations included), digests, exact fails in turn", s_alloc_compress_gzip},
    {"alloc-compress-br", "alloc", "each realloc of br compression (the library's buffers; libbrotli's own allocations fall back to malloc, see the header), digests, exact fails in turn", s_alloc_compress_br},
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

/* Writes s with the scratch directory shown as <tmp> and tabs/newlines as spaces. */
static void print_masked(const char *s, const char *dir) {
    size_t sl = strlen(dir);
    while (*s) {
        if (sl && strncmp(s, dir, sl) == 0) {
            fputs("<tmp>", stdout);
            s += sl;
        } else if (strncmp(s, "file descriptor ", 16) == 0 && s[16] >= '0' && s[16] <= '9') {
            fputs("file descriptor <fd>", stdout);   /* depends on what the caller has open */
            s += 16;
            while (*s >= '0' && *s <= '9') s++;
        } else {
            putchar(*s == '\t' || *s == '\n' ? ' ' : *s);
            s++;
        }
    }
}

typedef struct {
    outcome o;
    int fds_before, fds_after;
    size_t heap_before, heap_after;
} report;

static void child(const scenario *sc, int out) {
    alarm(getenv("AFS_FAULT_TIMEOUT") ? atoi(getenv("AFS_FAULT_TIMEOUT")) : 60);
    size_t n = strlen(scratch);
    snprintf(scratch + n, sizeof scratch - n, "/%s", sc->name);
    if (mkdir(scratch, 0755) != 0) { perror("mkdir"); _exit(3); }
    static outcome warm, measured;
    cur = &warm;
    sc->fn();                                    /* warms up one-time caches */
    fault("");
    report rep;
    memset(&rep, 0, sizeof rep);
    rep.fds_before = count_fds();
    rep.heap_before = heap_in_use();
    cur = &measured;
    sc->fn();
    fault("");
    rep.fds_after = count_fds();
    rep.heap_after = heap_in_use();
    rep.o = measured;
    if (warm.failures && !measured.failures) { rep.o.failures = warm.failures; snprintf(rep.o.notes, sizeof rep.o.notes, "warm-up: %.1000s", warm.notes); }
    if (rep.fds_after != rep.fds_before) { rep.o.failures++; strncat(rep.o.notes, "; descriptor leaked", sizeof rep.o.notes - strlen(rep.o.notes) - 1); }
    if (rep.heap_after != rep.heap_before) { rep.o.failures++; strncat(rep.o.notes, "; heap grew", sizeof rep.o.notes - strlen(rep.o.notes) - 1); }
    if (write(out, &rep, sizeof rep) != (ssize_t)sizeof rep) _exit(3);
    close(out);
    exit(0);   /* exit, not _exit: valgrind's leak check runs for this process too */
}

int main(int argc, char **argv) {
    const char *only = NULL, *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0) {
            for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++)
                printf("%s\t%s\t%s\n", scenarios[k].name, scenarios[k].group, scenarios[k].description);
            return 0;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            dir = argv[i];
        }
    }
    shim_set = (int (*)(const char *))dlsym(RTLD_DEFAULT, "afs_fault_set");
    shim_fired = (long (*)(void))dlsym(RTLD_DEFAULT, "afs_fault_fired");
    if (!shim_set || !shim_fired) {
        fprintf(stderr, "fault: run with LD_PRELOAD=libafsfault.so\n");
        return 2;
    }
    if (!dir || !*dir) dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(scratch, sizeof scratch, "%s/afs_fault_XXXXXX", dir);
    if (!mkdtemp(scratch)) { perror("mkdtemp"); return 2; }

    int failed = 0;
    for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++) {
        const scenario *sc = &scenarios[k];
        if (only && strcmp(only, sc->name) != 0) continue;
        char sub[700];
        snprintf(sub, sizeof sub, "%s/%s", scratch, sc->name);
        int p[2];
        if (pipe(p) != 0) { perror("pipe"); return 2; }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            child(sc, p[1]);
        }
        close(p[1]);
        report rep;
        memset(&rep, 0, sizeof rep);
        ssize_t got = read(p[0], &rep, sizeof rep);
        close(p[0]);
        int ws = 0;
        waitpid(pid, &ws, 0);
        nftw(sub, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        const char *verdict = "PASS";
        char why[128] = "";
        if (got != (ssize_t)sizeof rep || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            verdict = "FAIL";
            if (WIFSIGNALED(ws)) snprintf(why, sizeof why, "killed by signal %d (%s)", WTERMSIG(ws),
                                          WTERMSIG(ws) == SIGALRM ? "hung" : strsignal(WTERMSIG(ws)));
            else snprintf(why, sizeof why, "exit status %d", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
            if (got != (ssize_t)sizeof rep) { memset(&rep, 0, sizeof rep); rep.o.status = (afs_status)-1; }
        } else if (rep.o.failures) {
            verdict = "FAIL";
        }
        if (strcmp(verdict, "PASS") != 0) failed++;
        printf("%s\t%s\t%s\t%s\t%s\t%s\t", sc->name, sc->group, sc->description, verdict,
               rep.o.status == (afs_status)-1 ? "-" : afs_status_name(rep.o.status),
               rep.o.os_errno ? strerrorname_np(rep.o.os_errno) : "-");
        print_masked(rep.o.status == (afs_status)-1 || !rep.o.message[0] ? "-" : rep.o.message, sub);
        printf("\t%ld\t%d\t%d\t%zu\t%zu\t%d\t", rep.o.fired, rep.fds_before, rep.fds_after,
               rep.heap_before, rep.heap_after, (int)pid);
        print_masked(why[0] ? why : rep.o.notes[0] ? rep.o.notes : "-", sub);
        putchar('\n');
    }
    rmdir(scratch);
    return failed ? 1 : 0;
}
