#!/usr/bin/env node
// check.mjs reads an Arrow IPC file or stream with the JavaScript Arrow implementation
// and prints its schema (field names and types), its schema metadata and its row count.
// It is the check that the artifacts written by pkg/artifact are readable by a tool
// outside Go; pkg/artifact's tests run it when node and node_modules are present.
//
// Usage: node check.mjs [--head N] FILE    (FILE may be - for stdin)
//
// With --head N it also prints the first N rows, one JSON object a line, so that a test
// can compare values and not only the shape. Output, for a queries artifact:
//
//   fields:
//     id: Int64 not null
//     anchors: List<Int32> not null
//     ...
//   metadata:
//     artifact: queries
//     ...
//   rows: 3
//   batches: 1
//   row 0: {"id":0,"type":"1p","structure":"('e',('r',))","anchors":[0],...}

import { readFileSync } from 'node:fs';
import { tableFromIPC } from 'apache-arrow';

const usage = 'usage: node check.mjs [--head N] FILE (- for stdin)';
const args = process.argv.slice(2);
let head = 0;
if (args[0] === '--head') {
  head = Number(args[1]);
  args.splice(0, 2);
  if (!Number.isInteger(head) || head < 0) {
    console.error(usage);
    process.exit(2);
  }
}
if (args.length !== 1) {
  console.error(usage);
  process.exit(2);
}
const path = args[0];
const name = path === '-' ? 'stdin' : path;

let table;
try {
  // tableFromIPC tells the file format from the stream format itself.
  table = tableFromIPC(readFileSync(path === '-' ? 0 : path));
} catch (err) {
  console.error(`${name}: ${err.message}`);
  process.exit(1);
}
// Given no bytes (or none that hold a schema message), tableFromIPC returns an empty table
// without a word: every artifact has a schema with fields, so that is not one.
if (table.schema.fields.length === 0) {
  console.error(`${name}: not an Arrow IPC file or stream: no schema`);
  process.exit(1);
}

const out = ['fields:'];
for (const f of table.schema.fields) {
  out.push(`  ${f.name}: ${f.type}${f.nullable ? '' : ' not null'}`);
}
out.push('metadata:');
for (const [k, v] of table.schema.metadata) {
  out.push(`  ${k}: ${v}`);
}
out.push(`rows: ${table.numRows}`);
out.push(`batches: ${table.batches.length}`);
for (let i = 0; i < Math.min(head, table.numRows); i++) {
  out.push(`row ${i}: ${JSON.stringify(plain(table.get(i)))}`);
}
console.log(out.join('\n'));

// plain turns a row into JSON-ready values: an int64 is a BigInt, a list a Vector.
function plain(row) {
  const obj = {};
  for (const f of table.schema.fields) {
    obj[f.name] = value(row[f.name]);
  }
  return obj;
}

function value(v) {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : String(v);
  if (v !== null && typeof v === 'object' && typeof v.toArray === 'function') {
    return Array.from(v.toArray(), value);
  }
  return v;
}
