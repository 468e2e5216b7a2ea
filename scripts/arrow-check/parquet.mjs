#!/usr/bin/env node
// parquet.mjs reads a Parquet file with hyparquet, a JavaScript Parquet reader that owes
// nothing to this project or to Arrow, and prints what it read, so that a test can check
// the files `embed export --format parquet` writes against the values they came from.
//
// Usage: node parquet.mjs FILE
//
// Output: one JSON object on stdout:
//   {"rows": N, "row_groups": G, "columns": ["id", "name", "axis", ...],
//    "metadata": {"model": "rocone", ...},      (the file's key-value metadata, ARROW:schema left out)
//    "data": [{"id": 0, "name": "ent0", "axis": [0.1, ...]}, ...]}
// Integers are printed as numbers (int64 values as decimal strings, which JSON numbers
// could round), floats as the shortest decimal of the value read.

import { readFileSync } from 'node:fs';
import { parquetMetadata, parquetReadObjects, parquetSchema } from 'hyparquet';

const args = process.argv.slice(2);
if (args.length !== 1) {
  console.error('usage: node parquet.mjs FILE');
  process.exit(2);
}
const path = args[0];
try {
  const buf = readFileSync(path);
  const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const meta = parquetMetadata(file);
  const columns = parquetSchema(meta).children.map((c) => c.element.name);
  const metadata = {};
  for (const kv of meta.key_value_metadata ?? []) {
    if (kv.key !== 'ARROW:schema') metadata[kv.key] = kv.value;
  }
  const data = await parquetReadObjects({ file });
  const replacer = (_, v) => (typeof v === 'bigint' ? v.toString() : v);
  process.stdout.write(JSON.stringify({ rows: Number(meta.num_rows), row_groups: meta.row_groups.length, columns, metadata, data }, replacer) + '\n');
} catch (err) {
  console.error(`${path}: ${err.message}`);
  process.exit(1);
}
