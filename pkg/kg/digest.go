package kg

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
