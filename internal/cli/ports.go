package cli

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// DefaultPortBase is cairn server's --port-base: its ports are
// DefaultPortBase plus each serverPort's offset (9000, 9001, 9100, 9379,
// 9380).
const DefaultPortBase = 9000

// serverPort is one address cairn server listens on.
type serverPort struct {
	flag   string // the flag that sets the address, without "--"
	what   string // what listens there, for errors and help
	offset int    // the port is --port-base + offset
	note   string // more help, e.g. how to turn it off
}

// serverPorts are cairn server's listen addresses: the block --port-base
// moves as a whole.
var serverPorts = []serverPort{
	{"s3-addr", "S3", 0, ""},
	{"console-addr", "web console", 1, `; "" or "off": no console (docs/design/console.md)`}, // consoleOff
	{"node-addr", "node", 100, ""},
	{"meta-addr", "metadata (etcd) client", 379, ""},
	{"meta-peer-addr", "metadata (etcd) peer", 380, ""},
}

// maxPortBase keeps the highest port of the block a valid port.
const maxPortBase = 65535 - 380

// portBaseHelp documents --port-base.
const portBaseHelp = "first port of the block the server listens on, all on 127.0.0.1: S3 on N, web console N+1, node N+100, " +
	"metadata (etcd) client N+379 and peer N+380. A second server on one machine needs another block " +
	"(e.g. --port-base 10000) and another --data. 0: ports the kernel picks. An -addr flag wins over it"

// portAddrs returns each server port's listen address by flag: the flag's
// value when given (a key of given), else 127.0.0.1:base+offset, or port 0
// when base is 0.
func portAddrs(base int, given map[string]string) (map[string]string, error) {
	if base < 0 || base > maxPortBase {
		return nil, fmt.Errorf("%w: --port-base %d: want 0 (ports the kernel picks) or a port up to %d", ErrUsage, base, maxPortBase)
	}
	out := make(map[string]string, len(serverPorts))
	for _, p := range serverPorts {
		if a, ok := given[p.flag]; ok {
			out[p.flag] = a
			continue
		}
		port := 0
		if base != 0 {
			port = base + p.offset
		}
		out[p.flag] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	return out, nil
}

// listenAddr is an address a command listens on, for listenError.
type listenAddr struct {
	what string // "S3"
	addr string // as configured, HOST:PORT
	flag string // the flag that sets it, without "--"
}

// listenError returns err, or, when err is a listen on an address in use,
// an error that names what could not listen, the address and the flag
// that moves it, then hint (e.g. "or move every port with --port-base").
// Of several addrs it names the one whose port the error names, or all of
// them when it names none.
func listenError(err error, addrs []listenAddr, hint string) error {
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	taken := addrs
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		for _, a := range addrs {
			if portOf(a.addr) == portOf(op.Addr.String()) {
				taken = []listenAddr{a}
				break
			}
		}
	}
	var whats, flags []string
	for _, a := range taken {
		whats = append(whats, fmt.Sprintf("%s port %s", a.what, a.addr))
		flags = append(flags, "--"+a.flag)
	}
	msg := fmt.Sprintf("%s is taken (by another process?): choose another with %s", strings.Join(whats, " or "), strings.Join(flags, " or "))
	if len(taken) > 1 {
		msg = fmt.Sprintf("%s is taken (by another process?): choose others with %s", strings.Join(whats, " or "), strings.Join(flags, " and "))
	}
	if hint != "" {
		msg += " " + hint
	}
	return fmt.Errorf("%s (%w)", msg, err)
}

// portOf returns the port of HOST:PORT, or addr if it has none.
func portOf(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil {
		return p
	}
	return addr
}

// portHelp is the help of a server port's flag.
func portHelp(p serverPort) string {
	def := "N"
	if p.offset != 0 {
		def = fmt.Sprintf("N+%d", p.offset)
	}
	return fmt.Sprintf("%s listen address (default 127.0.0.1:%s with --port-base N; port 0: one the kernel picks)%s", p.what, def, p.note)
}
