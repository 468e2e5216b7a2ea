// Package artifact reads and writes the Arrow IPC files that the pipeline stages pass to
// one another. Every artifact's layout is defined here and nowhere else, so a stage, a test
// or an outside tool (pyarrow, apache-arrow in JavaScript) sees one contract.
//
// # Files, streams and pipes
//
// A path names a file; the path "-" names stdout when writing and stdin when reading, so
// that stages compose in shell pipes (stage1 -o - | stage2 -i -).
//
// Files are written in the Arrow IPC file format; stdout, and outputs that package
// outfile writes in place rather than replaces (a device, a named pipe, /dev/fd/N or
// /dev/stdout), in the IPC stream format, because a reader of the file format needs to
// seek to its footer and pipes have none.
// Readers accept either format from either source, telling them apart by their first
// bytes: the magic "ARROW1" of the file format, or the continuation marker 0xFFFFFFFF with
// which a stream begins (streams from before Arrow 0.15, which lack it, are refused).
//
// Writes to a file are atomic (package outfile, shared with the plots). Rows go to a
// hidden temporary file in the destination's directory (.NAME.tmp-XXXX), which is renamed
// over the destination only when the writer is closed successfully; on any error, on
// Abort, or on SIGINT/SIGTERM, it is removed. A reader therefore never sees a partial
// artifact at a path, and a failed stage leaves any previous artifact in place. On a
// stream nothing can be taken back; instead an aborted stream ends without the
// end-of-stream marker, which readers here report as a truncated stream rather than
// accept as a short one.
//
// Readers reject an empty input, a truncated file or stream and an artifact of another kind
// or version with an error that names the path ("stdin" and "stdout" for "-"). A stream
// must end with its end-of-stream marker, which Arrow writers write when closed: without
// it, a stream cut between two batches would read as a complete, shorter one.
//
// # Schema metadata
//
// Every artifact carries two schema metadata keys: artifact, its kind ("queries", ...), and
// version, a decimal integer bumped whenever its columns change meaning. Readers check
// both, and check the column names and types exactly, in order. Further metadata keys are
// defined per kind; readers ignore keys they do not know.
//
// Every artifact also carries content_sha256, a SHA-256 of its content that its writer
// computes and every reader checks: in a file's schema, or in a stream's trailer, a last
// record batch of zero rows whose message metadata holds it (checksum.go). An artifact
// without one is refused. Artifacts from a model on carry its lineage, kg_digest and
// train_fingerprint (schema.go).
//
// # The queries artifact (artifact=queries, version=1)
//
// One row per grounded query, with exactly these columns in this order (none nullable):
//
//	id         int64         unique in the file, non-negative
//	type       utf8          1p 2p 3p 2i 3i ip pi 2u up 2in 3in inp pin pni 2u-DM up-DM, or custom
//	structure  utf8          the structure in nested-tuple notation, e.g. (('e',('r',)),('e',('r','n')))
//	anchors    list<int32>   anchor entity ids, in depth-first order of the structure
//	relations  list<int32>   relation ids, in depth-first order of the structure
//	easy       list<int32>   answers already entailed by the smaller graph (empty in train files)
//	hard       list<int32>   the answers to predict (train files: every answer on the train graph)
//
// and this schema metadata:
//
//	artifact       queries
//	version        1
//	split          train, valid or test
//	dataset        the dataset's name, e.g. FB15k-237
//	num_entities   number of entities; anchors, easy and hard lie in [0, num_entities)
//	num_relations  number of relations; relations lie in [0, num_relations)
//	kg_digest      kg.Dataset.Digest of the KG sampled ("" for queries not from a dataset)
//
// Writers and readers here both check every row: a non-negative id not seen before in the
// file, a type that names the row's structure (package query) with an anchor and a
// relation id for each of its slots, ids within num_entities and num_relations, easy and
// hard sorted ascending without repeats; an error names the path and the row (counted
// from 0).
//
// The list columns may use any name for their element field and may declare it nullable
// (pyarrow does), but must hold no nulls. Batches hold at most 16384 rows, fewer when
// their answer lists are long.
package artifact
