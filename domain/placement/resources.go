// Package placement decides which node a resource goes on: the capacity a
// node offers and a resource asks for, and the scheduler that filters the
// nodes, then scores those left (see Schedule). It is pure: the caller
// brings the nodes as they are, and records the choice as events.
package placement

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"cairn/domain"
	"cairn/domain/node"
)

// Resources is an amount of the three things the scheduler counts.
type Resources struct {
	// CPUMillis is thousandths of a CPU (a hardware thread): 500 is half.
	CPUMillis   int64 `json:"cpuMillis,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	DiskBytes   int64 `json:"diskBytes,omitempty"`
}

// IsZero reports whether nothing is asked for.
func (r Resources) IsZero() bool { return r == Resources{} }

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{r.CPUMillis + o.CPUMillis, r.MemoryBytes + o.MemoryBytes, r.DiskBytes + o.DiskBytes}
}

// Sub returns r - o, never below zero in any dimension.
func (r Resources) Sub(o Resources) Resources {
	return Resources{max(r.CPUMillis-o.CPUMillis, 0), max(r.MemoryBytes-o.MemoryBytes, 0), max(r.DiskBytes-o.DiskBytes, 0)}
}

// Fits reports whether r fits within limit in every dimension.
func (r Resources) Fits(limit Resources) bool {
	return r.CPUMillis <= limit.CPUMillis && r.MemoryBytes <= limit.MemoryBytes && r.DiskBytes <= limit.DiskBytes
}

// Validate checks that no amount is negative.
func (r Resources) Validate(field string) error {
	for _, d := range []struct {
		name string
		v    int64
	}{{"cpu", r.CPUMillis}, {"memory", r.MemoryBytes}, {"disk", r.DiskBytes}} {
		if d.v < 0 {
			return domain.Invalid(field+"."+d.name, "must not be negative")
		}
	}
	return nil
}

func (r Resources) String() string {
	var parts []string
	if r.CPUMillis > 0 {
		parts = append(parts, FormatCPU(r.CPUMillis)+" CPU")
	}
	if r.MemoryBytes > 0 {
		parts = append(parts, FormatBytes(r.MemoryBytes)+" memory")
	}
	if r.DiskBytes > 0 {
		parts = append(parts, FormatBytes(r.DiskBytes)+" disk")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Allocatable is what a node offers: its facts less the reserve.
func Allocatable(f node.Facts, reserve Resources) Resources {
	threads := f.CPU.Threads
	if threads == 0 {
		threads = f.CPU.Cores
	}
	total := Resources{CPUMillis: int64(threads) * 1000, MemoryBytes: clampInt64(f.MemoryBytes), DiskBytes: clampInt64(rootDisk(f.Disks))}
	return total.Sub(reserve)
}

// rootDisk is the size of the filesystem mounted at /, or of the largest
// one when none is.
func rootDisk(disks []node.Disk) uint64 {
	var largest uint64
	for _, d := range disks {
		if d.Mountpoint == "/" {
			return d.SizeBytes
		}
		largest = max(largest, d.SizeBytes)
	}
	return largest
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// ParseCPU reads a CPU amount: a number of CPUs (2, 0.5, "1.5") or
// thousandths ("500m").
func ParseCPU(raw json.RawMessage) (int64, error) {
	s, isNum, err := scalar(raw)
	if err != nil {
		return 0, err
	}
	if !isNum && strings.HasSuffix(s, "m") {
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "m"), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a CPU amount: use a number of CPUs (0.5) or thousandths (500m)", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a CPU amount: use a number of CPUs (0.5) or thousandths (500m)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is negative", s)
	}
	if f > 1e12 {
		return 0, fmt.Errorf("%s CPUs is more than any node has", s)
	}
	return int64(math.Round(f * 1000)), nil
}

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	{"B", 1},
}

// ParseBytes reads a size: a number of bytes, or a number with a unit
// (512Mi, 4GiB, 1G, 1.5Ti).
func ParseBytes(raw json.RawMessage) (int64, error) {
	s, _, err := scalar(raw)
	if err != nil {
		return 0, err
	}
	num, mult := s, 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size: use bytes or a number with a unit (512Mi, 4Gi, 1G)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is negative", s)
	}
	v := f * mult
	if v > 1<<62 {
		return 0, fmt.Errorf("%s is more than any node has", s)
	}
	return int64(math.Round(v)), nil
}

// scalar reads a JSON number or string, trimmed.
func scalar(raw json.RawMessage) (s string, isNumber bool, err error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false, fmt.Errorf("is not a number or a string")
	}
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true, nil
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return s, false, nil
		}
		return "", false, fmt.Errorf("is empty")
	}
	return "", false, fmt.Errorf("is not a number or a string")
}

// FormatBytes writes a size with a binary unit: "4 GiB", "512 MiB".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) + " " + units[i]
}

// FormatCPU writes thousandths of a CPU as CPUs: "0.5", "2".
func FormatCPU(millis int64) string {
	return strconv.FormatFloat(float64(millis)/1000, 'f', -1, 64)
}
