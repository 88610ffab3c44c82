#!/usr/bin/env node
'use strict';
// tsc compiles src/ into dist/src/ but copies nothing else: the Lua scripts (src/**/*.lua, read at start
// by src/redis/lua.ts from beside the code that runs them) are copied here, to the same places.
const { cpSync, readdirSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const [from = path.join(root, 'src'), to = path.join(root, 'dist', 'src')] = process.argv.slice(2);

function copy(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const source = path.join(dir, entry.name);
    if (entry.isDirectory()) copy(source);
    else if (entry.name.endsWith('.lua')) cpSync(source, path.join(to, path.relative(from, source)));
  }
}
copy(from);
