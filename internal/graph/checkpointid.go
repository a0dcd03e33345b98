package graph

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/google/uuid"
)

// gregorianOffset is the number of 100-ns intervals from the UUID epoch
// (1582-10-15) to the Unix epoch.
const gregorianOffset = 0x01B21DD213814000

var lastTick struct {
	sync.Mutex
	t uint64
}

// NewCheckpointID returns a new checkpoint id: a UUIDv6 (RFC 9562) whose
// first 60 bits are its 100-ns timestamp, most significant first, as the
// ids LangGraph mints for its checkpoints (uuid6). So a thread's
// checkpoints sort, as bytes and as text, in the order they were made,
// whoever made them (this server or a graph worker), and every one sorts
// after the UUIDv7 ids earlier releases minted (a UUIDv6 of this century
// begins with 0x1f, a UUIDv7 with 0x01). Ids made by one process are
// strictly increasing: a timestamp that does not move forward is bumped
// past the last one. The clock sequence and node bits are random.
//
// (github.com/google/uuid's NewV6 writes the timestamp's 64-bit form and
// overwrites four of its bits with the version, so its ids neither sort
// as LangGraph's do nor in time order.)
func NewCheckpointID() uuid.UUID {
	now := uint64(time.Now().UnixNano()/100) + gregorianOffset
	lastTick.Lock()
	if now <= lastTick.t {
		now = lastTick.t + 1
	}
	lastTick.t = now
	lastTick.Unlock()
	var id uuid.UUID
	binary.BigEndian.PutUint32(id[0:], uint32(now>>28))
	binary.BigEndian.PutUint16(id[4:], uint16(now>>12))
	binary.BigEndian.PutUint16(id[6:], 0x6000|uint16(now&0x0fff))
	_, _ = rand.Read(id[8:]) // crypto/rand.Read never fails (Go 1.24+)
	id[8] = 0x80 | id[8]&0x3f
	return id
}
