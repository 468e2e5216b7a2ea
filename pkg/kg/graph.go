package kg

import (
	"slices"
)

// Graph is a directed multi-relational graph in compressed sparse row form, grouped by
// head entity and then by relation. Relations come in forward/inverse pairs (2k, 2k+1) and
// every graph built from a Dataset holds both directions of each fact, so the edges that
// enter v through r are the edges that leave v through r^1: one CSR serves both directions.
//
// Memory: 4 bytes per edge (the tail) plus 8 bytes per distinct (head, relation) run and 4
// per entity; about 6.5 bytes per edge on FB15k-237.
type Graph struct {
	NumEntities  int
	NumRelations int
	nodeRun      []int32 // runs of entity h: nodeRun[h] .. nodeRun[h+1]
	runRel       []int32 // relation of each run
	runStart     []int32 // tails of run i: tails[runStart[i] .. runStart[i+1]]
	tails        []int32 // sorted within each run
}

// NewGraph builds the graph of the union of the given triple lists; duplicates collapse.
func NewGraph(numEntities, numRelations int, parts ...[]Triple) *Graph {
	// Count edges per head, place them, then sort each head's segment by (relation, tail).
	count := make([]int32, numEntities+1)
	total := 0
	for _, p := range parts {
		total += len(p)
		for _, t := range p {
			count[t.Head+1]++
		}
	}
	for i := 1; i <= numEntities; i++ {
		count[i] += count[i-1]
	}
	keys := make([]uint64, total) // relation<<32 | tail
	fill := slices.Clone(count[:numEntities])
	for _, p := range parts {
		for _, t := range p {
			keys[fill[t.Head]] = uint64(uint32(t.Relation))<<32 | uint64(uint32(t.Tail))
			fill[t.Head]++
		}
	}
	g := &Graph{NumEntities: numEntities, NumRelations: numRelations, nodeRun: make([]int32, numEntities+1)}
	g.tails = make([]int32, 0, total)
	for h := 0; h < numEntities; h++ {
		seg := keys[count[h]:count[h+1]]
		slices.Sort(seg)
		prev := ^uint64(0)
		for _, k := range seg {
			if k == prev {
				continue
			}
			rel := int32(k >> 32)
			if prev == ^uint64(0) || int32(prev>>32) != rel {
				g.runRel = append(g.runRel, rel)
				g.runStart = append(g.runStart, int32(len(g.tails)))
			}
			g.tails = append(g.tails, int32(uint32(k)))
			prev = k
		}
		g.nodeRun[h+1] = int32(len(g.runRel))
	}
	g.runStart = append(g.runStart, int32(len(g.tails)))
	g.tails = slices.Clip(g.tails)
	return g
}

// NumEdges is the number of distinct directed edges.
func (g *Graph) NumEdges() int { return len(g.tails) }

// NumRuns is the number of distinct (head, relation) pairs with an edge.
func (g *Graph) NumRuns() int { return len(g.runRel) }

// Out returns the sorted tails t of the edges (h, r, t). The slice aliases the graph.
func (g *Graph) Out(h, r int32) []int32 {
	lo, hi := int(g.nodeRun[h]), int(g.nodeRun[h+1])
	for lo < hi { // binary search for the run of r
		mid := int(uint(lo+hi) >> 1)
		if g.runRel[mid] < r {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < int(g.nodeRun[h+1]) && g.runRel[lo] == r {
		return g.tails[g.runStart[lo]:g.runStart[lo+1]]
	}
	return nil
}

// Runs returns the range [lo, hi) of run indices of head h, one per relation leaving h.
func (g *Graph) Runs(h int32) (lo, hi int) { return int(g.nodeRun[h]), int(g.nodeRun[h+1]) }

// Run returns the relation and the sorted tails of run i.
func (g *Graph) Run(i int) (rel int32, tails []int32) {
	return g.runRel[i], g.tails[g.runStart[i]:g.runStart[i+1]]
}

// HasEdges reports whether h has at least one edge (in a graph closed under inversion,
// leaving and entering are the same thing).
func (g *Graph) HasEdges(h int32) bool { return g.nodeRun[h+1] > g.nodeRun[h] }

// Bytes is the memory held by the adjacency arrays.
func (g *Graph) Bytes() int {
	return 4 * (len(g.nodeRun) + len(g.runRel) + len(g.runStart) + len(g.tails))
}
