package grid

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/client"
	"cairn/codec"
	"cairn/node"
	"cairn/placement"
)

// NewEnv wires an Env over a cluster: its metadata store, a resolver of
// disks to node addresses and the nodes' secret. The data path talks to
// the nodes through links; removals and placement do not. The clients
// write no spare streams (client.Config.Spares −1): each stripe goes to
// its n nodes and nowhere else, as in the paper.
func NewEnv(store client.Meta, resolve node.Resolver, secret string, links *Links) Env {
	shaped := node.NewClient(secret, resolve, links.Client(node.NewHTTPClient(node.Timeouts{})))
	plain := node.NewClient(secret, resolve, nil)
	return Env{
		NewClient: func(blockSize int, codes func(string) (codec.Code, error)) *client.Client {
			return client.New(store, shaped, client.Config{BlockSize: blockSize, Codes: codes, Spares: -1, SpareWindow: -1})
		},
		Links: links,
		Addr:  func(d cairn.DiskID) (string, error) { return resolve(context.Background(), d) },
		Remove: func(ctx context.Context, m *cairn.Manifest) error {
			if _, err := store.DeleteManifest(ctx, m.Bucket, m.Key, m.Version); err != nil {
				return err
			}
			var g errgroup.Group
			g.SetLimit(16)
			for _, f := range m.Layout.Files(m.Version) {
				g.Go(func() error {
					if err := plain.DeleteShard(ctx, f.Disk, f.Name); err != nil && !errors.Is(err, cairn.ErrNotFound) {
						return fmt.Errorf("deleting %s on %s: %w", f.Name, f.Disk, err)
					}
					return nil
				})
			}
			return g.Wait()
		},
		Drop: func(ctx context.Context, m *cairn.Manifest, shards []int) error {
			files := m.Layout.Files(m.Version)
			for _, i := range shards {
				if i < 0 || i >= len(files) {
					return fmt.Errorf("grid: %s/%s has no shard %d", m.Bucket, m.Key, i)
				}
				if err := plain.DeleteShard(ctx, files[i].Disk, files[i].Name); err != nil {
					return fmt.Errorf("deleting %s on %s: %w", files[i].Name, files[i].Disk, err)
				}
			}
			return nil
		},
		Placement: func(ctx context.Context, width int) (cairn.PGTable, []cairn.Disk, error) {
			disks, err := store.Disks(ctx)
			if err != nil {
				return cairn.PGTable{}, nil, err
			}
			t, err := store.PGTable(ctx, width)
			if err == nil {
				return t, disks, nil
			}
			if !errors.Is(err, cairn.ErrNotFound) {
				return t, nil, err
			}
			nodes, err := store.Nodes(ctx)
			if err != nil {
				return t, nil, err
			}
			t, err = placement.Compute(placement.Input{Nodes: nodes, Disks: disks, Width: width})
			return t, disks, err
		},
	}
}
