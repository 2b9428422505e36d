package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// roleConfigHelp is the help of --config for cairn meta and cairn node.
const roleConfigHelp = "role config file written by cairn init (DIR/HOST/ROLE.conf): a JSON object of this command's flags by name; flags given on the command line win"

// fileFlags are the flags whose relative file names in a role config are
// relative to the config's directory, as cairn init writes them.
var fileFlags = []string{"tls-ca", "tls-cert", "tls-key", "cairn-password-file"}

// applyRoleConfig sets the flags of fs that a role config file names and
// the command line did not (docs/running-a-cluster.md, "Config files"). The
// file is a JSON object: each key is a flag name, each value a string,
// number or boolean, or a list of strings for a repeatable flag (--disk).
// Keys in own are not flags but the caller's (a node's and a gateway's
// "meta" and "secret": the client config part, read by the caller); it
// returns the flags given on the command line, by name.
func applyRoleConfig(fs *flag.FlagSet, path string, own ...string) (given map[string]bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	var kv map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&kv); err != nil {
		return nil, fmt.Errorf("config %s: want a JSON object of flags: %w", path, err)
	}
	given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if slices.Contains(own, k) || given[k] {
			continue
		}
		f := fs.Lookup(k)
		if f == nil || k == "config" {
			return nil, fmt.Errorf("%w: config %s: %s has no flag --%s", ErrUsage, path, fs.Name(), k)
		}
		vals, err := configValues(kv[k], f)
		if err != nil {
			return nil, fmt.Errorf("%w: config %s: %q: %v", ErrUsage, path, k, err)
		}
		if slices.Contains(fileFlags, k) {
			for i := range vals {
				vals[i] = besideConfig(filepath.Dir(path), vals[i])
			}
		}
		for _, v := range vals {
			if err := f.Value.Set(v); err != nil {
				return nil, fmt.Errorf("%w: config %s: %q: %v", ErrUsage, path, k, err)
			}
		}
	}
	return given, nil
}

// configValues turns a config value into the strings flag f is set to.
func configValues(raw json.RawMessage, f *flag.Flag) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case json.Number:
		return []string{v.String()}, nil
	case bool:
		return []string{strconv.FormatBool(v)}, nil
	case []any:
		if _, ok := f.Value.(*multiFlag); !ok {
			return nil, fmt.Errorf("a list, but --%s takes one value", f.Name)
		}
		var out []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want a list of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a string, number, boolean or list of strings")
}
