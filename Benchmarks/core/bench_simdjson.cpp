// bench_simdjson — simdjson's DOM parser on the core benchmark's JSON documents, and its
// serializer (simdjson::minify of the parsed DOM) on the benchmark document.
//   bench_simdjson DIR      prints "name<TAB>peer<TAB>bytes<TAB>seconds" lines (best of 7)
#include <simdjson.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static const int reps = 7;

int main(int argc, char **argv) {
    if (argc < 2) { std::fprintf(stderr, "usage: bench_simdjson DIR\n"); return 2; }
    std::string dir = argv[1];
    const char *files[][2] = {{"doc.json", "doc_10MB"}, {"small_objects.json", "small_objects"}, {"long_strings.json", "long_strings"}};
    for (auto &f : files) {
        simdjson::padded_string text;
        if (simdjson::padded_string::load(dir + "/" + f[0]).get(text)) { std::perror(f[0]); return 1; }
        double best = 1e30, bestFresh = 1e30;
        simdjson::dom::parser parser;  // reused: its buffers are allocated once, as simdjson recommends
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            simdjson::dom::element doc;
            if (parser.parse(text).get(doc)) { std::fprintf(stderr, "simdjson failed on %s\n", f[0]); return 1; }
            double t = now() - t0;
            if (t < best) best = t;
        }
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            {
                simdjson::dom::parser fresh;  // a new parser per document: allocation and freeing included
                simdjson::dom::element doc;
                if (fresh.parse(text).get(doc)) return 1;
            }
            double t = now() - t0;
            if (t < bestFresh) bestFresh = t;
        }
        std::printf("parse_%s\tsimdjson DOM (parser reused)\t%zu\t%.6f\n", f[1], text.size(), best);
        std::printf("parse+free_%s\tsimdjson DOM, new parser\t%zu\t%.6f\n", f[1], text.size(), bestFresh);
        if (std::string(f[0]) == "doc.json") {
            simdjson::dom::element doc;
            if (parser.parse(text).get(doc)) return 1;
            double bestWrite = 1e30;
            size_t len = 0;
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                std::string out = simdjson::minify(doc);
                double t = now() - t0;
                len = out.size();
                if (t < bestWrite) bestWrite = t;
            }
            std::printf("write_doc\tsimdjson minify(DOM)\t%zu\t%.6f\n", len, bestWrite);
        }
        std::fflush(stdout);
    }
    return 0;
}
