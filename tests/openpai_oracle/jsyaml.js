// js-yaml 3 from the npm registry (tests/openpai_oracle/npm, installed by .ci/provision-npm-peers.sh) as a peer: how
// the YAML reader OpenPAI's rest-server uses reads a text. Our code, not upstream's: it only calls `safeLoad`.
//
// argv[2] is the folder holding node_modules. Reads one JSON line per text on stdin, {"yaml": "<text>"}, and answers
// one JSON line on stdout: {"ok": true, "data": ...} or {"ok": false, "error": "<first line of js-yaml's message>"}.
// Values JSON cannot hold are written as one-key objects: {"$number": "NaN" | "Infinity" | "-Infinity" | String() of
// an integer beyond 2**53, which a JSON reader would not read back as the same double},
// {"$date": "<ISO text>"}, {"$binary": "<base64>"}; a mapping is {"$map": {...}} (so a key "$date" stays a key);
// a collection nested deeper than MAX_DEPTH is {"$deeper": MAX_DEPTH} (paictl refuses those, E106; the JSON reader
// on the other side need not recurse a thousand levels).
'use strict';

const readline = require('readline');

const yaml = require(require.resolve('js-yaml', { paths: [process.argv[2]] }));

const MAX_DEPTH = 150;

const plain = (value, depth = 0) => {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return { $number: 'NaN' };
    if (!Number.isFinite(value)) return { $number: value > 0 ? 'Infinity' : '-Infinity' };
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) return { $number: String(value) }; // exact text
    return Object.is(value, -0) ? 0 : value; // JSON and String() write -0 as 0: nothing downstream tells them apart
  }
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Date) return { $date: Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString() };
  if (Buffer.isBuffer(value)) return { $binary: value.toString('base64') };
  if (depth >= MAX_DEPTH) return { $deeper: MAX_DEPTH };
  if (Array.isArray(value)) return value.map((item) => plain(item, depth + 1));
  const out = Object.create(null); // a `__proto__` key (js-yaml keeps it as an own property) stays a key here
  for (const key of Object.keys(value)) out[key] = plain(value[key], depth + 1);
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
