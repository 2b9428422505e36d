package meta

import (
	"encoding/json"
	"fmt"

	"cairn"
)

// PartSuperseded returns the shard files of part prev that next does not
// name: what an update of a part's record (a repair that moved shards,
// Store.UpdateUploadPart) leaves to delete.
func PartSuperseded(prev, next cairn.Part) []cairn.ShardFile {
	return cairn.Superseded(&cairn.Manifest{Version: prev.Version, Layout: prev.Layout},
		&cairn.Manifest{Version: next.Version, Layout: next.Layout})
}

// SwapPart decides a compare-and-swap of the stored part cur by p over
// prev (UpdatePart, UpdateUploadPart of a store that keeps parts as
// values): stored if cur is already p (a retried update: nothing to do),
// else nil if cur is prev, else an error wrapping cairn.ErrConflict. Parts
// are compared as their JSON encodings, as meta/etcd compares its records.
func SwapPart(op string, cur, p, prev cairn.Part) (stored bool, err error) {
	a, err1 := json.Marshal(cur)
	pv, err2 := json.Marshal(prev)
	n, err3 := json.Marshal(p)
	if err1 == nil && err3 == nil && string(a) == string(n) {
		return true, nil
	}
	if err1 != nil || err2 != nil || string(a) != string(pv) {
		return false, fmt.Errorf("%s: %w (the part changed)", op, cairn.ErrConflict)
	}
	return false, nil
}
