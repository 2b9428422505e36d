//go:build linux || darwin || freebsd || netbsd || openbsd

package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// On a server whose disks share one file system, status counts its
// capacity once (it counted it once per disk) and says which disks share
// it.
func TestStatusCapacityPerFileSystem(t *testing.T) {
	s := startServer(t)
	var st Status
	if err := json.Unmarshal([]byte(s.CLI(t, "admin", "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(s.Data, &fs); err != nil {
		t.Fatal(err)
	}
	size := int64(fs.Blocks) * int64(fs.Bsize) //nolint:unconvert // the types differ between systems
	if st.Capacity != size || len(st.FileSystems) != 1 || len(st.FileSystems[0].Disks) != DefaultDisks {
		t.Fatalf("capacity %d on file systems %+v; the data directory's file system has %d bytes and holds all %d disks",
			st.Capacity, st.FileSystems, size, DefaultDisks)
	}
	out := s.CLI(t, "admin", "status")
	for _, want := range []string{fmt.Sprintf("(%d readable disks on 1 file system)", DefaultDisks), "disks sharing a file system", "node1/disk8"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
}
