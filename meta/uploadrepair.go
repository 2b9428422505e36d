package meta

import "cairn"

// PartSuperseded returns the shard files of part prev that next does not
// name: what an update of a part's record (a repair that moved shards,
// Store.UpdateUploadPart) leaves to delete.
func PartSuperseded(prev, next cairn.Part) []cairn.ShardFile {
	return cairn.Superseded(&cairn.Manifest{Version: prev.Version, Layout: prev.Layout},
		&cairn.Manifest{Version: next.Version, Layout: next.Layout})
}
