package access

import (
	"errors"
	"testing"
)

// FuzzParse: any document either parses or is refused with a
// MalformedError, and what parses evaluates (and answers IsPublic)
// without panicking, for a few requests.
func FuzzParse(f *testing.F) {
	f.Add([]byte(testPolicy))
	f.Add([]byte(`{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"ForAllValues:StringLikeIfExists":{"s3:prefix":"${aws:username}/*"}}}}`))
	f.Add([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","NotPrincipal":{"CanonicalUser":"a"},"NotAction":"s3:Get?bject","NotResource":"arn:aws:s3:::photos/${*}","Condition":{"Null":{"aws:SourceIp":"true"}}}]}`))
	f.Add([]byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*","Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","::1"]},"DateLessThan":{"aws:CurrentTime":"2030-01-01"}}}]}`))
	reqs := []Request{
		{Principal: Principal{Anonymous: true}, Action: "s3:GetObject", Bucket: bucket, Key: "public/a", Context: ctx("", "10.1.2.3", false)},
		{Principal: Principal{User: "alice"}, Action: "s3:ListBucket", Bucket: bucket, Context: ctx("alice", "::1", true)},
		{Principal: Principal{User: "bob"}, Action: "s3:PutObject", Bucket: bucket, Key: "home/bob/x", Context: map[string][]string{}},
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := Parse(doc, bucket)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse refused with %v, not a MalformedError", err)
			}
			return
		}
		for _, r := range reqs {
			if d := p.Evaluate(r); d != NoDecision && d != Allowed && d != Denied {
				t.Fatalf("decision %d", d)
			}
		}
		p.IsPublic()
	})
}
