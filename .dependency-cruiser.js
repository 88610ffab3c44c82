// The layers of src/, lowest first. A module may import from its own folder and from the folders of
// the layers below it, never from one above: so the folders form no cycle, and docs/architecture.md's
// table (one row per folder) stays true. `npm run layers` checks it; .ci/run runs it.
const LAYERS = [
  // The shared vocabulary, importing nothing of ours: the event table and schemas, the target schema
  // and its filter language, job and queue types, Redis key and queue names, ids, environments,
  // subnets, the error base.
  'model',
  'logging', // winston, masking, throttled repeats, audit lines
  'tracing', // OpenTelemetry hooks (no-ops until configured), the SDK loaded only then, traceparent values
  'signature', // verifying the platform's signatures (pure)
  'signing', // signing as the platform does (the CLI's `send`, tests)
  'routing', // which targets get an event, its ordering key: planDeliveries
  'transform', // targets' transforms: the sandbox threads (QuickJS) that run them, exact numbers
  'config', // the typed configuration, read and checked once
  'redis', // connections, TLS, coalesced writes, the Lua loader and BullMQ's embedded scripts
  'postgres', // PostgreSQL pools that close within a bound, transactions, failures classified by SQLSTATE
  'ordering', // the per-key sequences of ordered delivery
  'pipeline', // the queue registry, the producer (the only writer of jobs), the event lookup
  'monitoring', // Prometheus series, queue and ordering gauges, Redis durability
  'archive', // the evidence archive in PostgreSQL: migrations, the archiver, verify, export, history
  'receiving', // verify, parse, queue, acknowledge one notification
  'reconciliation', // expectations of notifications, and the signed inquiries that chase overdue ones
  'forwarding', // the fan-out and delivery workers, one attempt, the forwarded request
  'http', // the public port's app
  'operations', // operator actions behind the admin API and the CLI
  'openapi', // the generated OpenAPI description
  'listen', // the merchant's test listener
  'admin', // the admin port
  'cli', // the operator CLI
  'demo', // the quick-start demo and the throwaway Redis it runs
];
// The entry points (src/main.ts, src/receiver.ts, src/service.ts) sit above every layer.
const ENTRY = '^src/[^/]+\\.ts$';

const folder = (name) => `^src/${name}/`;

const upward = LAYERS.map((layer, i) => {
  const above = LAYERS.slice(i + 1);
  return {
    name: `layer-${layer}`,
    comment: `src/${layer} imports only from itself and the layers below it (${LAYERS.slice(0, i).join(', ') || 'none: it is the bottom'})`,
    severity: 'error',
    from: { path: folder(layer) },
    to: { path: [...above.map(folder), ENTRY] },
  };
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-unknown-folder',
      comment: 'every folder of src/ is a named layer (add a new one to LAYERS, and to docs/architecture.md)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: [...LAYERS.map(folder), ENTRY] },
    },
    {
      name: 'no-unknown-folder-importing',
      comment: 'every folder of src/ is a named layer (add a new one to LAYERS, and to docs/architecture.md)',
      severity: 'error',
      from: { path: '^src/', pathNot: [...LAYERS.map(folder), ENTRY] },
      to: {},
    },
    {
      name: 'no-circular',
      comment:
        'no module depends on itself through others, type-only imports included (a shared type lives below both)',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'src-not-to-test-or-bench',
      comment: 'the service does not depend on its tests or benchmarks',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a layer that needs a type from above depends on it all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
