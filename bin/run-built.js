'use strict';
// `npm start` and the CLI run the compiled JavaScript in dist/. On a fresh clone that does not exist
// yet, and node's own "Cannot find module" stack trace hides the one thing to do.
const { existsSync } = require('node:fs');
const path = require('node:path');

module.exports = function runBuilt(relative) {
  const entry = path.join(__dirname, '..', 'dist', relative);
  if (!existsSync(entry)) {
    process.stderr.write(
      `${path.relative(process.cwd(), entry) || entry} is missing: build first with \`npm run build\` (after \`npm ci\`)\n`,
    );
    process.exit(1);
  }
  require(entry);
};
