// js-yaml 3 from the npm registry (tests/openpai_oracle/npm) as a peer for how the rest-server writes YAML: k8s.js
// stores each pod's HiveD scheduling spec as `yaml.safeDump(spec)`. Our code, not upstream's: it only calls
// `safeDump`. argv[2] is the folder holding node_modules. Reads one JSON value per line on stdin and answers one JSON
// string per line on stdout: the dumped text.
'use strict';

const readline = require('readline');

const yaml = require(require.resolve('js-yaml', { paths: [process.argv[2]] }));

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  process.stdout.write(`${JSON.stringify(yaml.safeDump(JSON.parse(line)))}\n`);
});
