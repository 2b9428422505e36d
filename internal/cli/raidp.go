package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/internal/vfs"
	"cairn/node/lstor"
	"cairn/raidp"
	"cairn/repair/raidprun"
)

func runAdminRaidp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin raidp", "RAIDP warm-tier disks and their Lstors: the raidp policy (S3 storage class WARM), docs/design/raidp.md.", []cmdline.Command{
		{Name: "verify", Summary: "check that every Lstor is the XOR of its disk's superchunks, and the replicas agree", Run: runRaidpVerify},
		{Name: "plan", Summary: "predict single- and dual-failure recovery times of a group (offline)", Run: runRaidpPlan},
		{Name: "group", Summary: "print the raidp group: its disks, generation and layout", Run: runRaidpGroup},
		{Name: "space", Summary: "print the raidp group's used and dead bytes per superchunk and the backlog of dead ranges to zero", Run: runRaidpSpace},
		{Name: "recover", Summary: "recover the raidp group from one or two lost disks now (the director does it for disks marked down)", Run: runRaidpRecover},
		{Name: "recovery", Summary: "print the raidp group's stored recovery plan and its progress", Run: runRaidpRecovery},
	}, args, stdout, stderr)
}

const raidpVerifyHelp = `Checks RAIDP disks offline, on the machine that holds them (each store is
locked while open, so stop the node first). For every DISK,lstor=LSTOR it
replays a pending journal record, then checks that each parity block passes
its CRC and equals the XOR of the disk's superchunk slots (docs/design/raidp.md).
With --rows, the disks are taken as one group in argument order, laid out as
raidp.New(len(disks), slots, rows), and the two replicas of every superchunk
are compared too. With --group FILE (the group record, as printed by
cairn admin raidp group --json), the disks are the group's, in its order,
"-" for a disk out of it; the replicas of the group's layout are compared,
and every free slot must be zero: bytes there count in the disk's Lstor but
belong to no superchunk (a recovery's stray copy), and would spoil a
dual-failure rebuild from that Lstor.

--resync recomputes the parity of the disks that fail (their data is taken as
the truth) and checks again. It exits non-zero while any problem remains.
An Lstor on the disk's path is refused; one on the same file system as its
disk is allowed with a warning (a failure of that device loses both).`

func runRaidpVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp verify", flag.ContinueOnError)
	sizeArg := fs.String("size", "", "superchunk size (e.g. 1GiB); required")
	slots := fs.Int("slots", 0, "superchunk slots per disk; required")
	rows := fs.Int("rows", 0, "rows of the group's layout, to compare replicas (0: Lstors only)")
	groupFile := fs.String("group", "", "the group record (JSON) whose layout to check: replicas and free slots")
	resync := fs.Bool("resync", false, "recompute the parity of the disks that fail, then check again")
	cmdline.Usage(fs, "cairn admin raidp verify --size SIZE --slots N [--rows R | --group FILE] [--resync] DISK,lstor=LSTOR|-...", raidpVerifyHelp)
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, true); err != nil {
		return err
	}
	size, err := units.ParseSize(*sizeArg)
	if err != nil || size <= 0 {
		return fmt.Errorf("%w: --size %q: want a positive size such as 1GiB", ErrUsage, *sizeArg)
	}
	if *slots < 1 {
		return fmt.Errorf("%w: --slots %d: want at least 1", ErrUsage, *slots)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no disks given (DISK,lstor=LSTOR ...)", ErrUsage)
	}
	var group *raidp.Group
	if *groupFile != "" {
		if *rows > 0 {
			return fmt.Errorf("%w: --rows and --group both give the layout: choose one", ErrUsage)
		}
		b, err := os.ReadFile(*groupFile)
		if err != nil {
			return fmt.Errorf("%w: --group: %w", ErrUsage, err)
		}
		g, err := raidp.DecodeGroup(b)
		if err != nil {
			return fmt.Errorf("%w: --group %s: %w", ErrUsage, *groupFile, err)
		}
		if len(g.Disks) != fs.NArg() || g.Size != size || g.Layout.Slots != *slots {
			return fmt.Errorf("%w: --group %s: %d disks of %d slots of %d bytes; given %d disks of %d slots of %d bytes", ErrUsage, *groupFile,
				len(g.Disks), g.Layout.Slots, g.Size, fs.NArg(), *slots, size)
		}
		group = &g
	}
	stores := make([]*lstor.Store, fs.NArg()) // nil: "-", a disk out of the group
	defer func() {
		for _, s := range stores {
			if s != nil {
				s.Close()
			}
		}
	}()
	for i, spec := range fs.Args() {
		if spec == "-" && group != nil {
			continue
		}
		disk, lst, err := lstor.ParseDiskSpec(spec)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		if lst == "" {
			return fmt.Errorf("%w: disk spec %q has no Lstor (want DISK,lstor=LSTOR)", ErrUsage, spec)
		}
		if same, err := sameDevice(disk, lst); err == nil && same {
			fmt.Fprintf(stderr, "warning: %s and its Lstor %s are on the same file system: one device failure loses both\n", disk, lst)
		}
		s, err := lstor.Open(ctx, lstor.Config{FS: vfs.Default, Disk: disk, Lstor: lst, Size: size, Slots: *slots, MustExist: true})
		if err != nil {
			return fmt.Errorf("disk %s: %w", disk, err)
		}
		stores[i] = s
	}
	problems := 0
	for i, s := range stores {
		if s == nil {
			continue
		}
		rep, err := s.Verify(ctx)
		if err != nil {
			return fmt.Errorf("disk %s: %w", fs.Arg(i), err)
		}
		if !rep.OK() && *resync {
			fmt.Fprintf(stdout, "%s: %v; resyncing\n", fs.Arg(i), rep)
			if err := s.Resync(ctx); err != nil {
				return fmt.Errorf("disk %s: %w", fs.Arg(i), err)
			}
			if rep, err = s.Verify(ctx); err != nil {
				return fmt.Errorf("disk %s: %w", fs.Arg(i), err)
			}
		}
		if rep.OK() {
			fmt.Fprintf(stdout, "%s: ok (%d parity blocks)\n", fs.Arg(i), rep.Blocks)
		} else {
			problems++
			fmt.Fprintf(stdout, "%s: %v\n", fs.Arg(i), rep)
		}
	}
	var l raidp.Layout
	switch {
	case group != nil:
		l = group.Layout
	case *rows > 0:
		if l, err = raidp.New(len(stores), *slots, *rows); err != nil {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
	}
	if len(l.Superchunks) > 0 {
		disks := make(map[int]raidprun.Disk)
		for i, s := range stores {
			if s != nil {
				disks[i] = s
			}
		}
		for _, sc := range l.Superchunks {
			for _, p := range sc.Replicas {
				if disks[p.Disk] == nil {
					return fmt.Errorf("%w: superchunk %d is on disk %d, given as -", ErrUsage, sc.ID, p.Disk)
				}
			}
		}
		div, err := raidprun.Verify(ctx, l, disks, raidprun.Config{Size: size})
		if err != nil {
			return err
		}
		for _, d := range div {
			i := slices.IndexFunc(l.Superchunks, func(s raidp.Superchunk) bool { return s.ID == d.Superchunk })
			sc := l.Superchunks[i]
			fmt.Fprintf(stdout, "superchunk %d: replicas on %s and %s differ from byte %d\n", sc.ID,
				fs.Arg(sc.Replicas[0].Disk), fs.Arg(sc.Replicas[1].Disk), d.Off)
		}
		problems += len(div)
		if len(div) == 0 {
			fmt.Fprintf(stdout, "%d superchunks: both replicas agree\n", len(l.Superchunks))
		}
		if group != nil {
			stray, err := raidprun.Stray(ctx, l, disks, raidprun.Config{Size: size})
			if err != nil {
				return err
			}
			for _, p := range stray {
				fmt.Fprintf(stdout, "%s: free slot %d holds bytes no superchunk accounts for (its Lstor counts them)\n", fs.Arg(p.Disk), p.Slot)
			}
			problems += len(stray)
			if len(stray) == 0 {
				fmt.Fprintln(stdout, "free slots: all zero")
			}
		}
	}
	if problems > 0 {
		return errors.New("raidp verify: " + fmt.Sprint(problems) + " problems")
	}
	return nil
}
