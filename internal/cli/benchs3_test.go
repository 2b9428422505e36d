package cli

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"cairn/internal/cmdline"
	"cairn/internal/proc"
)

// cairn bench s3 against a running server: both phases run, every
// request succeeds, and the JSON summary says so.
func TestBenchS3(t *testing.T) {
	s := startServer(t, "--access-key", "bench", "--secret-key", "bench-secret-key")
	out, errs, err := run(t, "bench", "s3", "--endpoint", s.Ready.Addrs[proc.S3], "--access-key", "bench", "--secret-key", "bench-secret-key",
		"--size", "100KiB", "--clients", "2", "--duration", "500ms", "--policy", "rs-4-2", "--json",
		"--pid", strconv.Itoa(os.Getpid())) // the server runs in this process
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, errs)
	}
	if errs != "" {
		t.Errorf("bench s3 wrote to stderr, which is not a terminal (no progress bar there):\n%q", errs)
	}
	var sum struct {
		Runs []benchS3Run `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Runs) != 1 {
		t.Fatalf("not one run of JSON: %v\n%s", err, out)
	}
	r := sum.Runs[0]
	if r.Put.Requests == 0 || r.Get.Requests == 0 || r.Put.Errors+r.Get.Errors != 0 || r.Put.MiBPerS <= 0 || r.Get.P99Millis < r.Get.P50Millis ||
		r.Put.CPUPerMiB <= 0 || r.Get.CPUPerMiB <= 0 {
		t.Fatalf("implausible run: %+v", r)
	}
	// The bucket was made with the policy asked for.
	if st := s.CLI(t, "stat", "cairn-bench-s3/c0/o0"); !strings.Contains(st, "rs-4-2") {
		t.Fatalf("stat of a benchmark object does not name rs-4-2:\n%s", st)
	}
}

func TestBenchS3Usage(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"bench", "s3"}, "--endpoint"},
		{[]string{"bench", "s3", "--endpoint", "http://x", "--slow-disk", "bw=1MiB"}, "give one of"},
		{[]string{"bench", "s3", "--local-io", "--slow-disk", "bw=1MiB"}, "give one of"},
		{[]string{"bench", "s3", "--local-io", "--pid", "1"}, "--pid goes with --endpoint"},
		{[]string{"bench", "s3", "--endpoint", "http://x", "--pid", "999999999"}, "no such process"},
		{[]string{"bench", "s3", "--slow-disk", "bw=lots"}, "--slow-disk"},
		{[]string{"bench", "s3", "--endpoint", "http://x", "--size", "0"}, "--size"},
		{[]string{"bench", "s3", "--endpoint", "http://x", "--clients", "0"}, "--clients"},
		{[]string{"bench", "s3", "--endpoint", "http://x", "--duration", "-1s"}, "--duration"},
		{[]string{"bench", "s3", "--endpoint", "http://x", "--access-key", ""}, "--access-key"},
		{[]string{"bench", "s3", "--slow-disk", "bw=1MiB", "--rounds", "0"}, "--rounds"},
	} {
		t.Setenv("CAIRN_ACCESS_KEY", "")
		_, _, err := run(t, tc.args...)
		if !errors.Is(err, ErrUsage) || cmdline.ExitCode(err) != 2 {
			t.Errorf("%v: got %v, want a usage error", tc.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: error %q does not mention %q", tc.args, err, tc.mention)
		}
	}
}
