package access_test

import (
	"fmt"

	"cairn/access"
)

// A bucket policy that lets anyone read public/ and user bob write his
// home, decided for three requests.
func Example() {
	p, err := access.Parse([]byte(`{
	  "Version": "2012-10-17",
	  "Statement": [
	    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/public/*"},
	    {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam:::user/bob"}, "Action": "s3:PutObject",
	     "Resource": "arn:aws:s3:::photos/home/${aws:username}/*"}
	  ]}`), "photos")
	if err != nil {
		fmt.Println(err)
		return
	}
	anon := access.Principal{Anonymous: true}
	bob := access.Principal{User: "bob"}
	for _, r := range []access.Request{
		{Principal: anon, Action: access.Operations["GetObject"], Bucket: "photos", Key: "public/cat.jpg"},
		{Principal: anon, Action: access.Operations["GetObject"], Bucket: "photos", Key: "private/cat.jpg"},
		{Principal: bob, Action: access.Operations["PutObject"], Bucket: "photos", Key: "home/bob/cat.jpg"},
	} {
		r.Context = access.Context(r.Principal, "192.0.2.7", true, "2026-11-27T12:00:00Z", 1795780800, "REST-HEADER")
		fmt.Println(r.Resource(), p.Evaluate(r))
	}
	fmt.Println("public:", p.IsPublic())
	_, err = access.Parse([]byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos"}]}`), "photos")
	fmt.Println(err)
	// Output:
	// arn:aws:s3:::photos/public/cat.jpg allowed
	// arn:aws:s3:::photos/private/cat.jpg no decision
	// arn:aws:s3:::photos/home/bob/cat.jpg allowed
	// public: true
	// malformed policy: Action does not apply to any resource(s) in statement
}
