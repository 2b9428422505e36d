package cairn_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"cairn"
)

// TestManifestJSONFixtures decodes manifests as the client wrote them
// (testdata/manifest, one per object form: written before Layout existed)
// and re-encodes them: the bytes stored in the metadata store must read
// back and encode unchanged, and pass validation.
func TestManifestJSONFixtures(t *testing.T) {
	codes := map[string][2]int{"rs-4-2": {rsK, rsN}, "lt-16-2": {ltK, ltN}} // policy: k, n
	files, err := filepath.Glob("testdata/manifest/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			raw = bytes.TrimSuffix(raw, []byte("\n"))
			var m cairn.Manifest
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(&m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, raw) {
				t.Fatalf("re-encoded manifest differs:\n got %s\nwant %s", again, raw)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			code, ok := codes[m.Policy]
			if !ok {
				t.Fatalf("no code for policy %s", m.Policy)
			}
			if err := m.ValidateStored(code[0], code[1]); err != nil {
				t.Fatal(err)
			}
		})
	}
}
