package volume_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/volume"
)

func Example() {
	ctx := context.Background()
	v, err := volume.Open("/disk1", volume.Options{FS: vfs.NewMem(), DiskID: "node1/disk1", Create: true})
	if err != nil {
		panic(err)
	}
	name := cairn.ShardName("0123456789abcdef0123456789abcdef", 2)
	info, err := v.Put(ctx, name, strings.NewReader("hello, shard"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("stored %d bytes, crc32c %08x\n", info.Size, info.CRC)

	r, err := v.NewReader(ctx, name, 7, 5) // bytes 7..11
	if err != nil {
		panic(err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	fmt.Printf("%q\n", b)

	_, err = v.Put(ctx, "../../etc/passwd", strings.NewReader("x"))
	fmt.Println(err != nil)
	// Output:
	// stored 12 bytes, crc32c c14e7c97
	// "shard"
	// true
}
