package decide

import (
	"testing"
	"time"

	"cairn"
	"cairn/codec/all"
)

// TestTaskOfOpenPart: the stripe of a part of an upload in progress
// (cairn.Upload.OpenPart) gets a task naming the upload, with no object
// version and an ID of its own; the same part committed in an object
// gets the object's task.
func TestTaskOfOpenPart(t *testing.T) {
	disks := []cairn.Disk{{ID: "n1/d1", Node: "n1", State: cairn.DiskUp}, {ID: "n2/d1", Node: "n2", State: cairn.DiskDown},
		{ID: "n3/d1", Node: "n3", State: cairn.DiskUp}}
	v := NewView(nil, disks)
	code, err := all.New("rep-3")
	if err != nil {
		t.Fatal(err)
	}
	p := cairn.Part{Number: 7, Version: "p7", Size: 10, Layout: cairn.Layout{BlockSize: 10,
		Shards: []cairn.ShardLoc{{Disk: "n1/d1", Size: 10}, {Disk: "n2/d1", Size: 10}, {Disk: "n3/d1", Size: 10}}}}
	u := cairn.Upload{Bucket: "bkt", Key: "k", ID: "up1", Policy: "rep-3"}
	now := time.Unix(100, 0)
	open := u.OpenPart(p)
	st, ok := FindStripe(open, 7)
	if !open.IsOpenPart() || !ok {
		t.Fatalf("OpenPart: %+v", open)
	}
	task, ok := NewTask(open, st, code, v, now)
	want := cairn.UploadRepairTaskID("bkt", "up1", 7, "p7")
	if !ok || task.ID != want || task.Upload != "up1" || task.Version != "" || task.Key != "k" || task.Part != 7 ||
		task.Stripe != "p7" || task.Policy != "rep-3" || len(task.Lost) != 1 || task.Lost[0] != 1 || task.Risk != 1 {
		t.Fatalf("task of the open part: %+v (ID want %s)", task, want)
	}
	if again := cairn.UploadRepairTaskID("bkt", "up1", 7, "p7-again"); again == want {
		t.Fatal("a part uploaded again has the old part's task ID")
	}
	committed := &cairn.Manifest{Bucket: "bkt", Key: "k", Version: "v1", Policy: "rep-3", Upload: "up1", Size: 10, Parts: []cairn.Part{p}}
	st, _ = FindStripe(committed, 7)
	task, ok = NewTask(committed, st, code, v, now)
	if !ok || committed.IsOpenPart() || task.Upload != "" || task.Version != "v1" || task.ID != cairn.RepairTaskID("bkt", "k", "v1", 7) {
		t.Fatalf("task of the committed part: %+v", task)
	}
}
