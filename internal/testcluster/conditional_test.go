package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"cairn/internal/testcluster"
)

// TestServerConditionalPutRace: concurrent If-None-Match: * PUTs of one
// key through the real server process, whose compare-and-swap is etcd's
// transaction: exactly one creates the object, every other one gets 412.
func TestServerConditionalPutRace(t *testing.T) {
	srv := testcluster.StartServer(t, "")
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.S3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		Retryer:     aws.NopRetryer{},
	})
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("locks")}); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		key := aws.String(fmt.Sprintf("lock-%d", round))
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("locks"), Key: key,
					Body: strings.NewReader(fmt.Sprintf("holder %d", i)), IfNoneMatch: aws.String("*")})
			})
		}
		wg.Wait()
		wins := 0
		for i, err := range errs {
			if err == nil {
				wins++
				continue
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
				t.Fatalf("round %d, writer %d: %v, want PreconditionFailed", round, i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d writers created the key, want exactly 1", round, wins)
		}
	}
}
