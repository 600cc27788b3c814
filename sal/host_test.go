package sal

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

func TestHost(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	h, err := s.Host(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Hostname == "" || h.OS == "" || h.KernelVersion == "" || h.Arch == "" {
		t.Errorf("missing identity fields: %+v", h)
	}
	if h.BootTime.IsZero() || h.BootTime.After(time.Now()) {
		t.Errorf("boot time %v is not in the past", h.BootTime)
	}
	if h.UptimeSeconds == 0 {
		t.Errorf("uptime is zero")
	}
}

func TestCPU(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	c, err := s.CPU(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.LogicalCores < 1 || c.PhysicalCores < 1 {
		t.Errorf("cores: logical %d physical %d", c.LogicalCores, c.PhysicalCores)
	}
	if c.UsagePercent < 0 || c.UsagePercent > 100 {
		t.Errorf("usage %v outside 0-100", c.UsagePercent)
	}
}

func TestMemoryDisksInterfacesLoad(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx := context.Background()

	m, err := s.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalBytes == 0 || m.AvailableBytes > m.TotalBytes || m.UsedBytes > m.TotalBytes {
		t.Errorf("implausible memory: %+v", m)
	}

	disks, err := s.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(disks) == 0 {
		t.Fatal("no disks")
	}
	for _, d := range disks {
		if d.Mountpoint == "" || d.TotalBytes == 0 || d.UsedBytes > d.TotalBytes {
			t.Errorf("implausible disk: %+v", d)
		}
	}

	ifs, err := s.NetInterfaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lo *NetInterface
	for i := range ifs {
		if slices.Contains(ifs[i].Flags, "loopback") {
			lo = &ifs[i]
		}
	}
	if lo == nil {
		t.Fatalf("no loopback interface among %+v", ifs)
	}
	if lo.MTU <= 0 || !slices.Contains(lo.Addrs, "127.0.0.1/8") {
		t.Errorf("loopback: %+v", *lo)
	}

	l, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Load1 < 0 || l.Load5 < 0 || l.Load15 < 0 {
		t.Errorf("negative load: %+v", l)
	}
}

func TestFactsAreStable(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx := context.Background()
	a, err := s.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Host.Hostname == "" || a.CPU.LogicalCores < 1 || a.MemoryTotalBytes == 0 || len(a.Disks) == 0 || len(a.Interfaces) == 0 {
		t.Fatalf("incomplete facts: %+v", a)
	}
	b, err := s.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("facts changed between two calls:\n%s\n%s", ja, jb)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx := context.Background()
	for i := range 2 {
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.CPUPercent < 0 || st.CPUPercent > 100 {
			t.Errorf("sample %d: cpu %v outside 0-100", i, st.CPUPercent)
		}
		if st.MemoryUsedBytes == 0 || len(st.Disks) == 0 || len(st.Net) == 0 || st.Time.IsZero() {
			t.Errorf("sample %d incomplete: %+v", i, st)
		}
	}
}

func TestCPUPercentHonoursContext(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.cpuPercent(ctx); err == nil {
		t.Fatal("want an error from a cancelled context")
	}
}
