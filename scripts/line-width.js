#!/usr/bin/env node
// Prettier wraps code at 120 columns but leaves long strings and comments as they are: this check
// holds every line of src/ to the same width. `npm run format:check` runs it.
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');

const WIDTH = 120;
const files = execFileSync('git', ['ls-files', 'src/*.ts'], { encoding: 'utf8' }).split('\n').filter(Boolean);
const over = [];
for (const file of files) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.length > WIDTH) over.push(`${file}:${i + 1}: ${line.length} characters`);
    });
}
if (over.length) {
  console.error(`lines over ${WIDTH} characters (wrap the string or comment):\n${over.join('\n')}`);
  process.exit(1);
}
