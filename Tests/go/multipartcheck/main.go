// multipartcheck: reads a multipart body on stdin (its Content-Type is argument 1) with Go's
// mime/multipart and prints one JSON object per part: the name and filename as Go's
// mime.ParseMediaType reads Content-Disposition (or the error it gives), and the body.
// Built by Tests/python/test_decoders.py with `go build` (standard library only), to check
// that Go reads what this library writes. Also used by Benchmarks/decoders/run.sh with -bench.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"time"
)

type part struct {
	Name     *string `json:"name"`
	Filename *string `json:"filename"`
	Error    string  `json:"error,omitempty"`
	Body     []byte  `json:"body"`
}

func main() {
	bench := flag.Bool("bench", false, "time a parse of the body file (argument 2), discard the parts")
	flag.Parse()
	_, params, err := mime.ParseMediaType(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "content type:", err)
		os.Exit(2)
	}
	if *bench {
		body, err := os.ReadFile(flag.Arg(1))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		best := 0.0
		parts, bytes := 0, int64(0)
		for round := 0; round < 3; round++ {
			t, p, b := parseAll(body, params["boundary"])
			if round == 0 || t < best {
				best = t
			}
			parts, bytes = p, b
		}
		fmt.Printf("%d %d %.6f\n", parts, bytes, best)
		return
	}
	r := multipart.NewReader(os.Stdin, params["boundary"])
	out := json.NewEncoder(os.Stdout)
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "next part:", err)
			os.Exit(1)
		}
		var rec part
		_, dp, derr := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		if derr != nil {
			rec.Error = derr.Error()
		} else {
			if v, ok := dp["name"]; ok {
				rec.Name = &v
			}
			if v, ok := dp["filename"]; ok {
				rec.Filename = &v
			}
		}
		rec.Body, _ = io.ReadAll(p)
		out.Encode(rec)
	}
}

// parseAll times one pass of NextPart and io.Copy to io.Discard over the body in memory.
func parseAll(body []byte, boundary string) (float64, int, int64) {
	start := time.Now()
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	parts, n := 0, int64(0)
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		k, err := io.Copy(io.Discard, p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		n += k
		parts++
	}
	return time.Since(start).Seconds(), parts, n
}
