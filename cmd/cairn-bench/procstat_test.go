package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	// The fields of proc(5) after the name: state ppid pgrp session tty_nr
	// tpgid flags minflt cminflt majflt cmajflt utime stime ...
	for _, tc := range []struct {
		name, stat string
		want       procStat
		wantErr    bool
	}{
		{name: "plain", stat: "42 (cairnd) S 1 42 42 0 -1 4194560 1234 7 3 0 150 25 0 0 20 0 9",
			want: procStat{name: "cairnd", user: 150, system: 25, minorFaults: 1234}},
		{name: "a name with spaces and parentheses", stat: "42 (a ) b (c)) R 1 42 42 0 -1 0 5 0 0 0 1 2 0",
			want: procStat{name: "a ) b (c)", user: 1, system: 2, minorFaults: 5}},
		{name: "too few fields", stat: "42 (cairnd) S 1 42", wantErr: true},
		{name: "no name", stat: "42 cairnd S 1 42 42 0 -1 0 5 0 0 0 1 2 0", wantErr: true},
		{name: "not a number", stat: "42 (cairnd) S 1 42 42 0 -1 0 x 0 0 0 1 2 0", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseProcStat(42, []byte(tc.stat))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parsed %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestReadProcStatCounts checks the fields read are the ones that move:
// fresh memory touched shows as page faults, work as CPU time.
func TestReadProcStatCounts(t *testing.T) {
	before, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const size = 32 << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Munmap(mem) }()
	for i := 0; i < size; i += 4096 {
		mem[i] = 1
	}
	// Work until the kernel's own account (getrusage) says 100 ms of CPU
	// went by, however busy the machine.
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for start := used(); used()-start < 100*time.Millisecond; {
		for i := 0; i < size; i += 64 {
			mem[i]++
		}
	}
	after, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// At least one fault per 2 MiB, even where huge pages back the memory.
	if faults := after.minorFaults - before.minorFaults; faults < size>>21 {
		t.Errorf("touching %d MiB of fresh memory counted %d page faults", size>>20, faults)
	}
	if ticks := after.user + after.system - before.user - before.system; ticks < 5 {
		t.Errorf("100 ms of CPU counted %d clock ticks", ticks)
	}
}
