package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"cairn/client"
	"cairn/console"
	"cairn/meta/mem"
	"cairn/s3"
)

// A console over a gateway (here over an in-memory metadata store; shards
// would come from a *node.Client): a login is the gateway's own check of
// the keys, so a wrong secret gets no session and the right one a cookie.
func ExampleNew() {
	store := mem.New()
	data := client.New(store, nil, client.Config{})
	creds := s3.RootCredentials("AKIAEXAMPLE", "example-secret")
	gw, err := s3.New(s3.Config{Objects: data, Meta: store, Credentials: creds})
	if err != nil {
		panic(err)
	}
	c, err := console.New(console.Config{S3: gw, Credentials: creds, Objects: data, Meta: store})
	if err != nil {
		panic(err)
	}
	login := func(secret string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/api/login", strings.NewReader(`{"access_key":"AKIAEXAMPLE","secret_key":"`+secret+`"}`))
		r.Header.Set(console.CSRFHeader, "1")
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w
	}
	w := login("wrong-secret")
	fmt.Println(w.Code, len(w.Result().Cookies()))
	w = login("example-secret")
	ck := w.Result().Cookies()[0]
	fmt.Println(w.Code, ck.Name, ck.HttpOnly, ck.SameSite == http.SameSiteStrictMode)
	// Output:
	// 401 0
	// 200 cairn_console true true
}
