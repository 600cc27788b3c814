package agent

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"cairn/graph/client"
	"cairn/sal"
)

// heartbeats runs the session's heartbeats with the jobs running here.
func (a *Agent) heartbeats(ctx context.Context) error {
	return a.sess.Heartbeats(ctx, a.running, a.cancel)
}

// facts sends the node's facts at start and whenever they change.
func (a *Agent) facts(ctx context.Context) error {
	var sent []byte
	for {
		f, err := a.sys.Facts(ctx)
		if err == nil {
			in := factsInput(f)
			b, _ := json.Marshal(in)
			if string(b) != string(sent) {
				input := map[string]any{"nodeId": a.nodeID, "facts": in}
				if err := send(ctx, a.c, "ReportFacts", map[string]any{"input": input}, nil); err == nil {
					sent = b
				} else if unauthenticated(err) {
					return err
				} else {
					a.log.Debug().Err(err).Msg("facts not delivered; trying again later")
				}
			}
		} else {
			a.log.Warn().Err(err).Msg("cannot read the node's facts")
		}
		wait := a.cfg.FactsInterval
		if sent == nil {
			wait = min(wait, 10*time.Second) // not delivered yet: try again soon
		}
		if err := sleep(ctx, wait); err != nil {
			return nil
		}
	}
}

// maxBufferedStats bounds the samples kept while the control plane is out of
// reach; the oldest go first. Statistics are measurements: a gap is better
// than a full disk.
const maxBufferedStats = 1000

// stats samples the node every StatsInterval and sends the samples in
// batches of StatsBatch.
func (a *Agent) stats(ctx context.Context) error {
	var batch []map[string]any
	for {
		if err := sleep(ctx, a.cfg.StatsInterval); err != nil {
			return nil
		}
		s, err := a.sys.Stats(ctx)
		if err != nil {
			a.log.Warn().Err(err).Msg("cannot sample the node's statistics")
			continue
		}
		batch = append(batch, statInput(s))
		if len(batch) > maxBufferedStats {
			batch = batch[len(batch)-maxBufferedStats:]
		}
		if len(batch) < a.cfg.StatsBatch {
			continue
		}
		input := map[string]any{"nodeId": a.nodeID, "samples": batch}
		if err := send(ctx, a.c, "ReportStats", map[string]any{"input": input}, nil); err != nil {
			if unauthenticated(err) {
				return err
			}
			if client.Permanent(err) {
				a.log.Warn().Err(err).Msg("statistics refused; dropping the batch")
				batch = nil
			}
			continue
		}
		batch = nil
	}
}

func factsInput(f sal.Facts) map[string]any {
	disks := []map[string]any{}
	for _, d := range f.Disks {
		disks = append(disks, map[string]any{"device": d.Device, "mountpoint": d.Mountpoint, "filesystem": d.FSType, "sizeBytes": d.TotalBytes})
	}
	sort.Slice(disks, func(i, j int) bool { return disks[i]["mountpoint"].(string) < disks[j]["mountpoint"].(string) })
	network := []map[string]any{}
	for _, n := range f.Interfaces {
		addrs := n.Addrs
		if addrs == nil {
			addrs = []string{}
		}
		network = append(network, map[string]any{"name": n.Name, "mac": n.HardwareAddr, "addresses": addrs, "mtu": n.MTU})
	}
	name := f.Host.Platform
	if name == "" {
		name = f.Host.OS
	}
	return map[string]any{
		"cpu":         map[string]any{"model": f.CPU.Model, "cores": f.CPU.PhysicalCores, "threads": f.CPU.LogicalCores},
		"memoryBytes": f.MemoryTotalBytes,
		"disks":       disks,
		"network":     network,
		"os":          map[string]any{"name": name, "version": f.Host.PlatformVersion, "kernel": f.Host.KernelVersion, "arch": f.Host.Arch},
	}
}

func statInput(s sal.Stats) map[string]any {
	disks := []map[string]any{}
	for _, d := range s.Disks {
		disks = append(disks, map[string]any{"mountpoint": d.Mountpoint, "usedBytes": d.UsedBytes, "freeBytes": d.FreeBytes})
	}
	network := []map[string]any{}
	for _, n := range s.Net {
		network = append(network, map[string]any{"name": n.Name, "bytesReceived": n.BytesRecv, "bytesSent": n.BytesSent,
			"packetsReceived": n.PacketsRecv, "packetsSent": n.PacketsSent, "errorsIn": n.ErrorsIn, "errorsOut": n.ErrorsOut})
	}
	return map[string]any{
		"time": s.Time.UTC().Format(time.RFC3339Nano), "cpuPercent": s.CPUPercent,
		"memoryUsedBytes": s.MemoryUsedBytes, "memoryAvailableBytes": s.MemoryAvailableBytes, "swapUsedBytes": s.SwapUsedBytes,
		"load1": s.Load.Load1, "load5": s.Load.Load5, "load15": s.Load.Load15, "disks": disks, "network": network,
	}
}
