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
	}, args, stdout, stderr)
}

const raidpVerifyHelp = `Checks RAIDP disks offline, on the machine that holds them (each store is
locked while open, so stop the node first). For every DISK,lstor=LSTOR it
replays a pending journal record, then checks that each parity block passes
its CRC and equals the XOR of the disk's superchunk slots (docs/design/raidp.md).
With --rows, the disks are taken as one group in argument order, laid out as
raidp.New(len(disks), slots, rows), and the two replicas of every superchunk
are compared too. With --group FILE (the JSON of cairn admin raidp group
--json), the disks are the group's disks that are not out, in the group's
order, and the replicas are compared where the group places them (a group
after a recovery no longer has raidp.New's layout).

--resync recomputes the parity of the disks that fail (their data is taken as
the truth) and checks again. It exits non-zero while any problem remains.
An Lstor on the disk's path is refused; one on the same file system as its
disk is allowed with a warning (a failure of that device loses both).`

func runRaidpVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp verify", flag.ContinueOnError)
	sizeArg := fs.String("size", "", "superchunk size (e.g. 1GiB); required")
	slots := fs.Int("slots", 0, "superchunk slots per disk; required")
	rows := fs.Int("rows", 0, "rows of the group's layout, to compare replicas (0: Lstors only)")
	resync := fs.Bool("resync", false, "recompute the parity of the disks that fail, then check again")
	groupFile := fs.String("group", "", "the group's JSON (cairn admin raidp group --json), to compare replicas where it places them; the disks are its disks not out, in its order")
	cmdline.Usage(fs, "cairn admin raidp verify --size SIZE --slots N [--rows R | --group FILE] [--resync] DISK,lstor=LSTOR...", raidpVerifyHelp)
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
	var group *raidp.Group // --group
	var live []int         // its disks not out: argument i is group disk live[i]
	if *groupFile != "" {
		if *rows > 0 {
			return fmt.Errorf("%w: --rows and --group both give the layout; give one", ErrUsage)
		}
		b, err := os.ReadFile(*groupFile)
		if err != nil {
			return fmt.Errorf("%w: --group: %w", ErrUsage, err)
		}
		g, err := raidp.DecodeGroup(b)
		if err != nil {
			return fmt.Errorf("%w: --group %s: %w", ErrUsage, *groupFile, err)
		}
		for i := range g.Disks {
			if !slices.Contains(g.Out, i) {
				live = append(live, i)
			}
		}
		if g.Size != size || g.Layout.Slots != *slots || len(live) != fs.NArg() {
			return fmt.Errorf("%w: --group %s: superchunks of %d bytes in %d slots on %d disks not out; given --size %d, --slots %d and %d disks",
				ErrUsage, *groupFile, g.Size, g.Layout.Slots, len(live), size, *slots, fs.NArg())
		}
		group = &g
	}
	var stores []*lstor.Store
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	for _, spec := range fs.Args() {
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
		stores = append(stores, s)
	}
	problems := 0
	for i, s := range stores {
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
	if *rows > 0 || group != nil {
		var l raidp.Layout
		arg := make(map[int]string) // layout disk → its argument
		disks := make(map[int]raidprun.Disk)
		if group != nil {
			l = group.Layout
			for k, d := range live {
				disks[d], arg[d] = stores[k], fs.Arg(k)
			}
		} else {
			if l, err = raidp.New(len(stores), *slots, *rows); err != nil {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			for i, s := range stores {
				disks[i], arg[i] = s, fs.Arg(i)
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
				arg[sc.Replicas[0].Disk], arg[sc.Replicas[1].Disk], d.Off)
		}
		problems += len(div)
		if len(div) == 0 {
			fmt.Fprintf(stdout, "%d superchunks: both replicas agree\n", len(l.Superchunks))
		}
	}
	if problems > 0 {
		return errors.New("raidp verify: " + fmt.Sprint(problems) + " problems")
	}
	return nil
}
