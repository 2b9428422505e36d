package access

import "testing"

// BenchmarkParse: the gateway parses a bucket's policy on each request
// of a non-root, so this is a per-request cost.
func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(testPolicy)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(testPolicy), bucket); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	p, err := Parse([]byte(testPolicy), bucket)
	if err != nil {
		b.Fatal(err)
	}
	r := Request{Principal: Principal{User: "bob"}, Action: "s3:PutObject", Bucket: bucket, Key: "office/plan.txt",
		Context: ctx("bob", "192.0.2.7", true)}
	if p.Evaluate(r) != Allowed {
		b.Fatal("the benchmark's request is not allowed")
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(r)
	}
}
