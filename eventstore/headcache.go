package eventstore

import (
	"container/list"
	"sync"
)

// head is a stream's last committed version and hash.
type head struct {
	version int64
	hash    []byte
}

// headCache remembers stream heads this process committed or read, so an
// append can chain its hash without reading the stream first. It can only
// fall behind the database (versions only grow); a stale entry shows up as a
// unique violation and the append retries with fresh heads.
type headCache struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List
}

type headEntry struct {
	stream string
	head   head
}

func newHeadCache(max int) *headCache {
	return &headCache{max: max, items: map[string]*list.Element{}, order: list.New()}
}

func (c *headCache) get(stream string) (head, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[stream]
	if !ok {
		return head{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*headEntry).head, true
}

func (c *headCache) put(stream string, h head) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[stream]; ok {
		el.Value.(*headEntry).head = h
		c.order.MoveToFront(el)
		return
	}
	c.items[stream] = c.order.PushFront(&headEntry{stream: stream, head: h})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*headEntry).stream)
	}
}

func (c *headCache) forget(stream string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[stream]; ok {
		c.order.Remove(el)
		delete(c.items, stream)
	}
}
