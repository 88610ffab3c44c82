import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument, COMMITTED_DOCUMENT, serialiseDocument } from './document';

// `npm run openapi`: regenerates docs/openapi.json (default configuration) from the event table.
writeFileSync(COMMITTED_DOCUMENT, serialiseDocument(buildOpenApiDocument()));
process.stdout.write(`wrote ${COMMITTED_DOCUMENT}\n`);
