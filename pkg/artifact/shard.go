package artifact

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/rocone/rocone/pkg/shard"
)

// metaShard reads the optional shard key of an artifact's metadata (package shard): the
// whole when absent.
func metaShard(name string, md arrow.Metadata) (shard.Spec, error) {
	v, ok := md.GetValue(shard.MetaKey)
	return shard.FromMeta(name, v, ok)
}
