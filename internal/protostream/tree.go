package protostream

import (
	"sort"

	"github.com/google/uuid"
)

// PublishAnswered tells every connection of a thread that a run resuming
// these interrupts was requested (input.answered on the root namespace).
func (h *Hub) PublishAnswered(threadID uuid.UUID, interruptIDs []string) {
	h.publish(threadID, out{method: "input.answered", ns: []string{}, data: map[string]any{"interrupt_ids": interruptIDs}})
}

// TreeNode is one namespace of agent.getTree.
type TreeNode struct {
	Namespace []string    `json:"namespace"`
	Status    string      `json:"status"`
	GraphName string      `json:"graph_name"`
	Children  []*TreeNode `json:"children,omitempty"`
	// RunID is the run whose lifecycle event set the root's status ("" when
	// the stream announced none); it is not part of the protocol.
	RunID string `json:"-"`
}

// Tree returns the namespaces the thread's stream has announced, as a
// tree under the root, each with its latest lifecycle status.
func (h *Hub) Tree(threadID uuid.UUID) *TreeNode {
	root := &TreeNode{Namespace: []string{}, Status: "completed"}
	f := h.feed(threadID)
	if f == nil {
		return root
	}
	f.mu.Lock()
	states := make([]nsState, 0, len(f.tree))
	for _, st := range f.tree {
		states = append(states, st)
	}
	f.mu.Unlock()
	sort.Slice(states, func(i, j int) bool { return len(states[i].Namespace) < len(states[j].Namespace) })
	nodes := map[string]*TreeNode{"": root}
	for _, st := range states {
		n := &TreeNode{Namespace: st.Namespace, Status: st.Status, GraphName: st.Graph}
		if len(st.Namespace) == 0 {
			root.Status, root.GraphName, root.RunID = st.Status, st.Graph, st.RunID
			continue
		}
		parent := nodes[nsKey(st.Namespace[:len(st.Namespace)-1])]
		if parent == nil {
			parent = root
		}
		parent.Children = append(parent.Children, n)
		nodes[nsKey(st.Namespace)] = n
	}
	return root
}

// Connections returns how many connections follow a thread's stream now.
func (h *Hub) Connections(threadID uuid.UUID) int {
	if f := h.feed(threadID); f != nil {
		return f.log.Cursors()
	}
	return 0
}
