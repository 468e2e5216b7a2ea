package kg

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// EntityDigest is a SHA-256 of the entity table: the number of entities and each name in
// id order, length-prefixed. Two KGs with the same counts but other entities get other
// digests, so a stage that names entity ids from a dataset folder (rank --top --data) can
// tell that the folder is the KG the model was trained on. It is empty when the dataset
// has no entity names: ids are then their own names and there is nothing to mix up.
func (d *Dataset) EntityDigest() string {
	if d.EntityNames == nil {
		return ""
	}
	h := sha256.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(len(d.EntityNames)))
	h.Write(buf[:])
	for _, n := range d.EntityNames {
		binary.LittleEndian.PutUint64(buf[:], uint64(len(n)))
		h.Write(buf[:])
		h.Write([]byte(n))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Digest is a SHA-256 of the KG's content: its entity and relation counts, its name
// tables (or that it has none), and the facts of each split (train, valid and test) as
// sets, sorted, so that the order of a file's lines does not matter. Unlike EntityDigest
// it exists for every KG, names or not: an id-only KG is its edges. Artifacts carry it
// (kg_digest) from the queries sampled on the KG to the model trained on them and what
// the model computes, so that a model is never used on queries of another KG that
// happens to have the same name and counts. Entity labels, for people, are not part of
// it.
func (d *Dataset) Digest() string {
	h := sha256.New()
	var buf []byte
	put := func(v uint64) { buf = binary.LittleEndian.AppendUint64(buf[:0], v); h.Write(buf) }
	names := func(ns []string) {
		if ns == nil {
			put(0)
			return
		}
		put(1)
		put(uint64(len(ns)))
		for _, n := range ns {
			put(uint64(len(n)))
			h.Write([]byte(n))
		}
	}
	h.Write([]byte("rocone kg v1\n"))
	put(uint64(d.NumEntities))
	put(uint64(d.NumRelations))
	names(d.EntityNames)
	names(d.RelationNames)
	for _, split := range [][]Triple{d.Train, d.Valid, d.Test} {
		ts := slices.Clone(split)
		slices.SortFunc(ts, func(a, b Triple) int {
			return cmp.Or(cmp.Compare(a.Head, b.Head), cmp.Compare(a.Relation, b.Relation), cmp.Compare(a.Tail, b.Tail))
		})
		put(uint64(len(ts)))
		buf = buf[:0]
		for _, t := range ts {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t.Head))
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t.Relation))
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t.Tail))
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}
