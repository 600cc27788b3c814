package readmodel

import (
	"cairn/domain/node"
	"cairn/plugins/agent"
	"context"
)

// AgentNodes implements the agent plugin's NodeLister over the nodes read
// model: online nodes that are not cordoned.
type AgentNodes struct {
	Reader *Reader
}

var _ agent.NodeLister = AgentNodes{}

// Candidates implements agent.NodeLister.
func (n AgentNodes) Candidates(ctx context.Context) ([]agent.Node, error) {
	var out []agent.Node
	page := Page{First: 500}
	for {
		conn, err := n.Reader.ListNodes(ctx, NodeFilter{Status: []node.Status{node.StatusOnline}}, page)
		if err != nil {
			return nil, err
		}
		for _, e := range conn.Edges {
			if e.Node.Cordoned {
				continue
			}
			out = append(out, agent.Node{ID: e.Node.ID, Location: e.Node.LocationID, Labels: e.Node.Labels})
		}
		if !conn.PageInfo.HasNextPage {
			return out, nil
		}
		page.After = conn.PageInfo.EndCursor
	}
}
