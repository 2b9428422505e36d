package director

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/golden"
)

// TestScripts runs the scripts in testdata/ against Detect and Operate.
// Time is an offset from a fixed t0. Commands:
//
//	disks              input: one disk per line, "ID NODE STATE [key=value …]" with
//	                   since=OFFSET, reason=, fault=, volume=, trusted=, check=
//	                   (underscores in values read as spaces); replaces the disks
//	alive [NODE …]     the nodes with a liveness lease
//	census at=OFFSET [DISK=N …]
//	                   the last census: when its walk started, shards per disk
//	                   (census none: no walk yet)
//	register DISK [key=value …]
//	                   a node's registration: fault=, volume=, check= ("-": empty)
//	detect now=OFFSET [grace=DURATION]
//	                   one round: the transitions, applied to the disks at now
//	                   (grace defaults to 1m)
//	operate DISK op=OP now=OFFSET
//	                   an operator's command, applied if allowed
//	show               the disks
func TestScripts(t *testing.T) {
	for _, name := range []string{"detect.txt", "lifecycle.txt", "operate.txt"} {
		t.Run(name, func(t *testing.T) {
			s := &script{alive: map[string]bool{}}
			golden.Script(t, name, s.do)
		})
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type script struct {
	disks  []cairn.Disk
	alive  map[string]bool
	census Census
}

func (s *script) do(t *testing.T, c *golden.Cmd) string {
	fail := func(format string, args ...any) string {
		t.Fatalf("%s: %s", c.Pos, fmt.Sprintf(format, args...))
		return ""
	}
	at := func(key string) time.Time {
		v, ok := c.Arg(key)
		if !ok {
			fail("no %s=", key)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			fail("%s: %v", key, err)
		}
		return t0.Add(d)
	}
	switch c.Name {
	case "disks":
		s.disks = nil
		for _, l := range c.Input {
			f := strings.Fields(l)
			if len(f) < 3 {
				return fail("disk line %q", l)
			}
			d := cairn.Disk{ID: cairn.DiskID(f[0]), Node: cairn.NodeID(f[1]), State: cairn.DiskState(f[2]), Since: t0}
			for _, kv := range f[3:] {
				k, v, _ := strings.Cut(kv, "=")
				if err := setField(&d, k, v); err != nil {
					return fail("%v", err)
				}
			}
			s.disks = append(s.disks, d)
		}
		return s.show()
	case "alive":
		s.alive = map[string]bool{}
		for _, a := range c.Args {
			s.alive[a.Key] = true
		}
		return fmt.Sprintf("alive: %s", strings.Join(keys(c.Args), " "))
	case "census":
		if _, none := c.Arg("none"); none {
			s.census = Census{}
			return "no census"
		}
		s.census = Census{At: at("at"), Refs: map[cairn.DiskID]int{}}
		for _, a := range c.Args {
			if a.Key == "at" {
				continue
			}
			n, err := strconv.Atoi(a.Value)
			if err != nil {
				return fail("census %s: %v", a.Key, err)
			}
			s.census.Refs[cairn.DiskID(a.Key)] = n
		}
		return fmt.Sprintf("census at %v: %v", s.census.At.Sub(t0), s.census.Refs)
	case "register":
		d := s.find(c.Args[0].Key)
		if d == nil {
			return fail("no disk %s", c.Args[0].Key)
		}
		for _, a := range c.Args[1:] {
			if err := setField(d, a.Key, a.Value); err != nil {
				return fail("%v", err)
			}
		}
		return s.show()
	case "detect":
		now := at("now")
		grace := time.Minute
		if v, ok := c.Arg("grace"); ok {
			var err error
			if grace, err = time.ParseDuration(v); err != nil {
				return fail("grace: %v", err)
			}
		}
		var leaseFrom time.Time
		if _, ok := c.Arg("leasefrom"); ok {
			leaseFrom = at("leasefrom")
		}
		trs := Detect(Input{Disks: s.disks, Alive: s.alive, Now: now, Grace: grace, Census: s.census, LeaseFrom: leaseFrom})
		if len(trs) == 0 {
			return "no change"
		}
		var b strings.Builder
		for _, tr := range trs {
			b.WriteString(s.apply(t, tr, now) + "\n")
		}
		return b.String()
	case "operate":
		d := s.find(c.Args[0].Key)
		if d == nil {
			return fail("no disk %s", c.Args[0].Key)
		}
		op, _ := c.Arg("op")
		tr, err := Operate(Op(op), *d, s.alive[string(d.Node)])
		if err != nil {
			if !errors.Is(err, cairn.ErrInvalid) {
				return fail("error %v does not wrap ErrInvalid", err)
			}
			return "refused: " + err.Error()
		}
		return s.apply(t, tr, at("now"))
	case "show":
		return s.show()
	}
	return fail("unknown command %q", c.Name)
}

// apply makes tr on the script's disks, as the store would, and describes
// it.
func (s *script) apply(t *testing.T, tr Transition, now time.Time) string {
	d := s.find(string(tr.Disk))
	nd, err := tr.Change(now).Apply(*d)
	if err != nil {
		t.Fatalf("applying %+v: %v", tr, err)
	}
	*d = nd
	trust := ""
	if tr.Trust != "" {
		trust = " (trusts " + tr.Trust + ")"
	}
	return fmt.Sprintf("%s: %s → %s%s: %s", tr.Disk, tr.From, tr.To, trust, tr.Why)
}

func (s *script) find(id string) *cairn.Disk {
	for i := range s.disks {
		if string(s.disks[i].ID) == id {
			return &s.disks[i]
		}
	}
	return nil
}

func (s *script) show() string {
	var b strings.Builder
	for _, d := range s.disks {
		fmt.Fprintf(&b, "%s %s %s since=%v", d.ID, d.Node, d.State, d.Since.Sub(t0))
		for _, f := range []struct{ k, v string }{{"volume", d.Volume}, {"trusted", d.Trusted}, {"check", d.Check}, {"fault", d.Fault}, {"reason", d.Reason}} {
			if f.v != "" {
				fmt.Fprintf(&b, " %s=%q", f.k, f.v)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func setField(d *cairn.Disk, k, v string) error {
	v = strings.ReplaceAll(v, "_", " ")
	if v == "-" {
		v = ""
	}
	switch k {
	case "since":
		off, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		d.Since = t0.Add(off)
	case "reason":
		d.Reason = v
	case "fault":
		d.Fault = v
	case "volume":
		d.Volume = v
	case "trusted":
		d.Trusted = v
	case "check":
		d.Check = v
	default:
		return fmt.Errorf("unknown disk field %q", k)
	}
	return nil
}

func keys(args []golden.Arg) []string {
	var out []string
	for _, a := range args {
		out = append(out, a.Key)
	}
	return out
}

// Detect is pure: the same input gives the same transitions, and it does
// not modify its input.
func TestDetectIsPure(t *testing.T) {
	disks := []cairn.Disk{
		{ID: "a/1", Node: "a", State: cairn.DiskUp, Volume: "v1"},
		{ID: "b/1", Node: "b", State: cairn.DiskDown, Volume: "v2", Trusted: "v2", Check: cairn.CheckOK, Since: t0},
	}
	in := Input{Disks: disks, Alive: map[string]bool{"a": true, "b": true}, Now: t0, Grace: time.Minute}
	first := Detect(in)
	second := Detect(in)
	if fmt.Sprint(first) != fmt.Sprint(second) || len(first) != 2 {
		t.Fatalf("Detect gave %v, then %v", first, second)
	}
	if disks[0].Trusted != "" || disks[1].State != cairn.DiskDown {
		t.Fatalf("Detect modified its input: %+v", disks)
	}
}
