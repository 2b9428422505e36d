package etcdmeta

import (
	"context"
	"path"
	"time"

	"google.golang.org/grpc"
)

// observeCalls returns the dial option that tells observe of every unary
// call (Options.ObserveCall); none if observe is nil.
func observeCalls(observe func(op string, took time.Duration, err error)) []grpc.DialOption {
	if observe == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			start := time.Now()
			err := invoker(ctx, method, req, reply, cc, opts...)
			observe(path.Base(method), time.Since(start), err)
			return err
		})}
}
