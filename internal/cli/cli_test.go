package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"cairn/internal/cmdline"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestBenchCodecJSON(t *testing.T) {
	out, _, err := run(t, "bench", "codec", "--code", "rs-4-2,lrc-6-2-2,rep-3", "--shard", "64KiB", "--threads", "1", "--time", "20ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var obj struct {
			Code      string   `json:"code"`
			Op        string   `json:"op"`
			Threads   int      `json:"threads"`
			BytesPerS float64  `json:"bytes_per_s"`
			ReadBytes *float64 `json:"repair_read_bytes"`
		}
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if obj.Threads != 1 || obj.BytesPerS <= 0 {
			t.Fatalf("line %q: bad threads or throughput", sc.Text())
		}
		seen[obj.Code+"/"+obj.Op] = true
		if obj.Op == "repair" {
			want := map[string]float64{"rs-4-2": 4, "lrc-6-2-2": 3, "rep-3": 1}[obj.Code]
			if obj.ReadBytes == nil || *obj.ReadBytes != want {
				t.Fatalf("%s repair_read_bytes = %v, want %v", obj.Code, obj.ReadBytes, want)
			}
		}
	}
	for _, code := range []string{"rs-4-2", "lrc-6-2-2", "rep-3"} {
		for _, op := range []string{"encode", "decode1", "decodem", "repair", "mulacc", "memcpy"} {
			if !seen[code+"/"+op] {
				t.Errorf("no %s line for %s", op, code)
			}
		}
	}
}

func TestBenchCodecTable(t *testing.T) {
	out, _, err := run(t, "bench", "codec", "--code", "rs-2-1", "--shard", "4KiB", "--threads", "2", "--time", "10ms", "--ops", "encode")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "encode") || !strings.Contains(out, "memcpy") || strings.Contains(out, "decode1") {
		t.Fatalf("table:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{nil, "needs a command"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"bench", "codec", "--code", "rs-0-2"}, "K (data shards) must be at least 1"},
		{[]string{"bench", "codec", "--code", "lrc-12-5-2"}, "must divide K"},
		{[]string{"bench", "codec", "--shard", "lots"}, "--shard"},
		{[]string{"bench", "codec", "--threads", "-1"}, "--threads"},
		{[]string{"bench", "codec", "--nope"}, "flag provided but not defined"},
		{[]string{"bench", "codec", "extra"}, "unexpected argument"},
	} {
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

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"bench", "--help"}, {"bench", "codec", "--help"}, {"help", "bench"}} {
		out, _, err := run(t, args...)
		if err != nil || cmdline.ExitCode(err) != 0 {
			t.Errorf("%v: %v", args, err)
		}
		if !strings.Contains(out, "Usage") {
			t.Errorf("%v printed no usage:\n%s", args, out)
		}
	}
	out, _, _ := run(t, "bench", "codec", "--help")
	for _, want := range []string{"rs-K-M", "lrc-K-L-R", "rep-N", "memcpy", "--json"} {
		if !strings.Contains(out, want) && !strings.Contains(out, strings.TrimPrefix(want, "-")) {
			t.Errorf("bench codec --help does not mention %s", want)
		}
	}
}
