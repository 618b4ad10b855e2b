//go:build linux

// Command avx512emu runs the tests of ckbench's AVX-512 tiers on a CPU
// without AVX-512, under Bochs' emulation of an AVX-512 Intel core: it
// checks correctness only (the gates, the stores, the quantizers, byte
// for byte), never speed, which no emulator tells.
//
// On the host it builds the test binaries of the packages with assembly
// tiers (go test -c, CGO_ENABLED=0), packs them with their test data and
// itself, as the guest's init, into an initramfs, boots a Debian kernel on
// it from an ISO (isolinux) in Bochs, and reads the guest's serial port.
// In the guest (PID 1) it runs each test binary from its package folder
// with CKBENCH_REQUIRE_TIERS set to the tiers asked for, so that a tier
// the emulated CPU lacks fails rather than skips, then powers off.
//
// The emulator is not the silicon: Bochs 2.7 rounds VCVTPS2PH's ties away
// from even (f32 0xbdf41000, exactly between two f16, gives 0xafa1, not
// 0xafa0), in its VEX form as in its EVEX one, so the f16 stores and some
// f16 scales (the KV cache's q8_0, q8_1's sum) fail their byte-exact
// checks there in every tier. The
// avx2 tier is the control: the same tests run natively first (they must
// pass), then in the guest beside avx512. An avx512 failure whose avx2 twin
// (the same subtest, avx2 for avx512) fails too in the guest is the
// emulator's; any other failure is ckbench's. It exits 0 only when every
// failure is the emulator's.
//
//	go run ./tools/avx512emu                         # avx2 and avx512 on Skylake-X: 18 min on a Zen 3
//	go run ./tools/avx512emu -run 'TestGate$/(avx2|avx512)$' ./kernels/attention
//
// Needs (Debian): apt-get install bochs bochsbios vgabios isolinux
// syslinux-common xorriso; a kernel is fetched with apt-get download
// linux-image-amd64's image (or give -kernel). Bochs 2.7 reports an XSAVES
// area size that Linux refuses, which would leave AVX disabled: the kernel
// is booted with clearcpuid=xsaves,xsavec (the standard XSAVE format).
// Bochs 2.7's tigerlake model (the only one with AVX512-VNNI) did not
// boot Debian's 6.1 kernel here (xstate warnings, then a hang after "LSM:
// Security Framework initializing", intel_pstate=disable or not), so the
// avx512vnni tier stays unchecked; -cpu and -append are there to try.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The guest's files: the plan (one package a line: its folder, then the
// test binary's arguments, tab-separated) and the tiers required.
const (
	planFile  = "/emu/plan"
	tiersFile = "/emu/tiers"
	// Lines of the serial output the host reads.
	startTag = "EMU START "
	doneTag  = "EMU DONE "
)

func main() {
	if os.Getpid() == 1 {
		guest()
		return
	}
	if err := host(); err != nil {
		fmt.Fprintln(os.Stderr, "avx512emu:", err)
		os.Exit(2)
	}
}

// defaultPkgs are the packages with assembly tiers.
var defaultPkgs = []string{"./kernels/attention", "./kernels/kvcache", "./kernels/quant", "./kernels/prefill", "./kernels/softmax", "./roofline"}

func host() error {
	cpu := flag.String("cpu", "corei7_skylake_x", "Bochs CPU model (bochs -help cpu lists them)")
	run := flag.String("run", "/(avx2|avx512)$", "go test -run pattern of the tests (run natively, then in the guest)")
	tiers := flag.String("tiers", "avx2,avx512", "tiers that must run in the guest (CKBENCH_REQUIRE_TIERS)")
	work := flag.String("work", filepath.Join(os.TempDir(), "ckbench-avx512emu"), "scratch folder (kernel, initramfs, ISO, logs)")
	kernel := flag.String("kernel", "", "x86-64 Linux kernel image (default: Debian's, fetched into -work)")
	timeout := flag.Duration("timeout", 90*time.Minute, "longest the emulator may run")
	appendArgs := flag.String("append", "quiet loglevel=3", "more kernel command-line arguments")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./tools/avx512emu [flags] [packages]\n\nRuns the packages' tests (default %s) under Bochs' AVX-512 emulation; correctness only.\n\n", strings.Join(defaultPkgs, " "))
		flag.PrintDefaults()
	}
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = defaultPkgs
	}
	if b, err := os.ReadFile("go.mod"); err != nil || !bytes.Contains(b, []byte("module github.com/ckbench/ckbench\n")) {
		return errors.New("run it from the repository's root (make test-avx512-emu)")
	}
	for _, tool := range []string{"bochs", "xorriso", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: apt-get install bochs bochsbios vgabios isolinux syslinux-common xorriso", tool)
		}
	}
	isolinux := []string{"/usr/lib/ISOLINUX/isolinux.bin", "/usr/lib/syslinux/modules/bios/ldlinux.c32"}
	for _, f := range isolinux {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s not found: apt-get install isolinux syslinux-common", f)
		}
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	if *kernel == "" {
		k, err := debianKernel(*work)
		if err != nil {
			return err
		}
		*kernel = k
	}

	// The control: the same tests on this CPU, natively (its tiers; the
	// avx512 subtests skip where it has none).
	fmt.Fprintf(os.Stderr, "avx512emu: the tests natively first (-run %s)\n", *run)
	if err := sh(append(os.Environ(), "CKBENCH_REQUIRE_TIERS=avx2"), "go", append([]string{"test", "-count=1", "-run", *run}, pkgs...)...); err != nil {
		return fmt.Errorf("the tests fail natively, fix that first: %v", err)
	}

	// The guest's root: the init (this program), each package's test
	// binary with its folder's .s files (the VEX checks read them) and
	// testdata, the repository's testdata, the plan.
	root := filepath.Join(*work, "root")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	self, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if err := sh(env, "go", "build", "-o", filepath.Join(root, "init"), "./tools/avx512emu"); err != nil {
		return err
	}
	var plan strings.Builder
	for _, p := range pkgs {
		rel := filepath.Clean(strings.TrimPrefix(p, "./"))
		dir := filepath.Join(root, "repo", rel)
		bin := filepath.Base(rel) + ".test"
		fmt.Fprintf(os.Stderr, "avx512emu: building %s\n", p)
		if err := sh(env, "go", "test", "-c", "-o", filepath.Join(dir, bin), "./"+rel); err != nil {
			return err
		}
		asm, _ := filepath.Glob(filepath.Join(self, rel, "*.s"))
		for _, f := range asm {
			if err := copyFile(f, filepath.Join(dir, filepath.Base(f))); err != nil {
				return err
			}
		}
		if err := copyTree(filepath.Join(self, rel, "testdata"), filepath.Join(dir, "testdata")); err != nil {
			return err
		}
		fmt.Fprintf(&plan, "%s\t./%s\t-test.run\t%s\t-test.v\n", "/repo/"+filepath.ToSlash(rel), bin, *run)
	}
	if err := copyTree(filepath.Join(self, "testdata"), filepath.Join(root, "repo", "testdata")); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(root, planFile), plan.String()); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(root, tiersFile), *tiers); err != nil {
		return err
	}

	// initramfs, ISO, bochsrc.
	iso := filepath.Join(*work, "iso")
	if err := os.RemoveAll(iso); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(iso, "isolinux"), 0o755); err != nil {
		return err
	}
	if err := writeInitramfs(root, filepath.Join(iso, "initrd.gz")); err != nil {
		return err
	}
	for _, f := range isolinux {
		if err := copyFile(f, filepath.Join(iso, "isolinux", filepath.Base(f))); err != nil {
			return err
		}
	}
	if err := copyFile(*kernel, filepath.Join(iso, "vmlinuz")); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(iso, "isolinux", "isolinux.cfg"), "DEFAULT linux\nPROMPT 0\nTIMEOUT 0\nLABEL linux\n  KERNEL /vmlinuz\n"+
		"  APPEND initrd=/initrd.gz console=ttyS0,115200 mitigations=off clearcpuid=xsaves,xsavec "+*appendArgs+"\n"); err != nil {
		return err
	}
	isoFile := filepath.Join(*work, "boot.iso")
	if err := shQuiet("xorriso", "-as", "mkisofs", "-o", isoFile, "-b", "isolinux/isolinux.bin", "-c", "isolinux/boot.cat",
		"-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", iso); err != nil {
		return err
	}
	serial := filepath.Join(*work, "serial.out")
	os.Remove(serial)
	rc := fmt.Sprintf(`megs: 1024
cpu: model=%s, count=1, ips=100000000
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path=%s, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=%s
display_library: rfb, options="timeout=0"
log: %s
clock: sync=none
panic: action=fatal
`, *cpu, isoFile, serial, filepath.Join(*work, "bochs.log"))
	rcFile := filepath.Join(*work, "bochsrc")
	if err := writeFile(rcFile, rc); err != nil {
		return err
	}

	// Run: Debian's bochs has the debugger built in; "c" continues.
	fmt.Fprintf(os.Stderr, "avx512emu: booting %s (%s); the guest's output goes to %s\n", *cpu, *kernel, serial)
	cmd := exec.Command("bochs", "-q", "-f", rcFile)
	cmd.Stdin = strings.NewReader("c\n")
	bout, err := os.Create(filepath.Join(*work, "bochs.out")) // its debugger's prompt and last state
	if err != nil {
		return err
	}
	defer bout.Close()
	cmd.Stdout, cmd.Stderr = bout, bout
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	printed := 0
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	deadline := time.After(*timeout)
	for done := false; !done; {
		select {
		case <-exited:
			done = true
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			done = true
			fmt.Fprintf(os.Stderr, "avx512emu: timed out after %v\n", *timeout)
		case <-tick.C:
		}
		printed = echoNew(serial, printed)
	}
	if _, err := os.Stat(serial); err != nil {
		return fmt.Errorf("the guest wrote nothing: Bochs' own output is in %s", bout.Name())
	}
	return verdict(serial, pkgs)
}

// echoNew prints the serial output's new lines from byte off on, but the
// passes, skips and RUN lines (all of it stays in the file), returning
// where it stopped.
func echoNew(serial string, off int) int {
	f, err := os.Open(serial)
	if err != nil {
		return off
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, int64(off), 1<<40))
	if err != nil {
		return off
	}
	end := bytes.LastIndexByte(b, '\n') + 1 // whole lines only
	if end == 0 {
		return off
	}
	for _, l := range lines(b[:end]) {
		skipReason := strings.Contains(l, "isatest.go") && !strings.Contains(l, "required")
		if l == "" || strings.HasPrefix(l, "===") || strings.Contains(l, "--- PASS") || strings.Contains(l, "--- SKIP") || skipReason {
			continue
		}
		fmt.Println(l)
	}
	return off + end
}

// lines splits the guest's serial output into lines (the emulated UART
// ends them with CR LF).
func lines(b []byte) []string {
	return strings.Split(strings.ReplaceAll(string(b), "\r", ""), "\n")
}

// verdict reads the guest's output: every package must have finished,
// and every failing subtest must be an avx512 one whose avx2 twin failed
// too (the emulator's, see the package doc).
func verdict(serial string, pkgs []string) error {
	b, err := os.ReadFile(serial)
	if err != nil {
		return fmt.Errorf("no output from the guest: %v", err)
	}
	done := 0
	var emulator, ours []string
	// A package's failing tests, from its START line to its DONE line.
	var pkg string
	failed := map[string]bool{}
	for _, l := range lines(b) {
		if rest, ok := strings.CutPrefix(l, startTag); ok {
			pkg, failed = rest, map[string]bool{}
		}
		if _, name, ok := strings.Cut(l, "--- FAIL: "); ok {
			failed[strings.Fields(name)[0]] = true
		}
		rest, ok := strings.CutPrefix(l, doneTag)
		if !ok {
			continue
		}
		done++
		e, o := judge(failed)
		emulator = append(emulator, e...)
		for _, name := range o {
			ours = append(ours, pkg+": "+name)
		}
		if !strings.HasSuffix(rest, " ok") && len(e)+len(o) == 0 {
			// Failed without a failing test: a crash (an illegal
			// instruction, a panic) or a build problem.
			ours = append(ours, rest)
		}
	}
	if done < len(pkgs) {
		return fmt.Errorf("the guest finished %d of %d packages (see %s)", done, len(pkgs), serial)
	}
	if len(emulator) > 0 {
		fmt.Fprintf(os.Stderr, "avx512emu: %d avx512 subtests failed as their avx2 twins did in the guest (and not natively): the emulator's\n", len(emulator))
	}
	if len(ours) > 0 {
		sort.Strings(ours)
		return fmt.Errorf("%d failures the avx2 control does not share (see %s): %s", len(ours), serial, strings.Join(ours, ", "))
	}
	fmt.Fprintf(os.Stderr, "avx512emu: %d packages done under emulation, no failure of ckbench's\n", done)
	return nil
}

// judge splits one package's failing tests (their leaves: a parent fails
// with its subtest) into the emulator's (an avx512 subtest whose avx2 twin
// failed too) and ckbench's (the rest, but avx2's own, which pass
// natively).
func judge(failed map[string]bool) (emulator, ours []string) {
	for name := range failed {
		leaf := true
		for other := range failed {
			if strings.HasPrefix(other, name+"/") {
				leaf = false
				break
			}
		}
		if !leaf {
			continue
		}
		if twin, ok := avx2Twin(name); ok && failed[twin] {
			emulator = append(emulator, name)
		} else if !strings.Contains(name, "/avx2") {
			ours = append(ours, name)
		}
	}
	return emulator, ours
}

// avx2Twin is the avx2 subtest of an avx512 one (T/avx512/x: T/avx2/x).
func avx2Twin(name string) (string, bool) {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if p == "avx512" {
			parts[i] = "avx2"
			return strings.Join(parts, "/"), true
		}
	}
	return "", false
}

// debianKernel fetches Debian's current amd64 kernel image into work
// once and returns its vmlinuz.
func debianKernel(work string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(work, "kernel", "boot", "vmlinuz-*"))
	if len(matches) > 0 {
		return matches[0], nil
	}
	out, err := exec.Command("apt-cache", "depends", "linux-image-amd64").Output()
	if err != nil {
		return "", fmt.Errorf("no kernel given and apt-cache failed (%v): pass -kernel", err)
	}
	var pkg string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			pkg = f[1]
			break
		}
	}
	if pkg == "" {
		return "", errors.New("no kernel given and linux-image-amd64 names no image: pass -kernel")
	}
	dl := filepath.Join(work, "deb")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", err
	}
	get := exec.Command("apt-get", "download", pkg)
	get.Dir, get.Stdout, get.Stderr = dl, os.Stderr, os.Stderr
	if err := get.Run(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %v", pkg, err)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, pkg+"_*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("apt-get download %s left no .deb in %s", pkg, dl)
	}
	if err := sh(nil, "dpkg-deb", "-x", debs[0], filepath.Join(work, "kernel")); err != nil {
		return "", err
	}
	matches, _ = filepath.Glob(filepath.Join(work, "kernel", "boot", "vmlinuz-*"))
	if len(matches) == 0 {
		return "", fmt.Errorf("%s holds no boot/vmlinuz-*", debs[0])
	}
	return matches[0], nil
}

// guest is the init of the emulated machine.
func guest() {
	// The console and /dev/null are in the initramfs (the runtime opens
	// /dev/null for closed standard descriptors before main).
	syscall.Mount("proc", "/proc", "proc", 0, "")
	cpu, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(cpu), "\n") {
		if strings.HasPrefix(l, "model name") {
			fmt.Println("EMU CPU", strings.TrimSpace(strings.SplitN(l, ":", 2)[1]))
		}
		if strings.HasPrefix(l, "flags") {
			var avx []string
			for _, f := range strings.Fields(l) {
				if strings.HasPrefix(f, "avx") || f == "fma" || f == "f16c" {
					avx = append(avx, f)
				}
			}
			fmt.Println("EMU FLAGS", strings.Join(avx, " "))
			break
		}
	}
	tiers, _ := os.ReadFile(tiersFile)
	plan, _ := os.ReadFile(planFile)
	for _, line := range strings.Split(strings.TrimSpace(string(plan)), "\n") {
		f := strings.Split(line, "\t")
		fmt.Println(startTag + f[0])
		st := time.Now()
		cmd := exec.Command(f[1], f[2:]...)
		cmd.Dir = f[0]
		cmd.Env = []string{"HOME=/tmp", "TMPDIR=/tmp", "CKBENCH_REQUIRE_TIERS=" + strings.TrimSpace(string(tiers))}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
		res := "ok"
		if err := cmd.Run(); err != nil {
			res = "FAIL: " + err.Error()
		}
		fmt.Printf("%s%s in %.0f s (guest clock) %s\n", doneTag, f[0], time.Since(st).Seconds(), res)
	}
	// The emulated UART drains slowly: give it time before powering off.
	time.Sleep(20 * time.Second)
	syscall.Sync()
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
}

// writeInitramfs writes the files under root, and the device nodes the
// guest needs, as a gzipped newc cpio archive (what Linux unpacks as its
// initramfs); no root privileges needed, unlike mknod.
func writeInitramfs(root, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	bw := bufio.NewWriter(zw)
	ino := uint32(1)
	entry := func(name string, mode, rmaj, rmin uint32, data []byte) {
		hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, rmaj, rmin, len(name)+1, 0)
		ino++
		bw.WriteString(hdr)
		bw.WriteString(name)
		bw.WriteByte(0)
		pad(bw, len(hdr)+len(name)+1)
		bw.Write(data)
		pad(bw, len(data))
	}
	for _, d := range []string{"dev", "proc", "tmp"} {
		entry(d, 0o40755, 0, 0, nil)
	}
	entry("dev/console", 0o20600, 5, 1, nil)
	entry("dev/null", 0o20666, 1, 3, nil)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			entry(rel, 0o40755, 0, 0, nil)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		entry(rel, 0o100755, 0, 0, b)
		return nil
	})
	if err != nil {
		return err
	}
	entry("TRAILER!!!", 0, 0, 0, nil)
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// pad writes the zeros that align n bytes to 4.
func pad(w io.ByteWriter, n int) {
	for ; n%4 != 0; n++ {
		w.WriteByte(0)
	}
}

func sh(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return nil
}

// shQuiet runs a command whose output matters only when it fails.
func shQuiet(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func writeFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// copyTree copies the files under src (if it exists) to dst.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		return copyFile(path, filepath.Join(dst, rel))
	})
}
