package cairn

import (
	"errors"
	"strings"
	"testing"
)

func TestUserCheck(t *testing.T) {
	ok := User{Name: "alice@example.com", AccessKey: "AK_alice-1.x", SealedSecret: []byte("sealed"), Policies: []string{"rs-4-2"}}
	if err := ok.Check(); err != nil {
		t.Fatalf("valid user: %v", err)
	}
	for _, tc := range []struct {
		name    string
		change  func(*User)
		mention string
	}{
		{"empty name", func(u *User) { u.Name = "" }, "user name"},
		{"long name", func(u *User) { u.Name = strings.Repeat("a", MaxUserName+1) }, "user name"},
		{"slash in name", func(u *User) { u.Name = "a/b" }, "only letters"},
		{"dot first", func(u *User) { u.Name = ".hidden" }, "start with"},
		{"short key", func(u *User) { u.AccessKey = "AK" }, "access key"},
		{"slash in key", func(u *User) { u.AccessKey = "AK/1" }, "access key"},
		{"@ in key", func(u *User) { u.AccessKey = "AK@1" }, "access key"},
		{"no secret", func(u *User) { u.SealedSecret = nil }, "sealed secret"},
		{"huge secret", func(u *User) { u.SealedSecret = make([]byte, MaxSealedSecret+1) }, "sealed secret"},
		{"empty policy", func(u *User) { u.Policies = []string{""} }, "policy"},
		{"many policies", func(u *User) { u.Policies = make([]string, MaxUserPolicies+1) }, "policies"},
	} {
		u := ok
		tc.change(&u)
		err := u.Check()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", tc.name, err, tc.mention)
		}
	}
}
