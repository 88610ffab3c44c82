#!/usr/bin/env node
// Adds the lock file entries npm leaves out when the registry it resolved against does not serve
// every platform build of a package (the registry on our build machines carries the linux x64/arm64
// builds of @swc/core, unrs-resolver and msgpackr-extract, not the darwin/win32/… ones). npm install
// then writes a lock without those optional entries, and `npm ci` refuses it ("Missing: … from lock
// file"), because its check rebuilds the tree and cannot resolve them either. An entry for a platform
// build names its version and platform (taken from the package name, as those packages publish them),
// so npm ci on another platform skips it without a download; it has no integrity, because this
// registry cannot serve the file to hash (npm records the hash when such a machine runs npm install).
// Run after `npm install` changes the lock: node scripts/complete-lockfile.js
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const OSES = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openharmony', 'sunos', 'aix', 'netbsd', 'openbsd'];

/** `@swc/core-linux-arm64-musl` → { os: linux, cpu: arm64, libc: musl } */
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const i = parts.findIndex((p) => OSES.includes(p));
  if (i < 0 || i + 1 >= parts.length) return undefined;
  const abi = parts.slice(i + 2).join('-');
  const libc = /^(gnu|glibc|gnueabihf)$/.test(abi) ? 'glibc' : /^musl/.test(abi) ? 'musl' : undefined;
  return { os: parts[i], cpu: parts[i + 1], libc };
}

const file = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const added = [];
for (const [where, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${where ? `${where}/` : ''}node_modules/${dep}`;
    if (lock.packages[nested] || lock.packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    if (!platform || !/^\d+\.\d+\.\d+$/.test(version)) {
      console.error(`left out ${dep}@${version}: not a platform build with an exact version`);
      continue;
    }
    lock.packages[`node_modules/${dep}`] = {
      version,
      cpu: [platform.cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(platform.libc ? { libc: [platform.libc] } : {}),
      optional: true,
      os: [platform.os],
    };
    added.push(`${dep}@${version}`);
  }
}
const sorted = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'))),
);
lock.packages = sorted;
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  added.length ? `added ${added.length} platform entries:\n  ${added.join('\n  ')}` : 'lock file already complete',
);
