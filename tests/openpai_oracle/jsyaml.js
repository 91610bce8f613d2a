// js-yaml 3 from the npm registry (tests/openpai_oracle/npm, installed by .ci/provision-npm-peers.sh) as a peer: how
// the YAML reader OpenPAI's rest-server uses reads a text. Our code, not upstream's: it only calls `safeLoad`.
//
// argv[2] is the folder holding node_modules. Reads one JSON line per text on stdin, {"yaml": "<text>"}, and answers
// one JSON line on stdout: {"ok": true, "data": ...} or {"ok": false, "error": "<first line of js-yaml's message>"}.
// Values JSON cannot hold are written as one-key objects: {"$number": "NaN" | "Infinity" | "-Infinity"},
// {"$date": "<ISO text>"}, {"$binary": "<base64>"}; a mapping is {"$map": {...}} (so a key "$date" stays a key).
'use strict';

const readline = require('readline');

const yaml = require(require.resolve('js-yaml', { paths: [process.argv[2]] }));

const plain = (value) => {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return { $number: 'NaN' };
    if (!Number.isFinite(value)) return { $number: value > 0 ? 'Infinity' : '-Infinity' };
    return Object.is(value, -0) ? 0 : value; // JSON and String() write -0 as 0: nothing downstream tells them apart
  }
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Date) return { $date: Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString() };
  if (Buffer.isBuffer(value)) return { $binary: value.toString('base64') };
  if (Array.isArray(value)) return value.map(plain);
  const out = {};
  for (const key of Object.keys(value)) out[key] = plain(value[key]);
  return { $map: out };
};

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  let answer;
  try {
    answer = { ok: true, data: plain(yaml.safeLoad(JSON.parse(line).yaml)) };
  } catch (error) {
    answer = { ok: false, error: String(error && error.message).split('\n')[0] };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
});
