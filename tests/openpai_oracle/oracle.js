// The OpenPAI rest-server's job submission path as an oracle: jobs in, upstream's verdict and request out.
//
// Run with the scratch copy's rest-server folder as argv[2] (tests/openpai_oracle/install.py makes it) and the
// launcher's environment set by the caller (tests/openpai_oracle/oracle.py). Reads one JSON object per line on
// stdin, {"id": ..., "yaml": "<job text>"}, and answers one JSON line per job on stdout:
//   {"id", "verdict": "accepted" | "refused" | "crashed", "status", "code", "message", "entrypoints", "body"}
// where body is what the rest-server sends to the database-controller's write-merger (the golden files' shape).
//
// Everything between the request body and that PUT is upstream's own code, unchanged and in the order the POST
// /api/v2/jobs route runs it: protocol.validate, protocol.render, hived.validate (HiveD mode), the controller's
// frameworkName, job.put (storages, secrets, Framework, priority class). Stubbed, because no cluster, database or
// user store runs here: the user model (alice, every virtual cluster allowed, no extension), the storage model (the
// golden settings' three storages), the token model and the database utilities (never reached on this path), and
// the HTTP calls (the write-merger PUT is captured and answered 200; the HiveD web service is unreachable, as for
// the golden files).
'use strict';

const fs = require('fs');
const path = require('path');
const Module = require('module');
const readline = require('readline');

const restServer = path.resolve(process.argv[2]);
const fromUpstream = (name) => require(require.resolve(name, { paths: [restServer] }));

// Anything upstream logs goes to stderr: stdout carries the answers only.
const answer = (object) => fs.writeSync(1, JSON.stringify(object) + '\n');
process.stdout.write = process.stderr.write.bind(process.stderr);

fromUpstream('module-alias').addAlias('@pai', path.join(restServer, 'src'));

const STORAGES = [
  { name: 'confignfs', share: true, default: true, readOnly: false },
  { name: 'nfs-storage', share: true, default: false, readOnly: false },
  { name: 'confignfs-data', share: false, default: false, readOnly: true },
];

const stubs = {
  '@pai/models/v2/user': {
    checkUserVC: async () => true,
    getUser: async (username) => ({ username, extension: undefined }),
  },
  '@pai/models/v2/storage': {
    list: async (userName, filterDefault = false) => ({
      storages: STORAGES.filter((s) => !filterDefault || s.default).map((s) => ({
        name: s.name, share: s.share, default: filterDefault ? true : s.default,
      })),
    }),
    // The real model GETs /persistentvolumeclaims/${name}: the name reaches the cluster as a string.
    get: async (name) => {
      const found = STORAGES.find((s) => s.name === String(name));
      if (!found) {
        const error = new Error(`Storage ${name} is not found.`);
        error.status = 404;
        error.code = 'NoStorageError';
        throw error;
      }
      return { name, share: found.share, readOnly: found.readOnly };
    },
  },
  '@pai/models/token': {},
  '@pai/utils/dbUtils': {},
};
const originalLoad = Module._load;
Module._load = function load(request, parent, isMain) {
  if (Object.prototype.hasOwnProperty.call(stubs, request)) {
    return stubs[request];
  }
  return originalLoad.call(this, request, parent, isMain);
};

let captured = null;
const axios = fromUpstream('axios');
axios.defaults.adapter = async (config) => {
  if (config.method === 'put' && config.url.includes('/api/v1/frameworkRequest/')) {
    captured = JSON.parse(config.data);
    return { data: {}, status: 200, statusText: 'OK', headers: {}, config, request: {} };
  }
  const error = new Error(`connect ECONNREFUSED (no ${config.url} here)`);
  error.code = 'ECONNREFUSED';
  error.config = config;
  throw error;
};

const protocol = require('@pai/middlewares/v2/protocol');
const hived = require('@pai/middlewares/v2/hived');
const { enabledHived } = require('@pai/config/launcher');
const job = require('@pai/models/v2/job/k8s');

const USER = 'alice';

const submit = async (text) => {
  let protocolObj = protocol.validate(text);
  protocolObj = protocol.render(protocolObj);
  if (enabledHived) {
    protocolObj = await hived.validate(protocolObj, USER);
  }
  const entrypoints = Object.create(null); // a task role named `__proto__` is an own key, as in upstream's objects
  for (const name of Object.keys(protocolObj.taskRoles)) {
    entrypoints[name] = protocolObj.taskRoles[name].entrypoint;
  }
  captured = null;
  await job.put(`${USER}~${protocolObj.name}`, protocolObj, text);
  return { entrypoints, body: captured };
};

const evaluate = async (request) => {
  try {
    const { entrypoints, body } = await submit(request.yaml);
    return { id: request.id, verdict: 'accepted', entrypoints, body };
  } catch (error) {
    const status = error && error.status;
    return {
      id: request.id,
      verdict: status && status < 500 ? 'refused' : 'crashed',
      status: status || 500,
      code: (error && error.code) || (error && error.name) || null,
      message: String(error && error.message),
    };
  }
};

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let queue = Promise.resolve();
lines.on('line', (line) => {
  if (!line.trim()) return;
  queue = queue.then(async () => answer(await evaluate(JSON.parse(line))));
});
lines.on('close', () => queue.then(() => process.exit(0)));
answer({ ready: true, hived: enabledHived });
