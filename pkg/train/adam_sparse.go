package train

import (
	"sync"
	"sync/atomic"

	"github.com/rocone/rocone/pkg/model"
)

// Sparse (lazy) Adam: train --adam sparse (Config.SparseAdam), off by default.
//
// Dense Adam (Adam.Update) moves every row of the entity and relation tables at every
// update: a row the batch did not touch has a zero gradient, but its moments decay and its
// parameters keep moving with the momentum left from earlier batches. That costs time and
// memory bandwidth in proportion to the number of entities, not to the batch: on a graph of
// millions of entities it dominates an update. Sparse Adam, as large-scale KG embedding
// systems do (PyTorch's torch.optim.SparseAdam, used with sparse embedding gradients),
// updates only the rows the batch touched:
//
//   - the tables (entity, relation.axis, relation.aperture, relation.shift): the rows in
//     the gradient's row sets (model.Grads.EntityRows and RelationRows, filled by the
//     backward pass's scatter as it writes each row, so they are found without looking at
//     the rows that were not touched) get exactly dense Adam's per-element update (the
//     same float32 operations, Adam.Update's m, v and p formulas), and every other row is
//     left bit-identical: parameters and both moments;
//   - every other tensor (the modulus, the intersection's and ConE's MLP weights) is dense
//     and updated exactly as by Update;
//   - the bias corrections 1−β1^t and 1−β2^t use the tensor's global step count t (every
//     update since the optimiser was created, Adam.tensorStep), not the number of times a
//     row was touched: SparseAdam's choice (its state['step'] counts the optimiser's steps).
//     A row first touched at update 100 thus takes a step of lr·(1/(1−β1^100))·m̂/…, much
//     smaller than a fresh dense Adam's first step.
//
// Where this differs from torch.optim.SparseAdam's arithmetic: SparseAdam writes the moment
// update as m + (1−β1)(g − m) and divides by √v + eps·√(1−β2^t) folded into the step size;
// here the touched rows use Adam's own formulas (β1·m + (1−β1)·g, √v/√(1−β2^t) + eps), so
// that a row touched at every update equals dense Adam bit for bit. The two are equal in
// exact arithmetic.
//
// It is a deviation from the paper's trajectory: the reference trains with dense Adam, so
// a sparse run's untouched rows do not coast on their momentum, and its curves differ.
// Rows touched at every update, and the dense tensors, follow dense Adam exactly
// (TestSparseAdamMatchesDense).

// tableTensor reports whether the named parameter tensor is one of the embedding tables
// whose touched rows the gradient records, and returns which row set holds them.
func tableTensor(name string) (entity, relation bool) {
	switch name {
	case "entity":
		return true, false
	case "relation.axis", "relation.aperture", "relation.shift":
		return false, true
	}
	return false, false
}

// TouchedRows lists, per tensor of params (model.Params.Tensors order), the rows an
// update's gradients g wrote to: the row sets for the tables, in ascending order (so that
// the update walks each table in memory order), and nil (every element) for the other
// tensors. It is UpdateRows' rows argument. Its cost is the batch's: sorting the touched
// rows, never a pass over the table.
func TouchedRows(params []model.Tensor[float32], g *model.Grads[float32]) [][]int32 {
	rows := make([][]int32, len(params))
	ent, rel := sortedRows(g.EntityRows.Rows), sortedRows(g.RelationRows.Rows)
	for i, p := range params {
		switch e, r := tableTensor(p.Name); {
		case e:
			rows[i] = ent
		case r:
			rows[i] = rel
		}
	}
	return rows
}

// sortedRows is a sorted copy of a row set's rows, never nil (nil means dense).
func sortedRows(r []int32) []int32 {
	out := append(make([]int32, 0, len(r)), r...)
	model.SortRows(out) // a radix sort: linear in the rows
	return out
}

// sparsePrefetchAhead is how many touched rows ahead of the one it updates sparse Adam
// prefetches a row's parameters, gradient and moments.
const sparsePrefetchAhead = 4

// adamUnit is one goroutine's share of a sparse update: a span of a dense tensor's
// elements, or a run of a table's touched rows.
type adamUnit struct {
	tensor int
	lo, hi int     // elements [lo, hi) of a dense tensor
	rows   []int32 // or these rows of a table
}

// UpdateRows is sparse Adam's update (see above): Update, except that a tensor i with
// rows[i] != nil has only those rows updated (rows of params[i].Cols elements; the list
// must not repeat a row), the others keeping their values and moments. The step count and
// per-tensor bookkeeping (DeferStart, Reach, Lag) are Update's. Like Update, the result
// does not depend on workers, and a *NonFiniteError names the first tensor (in order)
// that became NaN or infinite.
func (a *Adam) UpdateRows(params, grads []model.Tensor[float32], rows [][]int32, workers int) error {
	return a.updateRows(params, grads, rows, workers, false)
}

// UpdateRowsZero is UpdateRows, and it also zeroes the gradients it was given where they
// may be non-zero: every element of a tensor with rows[i] == nil and the rows rows[i] of
// the others, whether or not the tensor was updated (a tensor not started yet, see
// DeferStart, is zeroed too). With rows listing every row a backward pass wrote, the
// gradients are all zero afterwards, as model.Grads.Zero leaves them, but the row sets
// are the caller's to reset.
//
// Why: on a large graph the touched rows of the entity gradient (65,000 rows of 800 bytes
// at 1.5M entities and d=200, out of 1.2 GB) no longer sit in the caches once the update
// is done, so zeroing them afterwards reads each one from memory a second time; zeroed
// as each row is consumed, they are in the cache.
func (a *Adam) UpdateRowsZero(params, grads []model.Tensor[float32], rows [][]int32, workers int) error {
	return a.updateRows(params, grads, rows, workers, true)
}

func (a *Adam) updateRows(params, grads []model.Tensor[float32], rows [][]int32, workers int, zero bool) error {
	skip := a.Advance()
	cs := make([]adamScalars, len(params))
	var units []adamUnit
	total := 0
	for i, p := range params {
		if skip[i] {
			if zero {
				zeroRows(grads[i].Data, grads[i].Cols, rows[i])
			}
			continue
		}
		cs[i] = a.scalars(i)
		if rows[i] == nil {
			for lo := 0; lo < len(p.Data); lo += adamChunk {
				units = append(units, adamUnit{tensor: i, lo: lo, hi: min(lo+adamChunk, len(p.Data))})
			}
			total += len(p.Data)
			continue
		}
		per := max(1, adamChunk/max(p.Cols, 1))
		for lo := 0; lo < len(rows[i]); lo += per {
			units = append(units, adamUnit{tensor: i, rows: rows[i][lo:min(lo+per, len(rows[i]))]})
		}
		total += len(rows[i]) * p.Cols
	}
	bad := make([]*NonFiniteError, len(units))
	do := func(k int) {
		u := units[k]
		i, p, c := u.tensor, params[u.tensor], &cs[u.tensor]
		if u.rows == nil {
			if j := c.update(p.Data[u.lo:u.hi], grads[i].Data[u.lo:u.hi], a.M[i][u.lo:u.hi], a.V[i][u.lo:u.hi]); j >= 0 {
				bad[k] = &NonFiniteError{Tensor: p.Name, Index: u.lo + j, Value: p.Data[u.lo+j]}
			}
			if zero {
				clear(grads[i].Data[u.lo:u.hi])
			}
			return
		}
		// Runs of consecutive rows (TouchedRows sorts them) are updated as one span, so
		// that the vector loop is not cut at every row's end.
		d := p.Cols
		for a0 := 0; a0 < len(u.rows); {
			a1 := a0 + 1
			for a1 < len(u.rows) && u.rows[a1] == u.rows[a1-1]+1 {
				a1++
			}
			// The row some rows ahead, from memory (the rows are scattered over tables
			// far larger than the caches) while these are updated.
			if f := a0 + sparsePrefetchAhead; f < len(u.rows) {
				r := int(u.rows[f]) * d
				prefetch(p.Data[r : r+d])
				prefetch(grads[i].Data[r : r+d])
				prefetch(a.M[i][r : r+d])
				prefetch(a.V[i][r : r+d])
			}
			lo, hi := int(u.rows[a0])*d, int(u.rows[a1-1]+1)*d
			if j := c.update(p.Data[lo:hi], grads[i].Data[lo:hi], a.M[i][lo:hi], a.V[i][lo:hi]); j >= 0 && bad[k] == nil {
				bad[k] = &NonFiniteError{Tensor: p.Name, Index: lo + j, Value: p.Data[lo+j]}
			}
			if zero {
				clear(grads[i].Data[lo:hi]) // in the cache still
			}
			a0 = a1
		}
	}
	workers = max(1, min(workers, total/adamChunk, len(units)))
	if workers == 1 {
		for k := range units {
			do(k)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := int(next.Add(1) - 1); k < len(units); k = int(next.Add(1) - 1) {
					do(k)
				}
			}()
		}
		wg.Wait()
	}
	// Units are in tensor order, so the first bad unit names the first bad tensor.
	for _, e := range bad {
		if e != nil {
			return e
		}
	}
	return nil
}

// zeroRows zeroes the rows of g (rows of cols elements), or all of g when rows is nil.
func zeroRows(g []float32, cols int, rows []int32) {
	if rows == nil {
		clear(g)
		return
	}
	for _, r := range rows {
		clear(g[int(r)*cols : int(r+1)*cols])
	}
}
