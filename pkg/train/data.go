package train

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// Pool names.
const (
	PoolPath  = "path"
	PoolOther = "other"
)

// Streams of the PCG generators, all seeded with Config.Seed, so that each consumer has
// its own sequence.
const (
	streamDropout = 0xd209_0000_0000_0001
	streamSampler = 0x5a3b_0000_0000_0000 // + pool index
	streamShuffle = 0x5f1e_0000_0000_0000 // mixed with the pool index and the epoch
)

// trainSet is the training queries: grounded queries, sorted answer sets and subsampling
// weights (docs/queries.md §4).
type trainSet struct {
	queries     []query.Grounded
	answers     [][]int32 // sorted, distinct
	weights     []float64 // (4 + |answers|)^(−1/2)
	numEntities int
	fingerprint string
}

// IsPath reports whether a structure belongs to the path pool: a plain chain of
// projections from one anchor (1p, 2p, 3p and any longer chain). Everything else, a
// structure with an intersection, a negation or a union, goes to the other pool.
func IsPath(s *query.Structure) bool {
	r := s.Root
	if r.Kind != query.Chain || r.Base.Kind != query.Anchor {
		return false
	}
	for _, op := range r.Ops {
		if op.Kind != query.Project {
			return false
		}
	}
	return true
}

// newTrainSet checks the train queries against the KG's sizes and builds the set and the
// two pools' members (indices into the set, in file order).
func newTrainSet(rows []artifact.Query, numEntities, numRelations int) (*trainSet, [2][]int32, error) {
	var pools [2][]int32
	ts := &trainSet{
		queries:     make([]query.Grounded, len(rows)),
		answers:     make([][]int32, len(rows)),
		weights:     make([]float64, len(rows)),
		numEntities: numEntities,
	}
	var structures query.Cache
	h := fnv.New64a()
	var buf []byte
	for i := range rows {
		r := &rows[i]
		s, err := structures.Parse(r.Structure)
		if err != nil {
			return nil, pools, fmt.Errorf("train query %d: %w", r.ID, err)
		}
		g := query.Grounded{Structure: s, Anchors: r.Anchors, Relations: r.Relations}
		if err := g.Validate(numEntities, numRelations); err != nil {
			return nil, pools, fmt.Errorf("train query %d (%s): %w", r.ID, r.Type, err)
		}
		ans := r.Hard
		if !slices.IsSorted(ans) {
			ans = slices.Clone(ans)
			slices.Sort(ans)
		}
		ans = slices.Compact(ans)
		switch {
		case len(ans) == 0:
			return nil, pools, fmt.Errorf("train query %d (%s) has no answers", r.ID, r.Type)
		case len(ans) >= numEntities:
			return nil, pools, fmt.Errorf("train query %d (%s): every entity is an answer, so no negative can be drawn", r.ID, r.Type)
		}
		for _, a := range []int32{ans[0], ans[len(ans)-1]} {
			if a < 0 || int(a) >= numEntities {
				return nil, pools, fmt.Errorf("train query %d (%s): answer %d out of range [0,%d)", r.ID, r.Type, a, numEntities)
			}
		}
		ts.queries[i] = g
		ts.answers[i] = ans
		ts.weights[i] = 1 / math.Sqrt(4+float64(len(ans)))
		p := 1
		if IsPath(s) {
			p = 0
		}
		pools[p] = append(pools[p], int32(i))

		buf = binary.LittleEndian.AppendUint64(buf[:0], uint64(r.ID))
		buf = append(buf, r.Structure...)
		for _, l := range [][]int32{r.Anchors, r.Relations, ans} {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(len(l)))
			for _, x := range l {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(x))
			}
		}
		h.Write(buf)
	}
	ts.fingerprint = fmt.Sprintf("%016x", h.Sum64())
	return ts, pools, nil
}

// positive draws one answer uniformly (docs/queries.md §4: redrawn at every visit).
func positive(rng *rand.Rand, answers []int32) int32 {
	return answers[rng.IntN(len(answers))]
}

// isAnswer reports whether e is in the sorted answers.
func isAnswer(answers []int32, e int32) bool {
	_, found := slices.BinarySearch(answers, e)
	return found
}

// answerMarks is a bitset over the entities, set for one query's answers while its
// negatives are drawn: a draw is tested in O(1) instead of by a binary search.
type answerMarks []uint64

func newAnswerMarks(n int) answerMarks { return make(answerMarks, (n+63)/64) }

// sampleNegatives writes k negatives into dst[:k] as the reference's dataloader draws
// them (docs/queries.md §4): rounds of 2k entities drawn uniformly from [0, n), of which those
// that are answers are dropped, until k are kept; the surplus of the last round is
// discarded. A negative may repeat. It returns the number of entities drawn, always a
// multiple of 2k. answers must be sorted and leave at least one entity out. marks, if not
// nil, is a clear answerMarks of n entities, used (and left clear) to test the draws;
// nil tests them by binary search, with the same result.
func sampleNegatives(rng *rand.Rand, n int, answers []int32, k int, dst []int32, marks answerMarks) (drawn int) {
	if marks != nil {
		for _, a := range answers {
			marks[a>>6] |= 1 << (a & 63)
		}
	}
	kept := 0
	for kept < k {
		for j := 0; j < 2*k; j++ {
			e := int32(rng.IntN(n))
			if kept == k {
				continue // the round's surplus: drawn, not tested
			}
			var answer bool
			if marks != nil {
				answer = marks[e>>6]&(1<<(e&63)) != 0
			} else {
				answer = isAnswer(answers, e)
			}
			if !answer {
				dst[kept] = e
				kept++
			}
		}
		drawn += 2 * k
	}
	if marks != nil {
		for _, a := range answers {
			marks[a>>6] = 0 // the words hold no other bits
		}
	}
	return drawn
}

// pool is one of the two training pools with its loader: a shuffled order of its
// members that is reshuffled at every epoch and cycles forever, as a PyTorch DataLoader
// with shuffle=True wrapped in a cycling iterator. Batches do not straddle epochs: the
// last batch of an epoch holds what is left (drop_last=False). The positive and the
// negatives of each query are drawn from the pool's sampler at every visit.
type pool struct {
	name    string
	index   int     // 0 path, 1 other
	members []int32 // indices into the train set, in file order
	seed    uint64

	epoch uint64  // epochs started before the current one
	pos   int     // next position in perm
	perm  []int32 // the current epoch's order; nil until needed

	src *rand.PCG // sampler state
	rng *rand.Rand

	marks answerMarks // sampleNegatives' scratch, this pool's own (a sampler's pool runs on its goroutine)
}

func newPool(name string, index int, members []int32, seed uint64) *pool {
	src := rand.NewPCG(seed, streamSampler+uint64(index))
	return &pool{name: name, index: index, members: members, seed: seed, src: src, rng: rand.New(src)}
}

// permutation returns the order of the given epoch: the members shuffled by a generator
// that depends on the seed, the pool and the epoch only, so that a resumed loader
// rebuilds it from (epoch, pos).
func (p *pool) permutation(epoch uint64) []int32 {
	perm := slices.Clone(p.members)
	r := rand.New(rand.NewPCG(p.seed^streamShuffle, uint64(p.index)<<56^epoch))
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	return perm
}

// fill samples the pool's next batch into b (its buffers reused): at most size queries,
// with a positive, k negatives and a weight each.
func (p *pool) fill(ts *trainSet, size, k int, b *model.Batch) {
	if p.marks == nil {
		p.marks = newAnswerMarks(ts.numEntities)
	}
	if p.perm == nil {
		p.perm = p.permutation(p.epoch)
	}
	end := min(p.pos+size, len(p.perm))
	ids := p.perm[p.pos:end]
	p.pos = end
	if p.pos == len(p.perm) {
		p.epoch++
		p.pos = 0
		p.perm = nil
	}

	n := len(ids)
	b.NumNegative = k
	b.Queries = b.Queries[:0]
	b.Positive = slices.Grow(b.Positive[:0], n)[:n]
	b.Negative = slices.Grow(b.Negative[:0], n*k)[:n*k]
	b.Weight = slices.Grow(b.Weight[:0], n)[:n]
	for i, q := range ids {
		b.Queries = append(b.Queries, ts.queries[q])
		ans := ts.answers[q]
		b.Positive[i] = positive(p.rng, ans)
		sampleNegatives(p.rng, ts.numEntities, ans, k, b.Negative[i*k:(i+1)*k], p.marks)
		b.Weight[i] = ts.weights[q]
	}
}

// cursor is where a pool's loader stands: what a checkpoint saves of it.
type cursor struct {
	epoch uint64
	pos   int
	src   rand.PCG
}

func (p *pool) cursor() cursor { return cursor{p.epoch, p.pos, *p.src} }

// seek moves the loader to c. The epoch's order is rebuilt when next needed.
func (p *pool) seek(c cursor) {
	if c.epoch != p.epoch {
		p.perm = nil
	}
	p.epoch, p.pos, *p.src = c.epoch, c.pos, c.src
}

// clone is a copy of the pool at its cursor, with its own generator and scratch, to sample
// ahead on another goroutine (sampler).
func (p *pool) clone() *pool {
	c := newPool(p.name, p.index, p.members, p.seed)
	c.seek(p.cursor())
	return c
}

// loaderState is a pool's loader in a checkpoint.
type loaderState struct {
	Queries int    `json:"queries"` // members, to check the train file
	Epoch   uint64 `json:"epoch"`
	Pos     int    `json:"pos"`
	RNG     []byte `json:"rng"` // the sampler's PCG state
}

func (p *pool) state() loaderState {
	b, err := p.src.MarshalBinary()
	if err != nil {
		panic(err) // PCG never fails
	}
	return loaderState{Queries: len(p.members), Epoch: p.epoch, Pos: p.pos, RNG: b}
}

func (p *pool) restore(s loaderState) error {
	if s.Queries != len(p.members) {
		return fmt.Errorf("the %s pool has %d queries, the checkpoint's had %d", p.name, len(p.members), s.Queries)
	}
	if s.Pos < 0 || (s.Pos >= len(p.members) && len(p.members) > 0) {
		return fmt.Errorf("the %s pool's loader position %d is out of range", p.name, s.Pos)
	}
	if err := p.src.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("the %s pool's sampler state: %w", p.name, err)
	}
	p.epoch, p.pos, p.perm = s.Epoch, s.Pos, nil
	return nil
}
