package s3_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"cairn/client"
	"cairn/meta/mem"
	"cairn/s3"
)

// A gateway over an in-memory metadata store; shards would come from
// a *node.Client in a real deployment. Unsigned requests are refused.
func ExampleNew() {
	store := mem.New()
	h, err := s3.New(s3.Config{
		Objects:     client.New(store, nil, client.Config{}),
		Meta:        store,
		Credentials: s3.RootCredentials("AKIAEXAMPLE", "example-secret"),
	})
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	body := w.Body.String()
	fmt.Println(w.Code, body[strings.Index(body, "<Code>"):strings.Index(body, "</Code>")+7])
	// Output: 403 <Code>AccessDenied</Code>
}
