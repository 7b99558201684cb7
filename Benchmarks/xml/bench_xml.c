/* XML benchmark (issue 24): the library's event pass (afs_xml_parse with counting
 * callbacks) and tree (afs_response_object with an AFS_RESPONSE_XML serializer) beside
 * expat and libxml2's SAX interface, each with equivalent counting callbacks, on the same
 * bytes in the same run. Prints one Markdown table row per document and parser: the best
 * of N runs (process CPU time, so that other load on a shared machine counts less), MB/s,
 * and the ratios the issue asks about.
 *   bench_xml DOC... */
#define _POSIX_C_SOURCE 200809L
#include <expat.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "afserialization.h"

typedef struct { size_t starts, ends, chars, bytes; } counts;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);  /* CPU time: the machine may be shared */
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* the library */
static int a_start(void *c, const char *q, const char *u, const char *l, const afs_xml_attribute *a, size_t n) {
    (void)q; (void)u; (void)l; (void)a; (void)n; ((counts *)c)->starts++; return 0;
}
static int a_end(void *c, const char *q, const char *u, const char *l) { (void)q; (void)u; (void)l; ((counts *)c)->ends++; return 0; }
static int a_chars(void *c, const char *s, size_t n) { (void)s; ((counts *)c)->chars++; ((counts *)c)->bytes += n; return 0; }

/* expat (namespace processing on, as the library always does) */
static void e_start(void *c, const XML_Char *n, const XML_Char **a) { (void)n; (void)a; ((counts *)c)->starts++; }
static void e_end(void *c, const XML_Char *n) { (void)n; ((counts *)c)->ends++; }
static void e_chars(void *c, const XML_Char *s, int n) { (void)s; ((counts *)c)->chars++; ((counts *)c)->bytes += (size_t)n; }

/* libxml2 SAX2 (namespaces) */
static void x_start(void *c, const xmlChar *l, const xmlChar *p, const xmlChar *u, int nn, const xmlChar **ns, int na,
                    int nd, const xmlChar **at) {
    (void)l; (void)p; (void)u; (void)nn; (void)ns; (void)na; (void)nd; (void)at; ((counts *)c)->starts++;
}
static void x_end(void *c, const xmlChar *l, const xmlChar *p, const xmlChar *u) { (void)l; (void)p; (void)u; ((counts *)c)->ends++; }
static void x_chars(void *c, const xmlChar *s, int n) { (void)s; ((counts *)c)->chars++; ((counts *)c)->bytes += (size_t)n; }

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) { perror(path); exit(2); }
    fclose(f);
    return b;
}

enum { RUNS = 5 };

int main(int argc, char **argv) {
    printf("| document | parser | best of %d (ms) | MB/s | vs expat | elements | text bytes |\n", RUNS);
    puts("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for (int d = 1; d < argc; d++) {
        size_t n;
        char *doc = slurp(argv[d], &n);
        const char *name = strrchr(argv[d], '/') ? strrchr(argv[d], '/') + 1 : argv[d];
        double best[4] = {1e9, 1e9, 1e9, 1e9};
        counts cn[4];
        for (int r = 0; r < RUNS; r++) {
            /* the library: events */
            counts c = {0};
            afs_xml_handler h = {a_start, a_end, a_chars, NULL, NULL};
            afs_error err = {0};
            double t = now();
            if (afs_xml_parse((const uint8_t *)doc, n, &h, &c, &err) != AFS_OK) { fprintf(stderr, "afs: %s\n", err.message); return 1; }
            t = now() - t;
            if (t < best[0]) best[0] = t;
            cn[0] = c;
            /* the library: tree */
            afs_response_serializer *rs = afs_response_serializer_new(AFS_RESPONSE_XML);
            afs_value *v = NULL;
            t = now();
            if (afs_response_object(rs, 200, "application/xml", doc, n, &v, &err) != AFS_OK) { fprintf(stderr, "tree: %s\n", err.message); return 1; }
            t = now() - t;
            afs_value_free(v);
            afs_response_serializer_free(rs);
            if (t < best[1]) best[1] = t;
            /* expat */
            counts e = {0};
            XML_Parser p = XML_ParserCreateNS(NULL, ' ');
            XML_SetUserData(p, &e);
            XML_SetElementHandler(p, e_start, e_end);
            XML_SetCharacterDataHandler(p, e_chars);
            t = now();
            if (XML_Parse(p, doc, (int)n, 1) != XML_STATUS_OK) { fprintf(stderr, "expat failed\n"); return 1; }
            t = now() - t;
            XML_ParserFree(p);
            if (t < best[2]) best[2] = t;
            cn[2] = e;
            /* libxml2 SAX */
            counts x = {0};
            xmlSAXHandler sax;
            memset(&sax, 0, sizeof sax);
            sax.initialized = XML_SAX2_MAGIC;
            sax.startElementNs = x_start;
            sax.endElementNs = x_end;
            sax.characters = x_chars;
            t = now();
            if (xmlSAXUserParseMemory(&sax, &x, doc, (int)n) != 0) { fprintf(stderr, "libxml2 failed\n"); return 1; }
            t = now() - t;
            if (t < best[3]) best[3] = t;
            cn[3] = x;
        }
        const char *names[4] = {"afs events (afs_xml_parse)", "afs tree (JsonML)", "expat 2 (XML_ParserCreateNS)", "libxml2 SAX2"};
        int order[4] = {0, 1, 2, 3};
        for (int k = 0; k < 4; k++) {
            int i = order[k];
            printf("| %s | %s | %.1f | %.0f | %.2fx | %zu | %zu |\n", name, names[i], best[i] * 1e3, (double)n / best[i] / 1e6,
                   best[i] / best[2], i == 1 ? cn[0].starts : cn[i].starts, i == 1 ? cn[0].bytes : cn[i].bytes);
        }
        printf("| %s | tree / events | %.2fx | | | | |\n", name, best[1] / best[0]);
        free(doc);
    }
    return 0;
}
