package artifact

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/rocone/rocone/pkg/shard"
)

// metaShard reads the optional shard key of an artifact's metadata (package shard): the
// whole when absent.
func metaShard(name string, md arrow.Metadata) (shard.Spec, error) {
	v, ok := md.GetValue(shard.MetaKey)
	return shard.FromMeta(name, v, ok)
}

// CheckWhole refuses a queries file that is one shard of a `sample generate --shard` run
// (name names it): training, embedding or ranking it would silently use a fraction of the
// queries. Every stage that uses queries calls it; `sample merge` and `sample stats` read
// shards on purpose and do not.
func (m QueriesMeta) CheckWhole(name string) error {
	if m.Shard.Whole() {
		return nil
	}
	return fmt.Errorf("%s is shard %s of a sampling run, not a whole queries file: join the %d shards with sample merge first",
		name, m.Shard, m.Shard.Count)
}
