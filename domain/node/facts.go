package node

import (
	"fmt"
	"slices"

	"cairn/domain"
)

// Facts is what an agent reports about its node through the SAL.
type Facts struct {
	CPU         CPU         `json:"cpu"`
	MemoryBytes uint64      `json:"memoryBytes"`
	Disks       []Disk      `json:"disks"`
	Network     []Interface `json:"network"`
	OS          OS          `json:"os"`
}

// CPU describes the node's processors.
type CPU struct {
	Model   string `json:"model"`
	Cores   int    `json:"cores"`
	Threads int    `json:"threads"`
}

// Disk is one mounted filesystem.
type Disk struct {
	Device     string `json:"device"`
	Mountpoint string `json:"mountpoint"`
	Filesystem string `json:"filesystem"`
	SizeBytes  uint64 `json:"sizeBytes"`
}

// Interface is one network interface.
type Interface struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac"`
	Addresses []string `json:"addresses"`
	MTU       int      `json:"mtu"`
}

// OS describes the operating system.
type OS struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kernel  string `json:"kernel"`
	Arch    string `json:"arch"`
}

// Equal reports whether two fact sets describe the same node; an empty list
// and a missing one are the same.
func (f Facts) Equal(o Facts) bool {
	return f.CPU == o.CPU && f.MemoryBytes == o.MemoryBytes && f.OS == o.OS &&
		slices.Equal(f.Disks, o.Disks) &&
		slices.EqualFunc(f.Network, o.Network, func(a, b Interface) bool {
			return a.Name == b.Name && a.MAC == b.MAC && a.MTU == b.MTU && slices.Equal(a.Addresses, b.Addresses)
		})
}

// clone copies the facts so that state never shares slices with an event.
func (f Facts) clone() Facts {
	f.Disks = slices.Clone(f.Disks)
	f.Network = slices.Clone(f.Network)
	for i := range f.Network {
		f.Network[i].Addresses = slices.Clone(f.Network[i].Addresses)
	}
	return f
}

func validateFacts(f Facts) error {
	switch {
	case f.CPU.Cores < 0:
		return &domain.ValidationError{Field: "facts.cpu.cores", Reason: "must not be negative"}
	case f.CPU.Threads < 0:
		return &domain.ValidationError{Field: "facts.cpu.threads", Reason: "must not be negative"}
	}
	for i, n := range f.Network {
		if n.Name == "" {
			return &domain.ValidationError{Field: fmt.Sprintf("facts.network[%d].name", i), Reason: "is required"}
		}
		if n.MTU < 0 {
			return &domain.ValidationError{Field: fmt.Sprintf("facts.network[%d].mtu", i), Reason: "must not be negative"}
		}
	}
	for i, d := range f.Disks {
		if d.Mountpoint == "" {
			return &domain.ValidationError{Field: fmt.Sprintf("facts.disks[%d].mountpoint", i), Reason: "is required"}
		}
	}
	return nil
}
