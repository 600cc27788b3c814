package sal

import (
	"context"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	psnet "github.com/shirou/gopsutil/v4/net"
)

// HostFacts is the stable part of a host's identity.
type HostFacts struct {
	Hostname        string    `json:"hostname"`
	HostID          string    `json:"host_id,omitempty"`
	OS              string    `json:"os"`
	Platform        string    `json:"platform"`
	PlatformFamily  string    `json:"platform_family,omitempty"`
	PlatformVersion string    `json:"platform_version"`
	KernelVersion   string    `json:"kernel_version"`
	Arch            string    `json:"arch"`
	Virtualization  string    `json:"virtualization,omitempty"`
	BootTime        time.Time `json:"boot_time"`
}

// HostInfo is HostFacts plus the uptime.
type HostInfo struct {
	HostFacts
	UptimeSeconds uint64 `json:"uptime_seconds"`
}

// CPUFacts describes the processors.
type CPUFacts struct {
	Model         string  `json:"model"`
	Vendor        string  `json:"vendor,omitempty"`
	MHz           float64 `json:"mhz,omitempty"`
	LogicalCores  int     `json:"logical_cores"`
	PhysicalCores int     `json:"physical_cores"`
}

// CPUInfo is CPUFacts plus the current utilisation.
type CPUInfo struct {
	CPUFacts
	// UsagePercent is the share of all cores busy since the previous CPU
	// sample taken by this System (or over a short window on the first call).
	UsagePercent float64 `json:"usage_percent"`
}

// MemoryInfo is physical memory and swap, in bytes.
type MemoryInfo struct {
	TotalBytes     uint64  `json:"total_bytes"`
	AvailableBytes uint64  `json:"available_bytes"`
	UsedBytes      uint64  `json:"used_bytes"`
	UsedPercent    float64 `json:"used_percent"`
	SwapTotalBytes uint64  `json:"swap_total_bytes"`
	SwapUsedBytes  uint64  `json:"swap_used_bytes"`
	SwapFreeBytes  uint64  `json:"swap_free_bytes"`
}

// DiskFacts is a mounted file system's identity and size.
type DiskFacts struct {
	Mountpoint string `json:"mountpoint"`
	Device     string `json:"device"`
	FSType     string `json:"fs_type"`
	TotalBytes uint64 `json:"total_bytes"`
}

// DiskInfo is DiskFacts plus current usage.
type DiskInfo struct {
	DiskFacts
	FreeBytes   uint64  `json:"free_bytes"`
	UsedBytes   uint64  `json:"used_bytes"`
	UsedPercent float64 `json:"used_percent"`
}

// NetInterface is a network interface with its addresses (CIDR notation).
type NetInterface struct {
	Index        int      `json:"index"`
	Name         string   `json:"name"`
	MTU          int      `json:"mtu"`
	HardwareAddr string   `json:"hardware_addr,omitempty"`
	Addrs        []string `json:"addrs"`
	Flags        []string `json:"flags"`
}

// LoadAvg is the run-queue load average.
type LoadAvg struct {
	Load1  float64 `json:"load1"`
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`
}

// Facts is what a node reports about itself when it changes: values that stay
// the same between reboots and reconfigurations. Its slices are sorted, so two
// Facts of an unchanged node encode to the same JSON.
type Facts struct {
	Host             HostFacts      `json:"host"`
	CPU              CPUFacts       `json:"cpu"`
	MemoryTotalBytes uint64         `json:"memory_total_bytes"`
	SwapTotalBytes   uint64         `json:"swap_total_bytes"`
	Disks            []DiskFacts    `json:"disks"`
	Interfaces       []NetInterface `json:"interfaces"`
}

// DiskUsage is one mount's usage in a Stats sample.
type DiskUsage struct {
	Mountpoint string `json:"mountpoint"`
	UsedBytes  uint64 `json:"used_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
}

// NetCounters are an interface's cumulative counters since boot; consumers
// derive rates from consecutive samples.
type NetCounters struct {
	Name        string `json:"name"`
	BytesRecv   uint64 `json:"bytes_recv"`
	BytesSent   uint64 `json:"bytes_sent"`
	PacketsRecv uint64 `json:"packets_recv"`
	PacketsSent uint64 `json:"packets_sent"`
	ErrorsIn    uint64 `json:"errors_in"`
	ErrorsOut   uint64 `json:"errors_out"`
}

// Stats is one sample of the changing numbers, taken periodically.
type Stats struct {
	Time                 time.Time     `json:"time"`
	CPUPercent           float64       `json:"cpu_percent"`
	MemoryUsedBytes      uint64        `json:"memory_used_bytes"`
	MemoryAvailableBytes uint64        `json:"memory_available_bytes"`
	SwapUsedBytes        uint64        `json:"swap_used_bytes"`
	Load                 LoadAvg       `json:"load"`
	Disks                []DiskUsage   `json:"disks"`
	Net                  []NetCounters `json:"net"`
}

// Host returns the host's identity and uptime.
func (s *System) Host(ctx context.Context) (HostInfo, error) {
	hi, err := host.InfoWithContext(ctx)
	if err != nil {
		return HostInfo{}, fmt.Errorf("sal: read host information: %w", err)
	}
	return HostInfo{
		HostFacts: HostFacts{
			Hostname:        hi.Hostname,
			HostID:          hi.HostID,
			OS:              hi.OS,
			Platform:        hi.Platform,
			PlatformFamily:  hi.PlatformFamily,
			PlatformVersion: hi.PlatformVersion,
			KernelVersion:   hi.KernelVersion,
			Arch:            hi.KernelArch,
			Virtualization:  strings.TrimSpace(hi.VirtualizationSystem + " " + hi.VirtualizationRole),
			BootTime:        time.Unix(int64(hi.BootTime), 0).UTC(),
		},
		UptimeSeconds: hi.Uptime,
	}, nil
}

// CPU returns the processor model, core counts and current utilisation.
func (s *System) CPU(ctx context.Context) (CPUInfo, error) {
	facts, err := s.cpuFacts(ctx)
	if err != nil {
		return CPUInfo{}, err
	}
	pct, err := s.cpuPercent(ctx)
	if err != nil {
		return CPUInfo{}, err
	}
	return CPUInfo{CPUFacts: facts, UsagePercent: pct}, nil
}

func (s *System) cpuFacts(ctx context.Context) (CPUFacts, error) {
	var f CPUFacts
	infos, err := cpu.InfoWithContext(ctx)
	if err != nil {
		return f, fmt.Errorf("sal: read CPU information: %w", err)
	}
	if len(infos) > 0 {
		f.Model = strings.TrimSpace(infos[0].ModelName)
		f.Vendor = infos[0].VendorID
		f.MHz = infos[0].Mhz
	}
	if f.LogicalCores, err = cpu.CountsWithContext(ctx, true); err != nil {
		return f, fmt.Errorf("sal: count logical CPUs: %w", err)
	}
	// Some virtual machines expose no core topology; report the logical count
	// rather than fail the whole call.
	if f.PhysicalCores, err = cpu.CountsWithContext(ctx, false); err != nil || f.PhysicalCores == 0 {
		f.PhysicalCores = f.LogicalCores
	}
	return f, nil
}

type cpuSample struct {
	at          time.Time
	busy, total float64
}

// minCPUWindow is the shortest interval a utilisation figure is computed over;
// shorter ones are dominated by scheduling noise.
const minCPUWindow = 100 * time.Millisecond

// cpuPercent measures utilisation since the previous sample kept in the
// System, which makes periodic Stats calls report the average over their
// period. gopsutil's own interval-0 mode keeps that sample in a package
// global instead, which several Systems would disturb.
func (s *System) cpuPercent(ctx context.Context) (float64, error) {
	s.cpuMu.Lock()
	defer s.cpuMu.Unlock()

	prev := s.lastCPU
	if prev.at.IsZero() || time.Since(prev.at) < minCPUWindow {
		first, err := readCPUSample(ctx)
		if err != nil {
			return 0, err
		}
		prev = first
		t := time.NewTimer(2 * minCPUWindow)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("sal: measure CPU usage: %w", ctx.Err())
		case <-t.C:
		}
	}
	cur, err := readCPUSample(ctx)
	if err != nil {
		return 0, err
	}
	s.lastCPU = cur
	dTotal := cur.total - prev.total
	if dTotal <= 0 {
		return 0, nil
	}
	pct := (cur.busy - prev.busy) / dTotal * 100
	// Two decimals are all a tick-based measure can support.
	return math.Round(min(max(pct, 0), 100)*100) / 100, nil
}

func readCPUSample(ctx context.Context) (cpuSample, error) {
	ts, err := cpu.TimesWithContext(ctx, false)
	if err != nil {
		return cpuSample{}, fmt.Errorf("sal: read CPU times: %w", err)
	}
	if len(ts) == 0 {
		return cpuSample{}, fmt.Errorf("sal: read CPU times: the system reported none")
	}
	t := ts[0]
	// Guest time is already counted in user time on Linux.
	total := t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	return cpuSample{at: time.Now(), busy: total - t.Idle - t.Iowait, total: total}, nil
}

// Memory returns physical memory and swap figures.
func (s *System) Memory(ctx context.Context) (MemoryInfo, error) {
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return MemoryInfo{}, fmt.Errorf("sal: read memory statistics: %w", err)
	}
	info := MemoryInfo{
		TotalBytes:     vm.Total,
		AvailableBytes: vm.Available,
		UsedBytes:      vm.Used,
		UsedPercent:    vm.UsedPercent,
	}
	// A host without swap is normal; only the swap figures stay zero.
	if sw, err := mem.SwapMemoryWithContext(ctx); err == nil {
		info.SwapTotalBytes = sw.Total
		info.SwapUsedBytes = sw.Used
		info.SwapFreeBytes = sw.Free
	}
	return info, nil
}

// Disks returns the mounted physical file systems with their usage, sorted by
// mount point. Pseudo file systems (proc, sysfs, tmpfs...) are left out.
func (s *System) Disks(ctx context.Context) ([]DiskInfo, error) {
	parts, err := disk.PartitionsWithContext(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("sal: list mounted file systems: %w", err)
	}
	seen := map[string]bool{}
	out := []DiskInfo{}
	for _, p := range parts {
		if seen[p.Mountpoint] {
			continue
		}
		u, err := disk.UsageWithContext(ctx, p.Mountpoint)
		if err != nil || u.Total == 0 {
			// Unreadable (permissions, a stale network mount) or empty mounts
			// say nothing useful about capacity.
			continue
		}
		seen[p.Mountpoint] = true
		out = append(out, DiskInfo{
			DiskFacts: DiskFacts{
				Mountpoint: p.Mountpoint,
				Device:     p.Device,
				FSType:     p.Fstype,
				TotalBytes: u.Total,
			},
			FreeBytes:   u.Free,
			UsedBytes:   u.Used,
			UsedPercent: u.UsedPercent,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mountpoint < out[j].Mountpoint })
	return out, nil
}

// NetInterfaces returns the network interfaces, sorted by index.
func (s *System) NetInterfaces(ctx context.Context) ([]NetInterface, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("sal: list network interfaces: %w", err)
	}
	out := make([]NetInterface, 0, len(ifs))
	for _, ifc := range ifs {
		ni := NetInterface{
			Index:        ifc.Index,
			Name:         ifc.Name,
			MTU:          ifc.MTU,
			HardwareAddr: ifc.HardwareAddr.String(),
			Addrs:        []string{},
			Flags:        []string{},
		}
		if ifc.Flags != 0 {
			ni.Flags = strings.Split(ifc.Flags.String(), "|")
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("sal: addresses of interface %s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			ni.Addrs = append(ni.Addrs, a.String())
		}
		sort.Strings(ni.Addrs)
		out = append(out, ni)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// Load returns the 1, 5 and 15 minute load averages.
func (s *System) Load(ctx context.Context) (LoadAvg, error) {
	l, err := load.AvgWithContext(ctx)
	if err != nil {
		return LoadAvg{}, fmt.Errorf("sal: read load average: %w", err)
	}
	return LoadAvg{Load1: l.Load1, Load5: l.Load5, Load15: l.Load15}, nil
}

// Facts gathers the stable description of the node.
func (s *System) Facts(ctx context.Context) (Facts, error) {
	hi, err := s.Host(ctx)
	if err != nil {
		return Facts{}, err
	}
	cf, err := s.cpuFacts(ctx)
	if err != nil {
		return Facts{}, err
	}
	// MHz follows frequency scaling on some hosts; leaving it out keeps Facts
	// from changing with the load.
	cf.MHz = 0
	m, err := s.Memory(ctx)
	if err != nil {
		return Facts{}, err
	}
	disks, err := s.Disks(ctx)
	if err != nil {
		return Facts{}, err
	}
	ifs, err := s.NetInterfaces(ctx)
	if err != nil {
		return Facts{}, err
	}
	f := Facts{
		Host:             hi.HostFacts,
		CPU:              cf,
		MemoryTotalBytes: m.TotalBytes,
		SwapTotalBytes:   m.SwapTotalBytes,
		Disks:            make([]DiskFacts, 0, len(disks)),
		Interfaces:       ifs,
	}
	for _, d := range disks {
		f.Disks = append(f.Disks, d.DiskFacts)
	}
	return f, nil
}

// Stats samples the changing numbers. CPUPercent is the average since the
// previous sample, so calling Stats on a fixed period yields per-period figures.
func (s *System) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Time: time.Now().UTC()}
	var err error
	if st.CPUPercent, err = s.cpuPercent(ctx); err != nil {
		return Stats{}, err
	}
	m, err := s.Memory(ctx)
	if err != nil {
		return Stats{}, err
	}
	st.MemoryUsedBytes = m.UsedBytes
	st.MemoryAvailableBytes = m.AvailableBytes
	st.SwapUsedBytes = m.SwapUsedBytes
	if st.Load, err = s.Load(ctx); err != nil {
		return Stats{}, err
	}
	disks, err := s.Disks(ctx)
	if err != nil {
		return Stats{}, err
	}
	st.Disks = make([]DiskUsage, 0, len(disks))
	for _, d := range disks {
		st.Disks = append(st.Disks, DiskUsage{Mountpoint: d.Mountpoint, UsedBytes: d.UsedBytes, FreeBytes: d.FreeBytes})
	}
	counters, err := psnet.IOCountersWithContext(ctx, true)
	if err != nil {
		return Stats{}, fmt.Errorf("sal: read network counters: %w", err)
	}
	st.Net = make([]NetCounters, 0, len(counters))
	for _, c := range counters {
		st.Net = append(st.Net, NetCounters{
			Name:        c.Name,
			BytesRecv:   c.BytesRecv,
			BytesSent:   c.BytesSent,
			PacketsRecv: c.PacketsRecv,
			PacketsSent: c.PacketsSent,
			ErrorsIn:    c.Errin,
			ErrorsOut:   c.Errout,
		})
	}
	sort.Slice(st.Net, func(i, j int) bool { return st.Net[i].Name < st.Net[j].Name })
	return st, nil
}
