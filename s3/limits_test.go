package s3

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/semaphore"
)

// TestRequestSlots: with every slot taken, a request waits QueueWait and
// gets 503 SlowDown with Retry-After; once a slot is free, requests are
// served again.
func TestRequestSlots(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "bkt")
	const wait = 300 * time.Millisecond
	e.h.slots = &slots{sem: semaphore.NewWeighted(1), n: 1, wait: wait}

	// A PUT whose body stalls holds the only slot.
	data := randBytes(3, 4*stripe)
	r := e.signed(t, "PUT", "/bkt/held", data, unsignedPayload, nil)
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop := make(chan struct{})
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data[:stripe]), blockingReader(stop)))
	r.ContentLength = int64(len(data))
	go r.Write(conn)
	for e.h.slots.sem.TryAcquire(1) { // until the PUT has the slot
		e.h.slots.sem.Release(1)
		runtime.Gosched()
	}

	served := e.served.Load()
	start := time.Now()
	got := send(t, e.signed(t, "GET", "/bkt", nil, "", nil))
	if took := time.Since(start); got.status != http.StatusServiceUnavailable || got.code != "SlowDown" ||
		got.header.Get("Retry-After") == "" || took < wait {
		t.Fatalf("a request with no slot free: %d %s, Retry-After %q, after %v; want 503 SlowDown with Retry-After after %v",
			got.status, got.code, got.header.Get("Retry-After"), took, wait)
	}
	close(stop) // the PUT's client goes away: the PUT fails and frees its slot
	conn.Close()
	waitServed(t, e, served+2)
	if got := send(t, e.signed(t, "GET", "/bkt", nil, "", nil)); got.status != http.StatusOK {
		t.Fatalf("after the slot was freed: %d %s", got.status, got.code)
	}
}

// TestSlowReaderCutOff: a client that stops reading a GET's body is cut
// off after WriteTimeout, and its request ends.
func TestSlowReaderCutOff(t *testing.T) {
	e := newEnv(t)
	e.h.cfg.WriteTimeout = 200 * time.Millisecond
	e.mkBucket(t, "bkt")
	data := randBytes(5, 16<<20) // more than the sockets' buffers hold
	if _, err := e.root().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("big"),
		Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	served := e.served.Load()
	if err := e.signed(t, "GET", "/bkt/big", nil, "", nil).Write(conn); err != nil {
		t.Fatal(err)
	}
	// Nothing is read from conn: the GET's writes stall.
	waitServed(t, e, served+1)
}
