package metatest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// testUsers: a user's name and its access key are each unique; records
// read back as written, update is a compare-and-swap that moves the
// access key, delete frees the key, and the listing pages in name order.
func testUsers(t *testing.T, s meta.Store) {
	ctx := t.Context()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(name, ak string) cairn.User {
		return cairn.User{Name: name, AccessKey: ak, SealedSecret: []byte("sealed-" + name), Created: t0, Updated: t0}
	}
	us, more, err := s.Users(ctx, "", 10)
	noErr(t, "Users empty", err)
	if len(us) != 0 || more {
		t.Fatalf("Users of a new store: %v, more %v", us, more)
	}
	// stamped runs a write and checks that the stamp changed exactly
	// when the write succeeded.
	stamp, err := s.UsersStamp(ctx)
	noErr(t, "UsersStamp", err)
	stamped := func(what string, err error) error {
		t.Helper()
		now, serr := s.UsersStamp(ctx)
		noErr(t, "UsersStamp", serr)
		if (err == nil) != (now != stamp) {
			t.Fatalf("%s (error %v): stamp %d → %d", what, err, stamp, now)
		}
		stamp = now
		return err
	}
	alice := mk("alice", "AKALICE")
	alice.Policies = []string{"rs-4-2", "rep-3"}
	noErr(t, "CreateUser", stamped("CreateUser", s.CreateUser(ctx, alice)))
	wantErr(t, "CreateUser same name", stamped("CreateUser same name", s.CreateUser(ctx, mk("alice", "AKOTHER"))), cairn.ErrExists)
	wantErr(t, "CreateUser same key", s.CreateUser(ctx, mk("bob", "AKALICE")), cairn.ErrExists)
	wantErr(t, "CreateUser bad name", s.CreateUser(ctx, mk("a/b", "AKAB")), cairn.ErrInvalid)
	wantErr(t, "CreateUser bad key", s.CreateUser(ctx, mk("ab", "AK/AB")), cairn.ErrInvalid)
	noSecret := mk("carol", "AKCAROL")
	noSecret.SealedSecret = nil
	wantErr(t, "CreateUser no secret", s.CreateUser(ctx, noSecret), cairn.ErrInvalid)

	got, err := s.User(ctx, "alice")
	noErr(t, "User", err)
	if !meta.SameUser(got, alice) {
		t.Fatalf("User read back %+v, want %+v", got, alice)
	}
	got.Policies[0] = "changed" // the store's copy must not alias
	if got, _ := s.User(ctx, "alice"); got.Policies[0] != "rs-4-2" {
		t.Fatalf("the store's record changed with the caller's copy: %v", got.Policies)
	}
	_, err = s.User(ctx, "nobody")
	wantErr(t, "User missing", err, cairn.ErrNotFound)
	_, err = s.User(ctx, "../x")
	wantErr(t, "User bad name", err, cairn.ErrNotFound)

	// Rotation: a new access key and secret; the old key is free again.
	rot := alice
	rot.AccessKey, rot.SealedSecret, rot.Updated = "AKALICE2", []byte("sealed-2"), t0.Add(time.Hour)
	noErr(t, "UpdateUser rotate", stamped("UpdateUser", s.UpdateUser(ctx, rot, alice)))
	wantErr(t, "UpdateUser stale prev", stamped("UpdateUser stale", s.UpdateUser(ctx, rot, alice)), cairn.ErrConflict)
	noErr(t, "CreateUser on the freed key", s.CreateUser(ctx, mk("bob", "AKALICE")))
	wantErr(t, "CreateUser on the new key", s.CreateUser(ctx, mk("dave", "AKALICE2")), cairn.ErrExists)
	steal := rot
	steal.AccessKey = "AKALICE"
	wantErr(t, "UpdateUser to a taken key", s.UpdateUser(ctx, steal, rot), cairn.ErrExists)
	renamed := rot
	renamed.Name = "eve"
	wantErr(t, "UpdateUser rename", s.UpdateUser(ctx, renamed, rot), cairn.ErrInvalid)
	ghost := mk("ghost", "AKGHOST")
	wantErr(t, "UpdateUser missing", s.UpdateUser(ctx, ghost, ghost), cairn.ErrNotFound)
	got, err = s.User(ctx, "alice")
	noErr(t, "User after rotation", err)
	if !meta.SameUser(got, rot) {
		t.Fatalf("after rotation: %+v, want %+v", got, rot)
	}

	// Delete frees the name and the key.
	noErr(t, "DeleteUser", stamped("DeleteUser", s.DeleteUser(ctx, "bob")))
	wantErr(t, "DeleteUser twice", stamped("DeleteUser twice", s.DeleteUser(ctx, "bob")), cairn.ErrNotFound)
	d, err := s.UserDefaults(ctx)
	noErr(t, "UserDefaults unset", err)
	if len(d.Policies) != 0 || !d.Updated.IsZero() {
		t.Fatalf("UserDefaults unset = %+v", d)
	}
	noErr(t, "PutUserDefaults", stamped("PutUserDefaults", s.PutUserDefaults(ctx, cairn.UserDefaults{Policies: []string{"rs-6-3", "rep-3"}, Updated: t0})))
	wantErr(t, "PutUserDefaults empty policy", stamped("PutUserDefaults bad", s.PutUserDefaults(ctx, cairn.UserDefaults{Policies: []string{""}})), cairn.ErrInvalid)
	d, err = s.UserDefaults(ctx)
	noErr(t, "UserDefaults", err)
	if fmt.Sprint(d.Policies) != "[rs-6-3 rep-3]" || !d.Updated.Equal(t0) {
		t.Fatalf("UserDefaults = %+v", d)
	}
	_, _, err = s.Users(ctx, "", 10)
	noErr(t, "Users", err)
	_, err = s.UserDefaults(ctx)
	noErr(t, "UserDefaults", err)
	_, err = s.User(ctx, "alice")
	noErr(t, "User", err)
	if now, err := s.UsersStamp(ctx); err != nil || now != stamp {
		t.Fatalf("reads changed the stamp %d → %d (%v)", stamp, now, err)
	}
	noErr(t, "CreateUser after delete", s.CreateUser(ctx, mk("bob", "AKALICE")))

	// Paging in name order.
	var want []string
	for i := range 7 {
		u := mk(fmt.Sprintf("u%02d", i), fmt.Sprintf("AKU%02d", i))
		noErr(t, "CreateUser", s.CreateUser(ctx, u))
	}
	want = append(want, "alice", "bob")
	for i := range 7 {
		want = append(want, fmt.Sprintf("u%02d", i))
	}
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("Users does not end")
		}
		us, more, err := s.Users(ctx, after, 3)
		noErr(t, "Users", err)
		if len(us) > 3 {
			t.Fatalf("Users returned %d records, limit 3", len(us))
		}
		for _, u := range us {
			names = append(names, u.Name)
			after = u.Name
		}
		if !more {
			break
		}
	}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("Users listed %v, want %v", names, want)
	}
	_, _, err = s.Users(ctx, "", 0)
	wantErr(t, "Users limit 0", err, cairn.ErrInvalid)
	_, _, err = s.Users(ctx, "", meta.MaxPage+1)
	wantErr(t, "Users limit past MaxPage", err, cairn.ErrInvalid)

	// Racing creations of one access key: exactly one wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = s.CreateUser(ctx, mk(fmt.Sprintf("race%d", i), "AKRACE")) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, cairn.ErrExists):
			t.Fatalf("racing CreateUser: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racing creations of one access key won, want 1", won)
	}
}
