package readmodel

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/domain/node"
	"cairn/domain/placement"
)

// Capacity is what a node offers the scheduler and what it holds.
type Capacity struct {
	Allocatable placement.Resources
	Allocated   placement.Resources
	// Reserve is the node's own reserve; nil when it inherits its
	// location's (LocationReserve).
	Reserve         *placement.Resources
	LocationReserve placement.Resources
	Allocations     int
}

// Fill is the largest share of any dimension that is allocated, in [0, 1]
// (beyond 1 when the node shrank under its allocations).
func (c Capacity) Fill() float64 {
	var f float64
	for _, d := range [][2]int64{
		{c.Allocated.CPUMillis, c.Allocatable.CPUMillis},
		{c.Allocated.MemoryBytes, c.Allocatable.MemoryBytes},
		{c.Allocated.DiskBytes, c.Allocatable.DiskBytes},
	} {
		if d[1] > 0 {
			f = max(f, float64(d[0])/float64(d[1]))
		} else if d[0] > 0 {
			f = max(f, 1)
		}
	}
	return f
}

// NodeCapacities returns the capacity of each node, by id.
func (r *Reader) NodeCapacities(ctx context.Context, nodes []*Node) (map[string]Capacity, error) {
	out := make(map[string]Capacity, len(nodes))
	if len(nodes) == 0 {
		return out, nil
	}
	ids := make([]string, 0, len(nodes))
	locs := []string{}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		ids = append(ids, n.ID)
		if n.LocationID != "" && !slices.Contains(locs, n.LocationID) {
			locs = append(locs, n.LocationID)
		}
	}
	nodeRes, locRes, err := r.reserves(ctx, ids, locs)
	if err != nil {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT node_id, count(*), sum(cpu_millis), sum(memory_bytes), sum(disk_bytes)
		FROM `+r.table("allocations")+` WHERE node_id = ANY($1) GROUP BY node_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read allocations: %w", err)
	}
	allocated := map[string]Capacity{}
	err = forEachRow(rows, func(rows pgx.Rows) error {
		var id string
		var c Capacity
		if err := rows.Scan(&id, &c.Allocations, &c.Allocated.CPUMillis, &c.Allocated.MemoryBytes, &c.Allocated.DiskBytes); err != nil {
			return err
		}
		allocated[id] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read allocations: %w", err)
	}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		c := allocated[n.ID]
		c.LocationReserve = locRes[n.LocationID]
		reserve := c.LocationReserve
		if own, ok := nodeRes[n.ID]; ok {
			c.Reserve = &own
			reserve = own
		}
		if n.Facts != nil {
			c.Allocatable = placement.Allocatable(*n.Facts, reserve)
		}
		out[n.ID] = c
	}
	return out, nil
}

// reserves reads the reserves set on nodes and on locations.
func (r *Reader) reserves(ctx context.Context, nodeIDs, locationIDs []string) (map[string]placement.Resources, map[string]placement.Resources, error) {
	byNode, byLoc := map[string]placement.Resources{}, map[string]placement.Resources{}
	rows, err := r.db.Query(ctx, `SELECT kind, id, cpu_millis, memory_bytes, disk_bytes FROM `+r.table("reserves")+`
		WHERE kind = 'node' AND id = ANY($1) OR kind = 'location' AND id = ANY($2)`, nodeIDs, locationIDs)
	if err != nil {
		return nil, nil, fmt.Errorf("read reserves: %w", err)
	}
	err = forEachRow(rows, func(rows pgx.Rows) error {
		var kind, id string
		var res placement.Resources
		if err := rows.Scan(&kind, &id, &res.CPUMillis, &res.MemoryBytes, &res.DiskBytes); err != nil {
			return err
		}
		if kind == "node" {
			byNode[id] = res
		} else {
			byLoc[id] = res
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read reserves: %w", err)
	}
	return byNode, byLoc, nil
}

func forEachRow(rows pgx.Rows, each func(pgx.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// NodeFill is one node of a location with its capacity.
type NodeFill struct {
	Node     Node
	Capacity Capacity
}

// Allocation is one resource's share of a node.
type Allocation struct {
	ResourceID   string
	ResourceType string
	ServiceID    string
	ServiceName  string
	NodeID       string
	Hostname     string
	Request      placement.Resources
	AllocatedAt  time.Time
}

// LocationCapacity sums a location's nodes.
type LocationCapacity struct {
	Allocatable placement.Resources
	Allocated   placement.Resources
	Reserve     placement.Resources
	Nodes       int
	// Schedulable counts the nodes that take new work.
	Schedulable int
	// Fullest lists its nodes by fill, fullest first (at most limit).
	Fullest []NodeFill
	// Running lists what is allocated there (at most limit), newest first,
	// and RunningTotal counts all of it.
	Running      []Allocation
	RunningTotal int
}

// LocationCapacity reads a location's capacity, its nodes by fill and what
// runs there, each list cut at limit.
func (r *Reader) LocationCapacity(ctx context.Context, locationID string, limit int) (LocationCapacity, error) {
	var out LocationCapacity
	var nodes []*Node
	page := Page{First: 500}
	for {
		conn, err := r.ListNodes(ctx, NodeFilter{LocationID: locationID}, page)
		if err != nil {
			return out, err
		}
		for i := range conn.Edges {
			if conn.Edges[i].Node.Status != node.StatusDecommissioned {
				nodes = append(nodes, &conn.Edges[i].Node)
			}
		}
		if !conn.PageInfo.HasNextPage {
			break
		}
		page.After = conn.PageInfo.EndCursor
	}
	caps, err := r.NodeCapacities(ctx, nodes)
	if err != nil {
		return out, err
	}
	_, locRes, err := r.reserves(ctx, nil, []string{locationID})
	if err != nil {
		return out, err
	}
	out.Reserve = locRes[locationID]
	out.Nodes = len(nodes)
	fills := make([]NodeFill, 0, len(nodes))
	for _, n := range nodes {
		c := caps[n.ID]
		out.Allocatable = out.Allocatable.Add(c.Allocatable)
		out.Allocated = out.Allocated.Add(c.Allocated)
		if n.Status == node.StatusOnline && !n.Cordoned {
			out.Schedulable++
		}
		fills = append(fills, NodeFill{Node: *n, Capacity: c})
	}
	slices.SortStableFunc(fills, func(a, b NodeFill) int {
		return cmp.Or(cmp.Compare(b.Capacity.Fill(), a.Capacity.Fill()), cmp.Compare(a.Node.Hostname, b.Node.Hostname))
	})
	out.Fullest = fills[:min(limit, len(fills))]

	err = r.db.QueryRow(ctx, `SELECT count(*) FROM `+r.table("allocations")+` a JOIN `+r.table("nodes")+` n ON n.id = a.node_id
		WHERE n.location_id = $1`, locationID).Scan(&out.RunningTotal)
	if err != nil {
		return out, fmt.Errorf("count allocations: %w", err)
	}
	rows, err := r.db.Query(ctx, `SELECT a.resource_id, coalesce(res.type, ''), coalesce(a.service_id, ''), coalesce(s.name, ''), a.node_id, n.hostname,
			a.cpu_millis, a.memory_bytes, a.disk_bytes, a.allocated_at
		FROM `+r.table("allocations")+` a JOIN `+r.table("nodes")+` n ON n.id = a.node_id
		LEFT JOIN `+r.table("resources")+` res ON res.id = a.resource_id
		LEFT JOIN `+r.table("services")+` s ON s.id = a.service_id
		WHERE n.location_id = $1 ORDER BY a.allocated_at DESC, a.resource_id LIMIT $2`, locationID, limit)
	if err != nil {
		return out, fmt.Errorf("read allocations: %w", err)
	}
	err = forEachRow(rows, func(rows pgx.Rows) error {
		var a Allocation
		if err := rows.Scan(&a.ResourceID, &a.ResourceType, &a.ServiceID, &a.ServiceName, &a.NodeID, &a.Hostname,
			&a.Request.CPUMillis, &a.Request.MemoryBytes, &a.Request.DiskBytes, &a.AllocatedAt); err != nil {
			return err
		}
		out.Running = append(out.Running, a)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("read allocations: %w", err)
	}
	return out, nil
}
