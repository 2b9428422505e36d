package testcluster

import (
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Client returns an SDK client of the S3 API at url with the test
// credentials (TestAccessKey): no retries, so the test sees every
// failure, and a minute at most per request, so a gateway that hangs
// fails the test instead of stalling it.
func S3Client(url string) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(TestAccessKey, TestSecretKey, ""),
		Retryer:     aws.NopRetryer{},
		HTTPClient:  &http.Client{Timeout: time.Minute},
	})
}
