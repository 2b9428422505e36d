package lifecycle

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/golden"
)

// script runs the golden scripts in testdata/:
//
//	rules                 input: one cairn.LifecycleRule as JSON per line
//	scan now=T            input: "key version created [size=N] [latest] [marker] [class=C] [tags=k:v,...]"
//	                      in listing order; output: each Object the Scanner yields and its action
//	upload key=K id=I initiated=T now=T
//	due t=T days=N
type script struct {
	rules []cairn.LifecycleRule
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (s *script) do(t *testing.T, c *golden.Cmd) string {
	arg := func(k string) string {
		v, ok := c.Arg(k)
		if !ok {
			t.Fatalf("%s: %s needs %s=", c.Pos, c.Name, k)
		}
		return v
	}
	switch c.Name {
	case "rules":
		s.rules = nil
		for _, l := range c.Input {
			var r cairn.LifecycleRule
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%s: %v", c.Pos, err)
			}
			s.rules = append(s.rules, r)
		}
		if err := Validate(s.rules, func(c string) bool { return c == "COLD" }); err != nil {
			return "invalid: " + err.Error()
		}
		return fmt.Sprintf("%d rules, tags needed: %v", len(s.rules), NeedsTags(s.rules))
	case "scan":
		now := parseTime(t, arg("now"))
		var sc Scanner
		var b strings.Builder
		emit := func(objs []Object) {
			for _, o := range objs {
				state := "current"
				if !o.Latest {
					state = fmt.Sprintf("noncurrent since=%s newer=%d", o.NoncurrentSince.Format(time.RFC3339), o.NewerNoncurrent)
				}
				if o.Marker {
					state += " marker"
				}
				if o.Alone {
					state += " alone"
				}
				acts := Evaluate(s.rules, o, now)
				what := "-"
				for _, a := range acts {
					what = string(a.Kind)
					if a.StorageClass != "" {
						what += " " + a.StorageClass
					}
					what += " (" + a.Rule + ")"
				}
				fmt.Fprintf(&b, "%s@%s %s: %s\n", o.Key, o.Version, state, what)
			}
		}
		for _, l := range c.Input {
			f := strings.Fields(l)
			v := cairn.ObjectVersion{Key: f[0], Version: f[1]}
			created := parseTime(t, f[2])
			class := "STANDARD"
			var tags map[string]string
			for _, opt := range f[3:] {
				k, val, _ := strings.Cut(opt, "=")
				switch k {
				case "size":
					n, err := strconv.ParseInt(val, 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					v.Info.Size = n
				case "latest":
					v.Latest = true
				case "marker":
					v.Marker = true
				case "class":
					class = val
				case "tags":
					tags = map[string]string{}
					for kv := range strings.SplitSeq(val, ",") {
						tk, tv, _ := strings.Cut(kv, ":")
						tags[tk] = tv
					}
				default:
					t.Fatalf("%s: unknown option %q", c.Pos, opt)
				}
			}
			if v.Marker {
				v.Created = created
			} else {
				v.Info.Created = created
			}
			objs := sc.Add(v, class)
			for i := range objs {
				if objs[i].Key == v.Key && objs[i].Version == v.Version {
					objs[i].Tags = tags
				}
			}
			emit(objs)
		}
		emit(sc.Flush())
		return strings.TrimSuffix(b.String(), "\n")
	case "upload":
		acts := EvaluateUpload(s.rules, arg("key"), arg("id"), parseTime(t, arg("initiated")), parseTime(t, arg("now")))
		if len(acts) == 0 {
			return "-"
		}
		return fmt.Sprintf("%s %s (%s)", acts[0].Kind, acts[0].Version, acts[0].Rule)
	case "due":
		n, err := strconv.Atoi(arg("days"))
		if err != nil {
			t.Fatal(err)
		}
		return DueAt(parseTime(t, arg("t")), n).Format(time.RFC3339)
	}
	t.Fatalf("%s: unknown command %s", c.Pos, c.Name)
	return ""
}

func TestScripts(t *testing.T) {
	for _, name := range []string{"expire.txt", "versions.txt", "validate.txt"} {
		t.Run(name, func(t *testing.T) {
			var s script
			golden.Script(t, name, s.do)
		})
	}
}

func TestNeedsTagsFor(t *testing.T) {
	rules := []cairn.LifecycleRule{
		{Enabled: true, Filter: cairn.LifecycleFilter{Prefix: "t/", Tags: map[string]string{"a": "b"}}},
		{Enabled: false, Filter: cairn.LifecycleFilter{Prefix: "off/", Tags: map[string]string{"a": "b"}}},
		{Enabled: true, Filter: cairn.LifecycleFilter{Prefix: "p/"}},
	}
	for key, want := range map[string]bool{"t/x": true, "off/x": false, "p/x": false, "x": false} {
		if got := NeedsTagsFor(rules, key); got != want {
			t.Errorf("NeedsTagsFor(%q) = %v, want %v", key, got, want)
		}
	}
}
