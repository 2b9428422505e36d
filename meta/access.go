package meta

import "cairn"

// UpdateAccess applies a meta.Store.UpdateBucketAccess update to the
// bucket record b: update gets a deep copy of b.Access, its zero result
// removes it, its error leaves b as it was. Store implementations call it
// inside their compare-and-swap on the record.
func UpdateAccess(b *cairn.Bucket, update func(*cairn.BucketAccess) (*cairn.BucketAccess, error)) error {
	a, err := update(b.Access.Clone())
	if err != nil {
		return err
	}
	if a.IsZero() {
		a = nil
	}
	b.Access = a.Clone()
	return nil
}
