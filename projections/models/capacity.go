package models

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"cairn/domain/placement"
	"cairn/projections"
)

// Capacity keeps what the scheduler allocated: one row per allocation
// (read.allocations, so that a node's or a location's load is a sum and
// what runs in a location is a list), and the reserves operators set on
// nodes and locations (read.reserves).
type Capacity struct{}

func (Capacity) Name() string     { return "capacity" }
func (Capacity) Version() int     { return 1 }
func (Capacity) Tables() []string { return []string{"allocations", "reserves"} }
func (Capacity) Filter() projections.Filter {
	// Undecoded: the node and location events it does not read (one this
	// build cannot decode included) pass by; Apply refuses one of its own
	// that does not decode.
	return projections.Filter{StreamTypes: []string{"node", "location"}, Undecoded: true}
}

// capacityEvents are the events Capacity reads.
var capacityEvents = map[string]bool{
	placement.Allocated{}.EventType(): true, placement.Released{}.EventType(): true,
	placement.ReserveSet{}.EventType(): true, placement.LocationReserveSet{}.EventType(): true,
}

func (Capacity) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			resource_id  text PRIMARY KEY,
			node_id      text NOT NULL,
			service_id   text,
			cpu_millis   bigint NOT NULL,
			memory_bytes bigint NOT NULL,
			disk_bytes   bigint NOT NULL,
			allocated_at timestamptz NOT NULL
		);
		CREATE TABLE %[2]s (
			kind         text NOT NULL, -- node or location
			id           text NOT NULL,
			cpu_millis   bigint NOT NULL,
			memory_bytes bigint NOT NULL,
			disk_bytes   bigint NOT NULL,
			PRIMARY KEY (kind, id)
		);`, t.Table("allocations"), t.Table("reserves")))
	return err
}

func (Capacity) Index(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE INDEX ON %[1]s (node_id, resource_id);
		CREATE INDEX ON %[1]s (service_id);`, t.Table("allocations")))
	return err
}

func (Capacity) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	b := &pgx.Batch{}
	alloc, reserves := t.Table("allocations"), t.Table("reserves")
	setReserve := func(kind, id string, r placement.Resources) {
		b.Queue(`INSERT INTO `+reserves+` (kind, id, cpu_millis, memory_bytes, disk_bytes) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (kind, id) DO UPDATE SET cpu_millis = excluded.cpu_millis, memory_bytes = excluded.memory_bytes, disk_bytes = excluded.disk_bytes`,
			kind, id, r.CPUMillis, r.MemoryBytes, r.DiskBytes)
	}
	for _, e := range evs {
		if e.DecodeErr != nil && capacityEvents[e.Type] {
			return fmt.Errorf("%s at %s: %w", e.Type, e.Cursor(), e.DecodeErr)
		}
		switch d := e.Data.(type) {
		case placement.Allocated:
			b.Queue(`INSERT INTO `+alloc+` (resource_id, node_id, service_id, cpu_millis, memory_bytes, disk_bytes, allocated_at)
				VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6, $7) ON CONFLICT (resource_id) DO UPDATE SET node_id = excluded.node_id,
				service_id = excluded.service_id, cpu_millis = excluded.cpu_millis, memory_bytes = excluded.memory_bytes,
				disk_bytes = excluded.disk_bytes, allocated_at = excluded.allocated_at`,
				d.ResourceID, d.NodeID, d.ServiceID, d.Request.CPUMillis, d.Request.MemoryBytes, d.Request.DiskBytes, d.At)
		case placement.Released:
			b.Queue(`DELETE FROM `+alloc+` WHERE resource_id = $1 AND node_id = $2`, d.ResourceID, d.NodeID)
		case placement.ReserveSet:
			if d.Inherit {
				b.Queue(`DELETE FROM `+reserves+` WHERE kind = 'node' AND id = $1`, d.NodeID)
			} else {
				setReserve("node", d.NodeID, d.Reserve)
			}
		case placement.LocationReserveSet:
			setReserve("location", d.LocationID, d.Reserve)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}
