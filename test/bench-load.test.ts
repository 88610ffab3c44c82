import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runLoad } from '../bench/harness/load';
import { Workdir } from '../bench/harness/workdir';

/**
 * The saturating load generator's timing. autocannon notices that it has sent its `amount` only at
 * its next once-a-second tick; timed up to the moment it resolves, every run lasted a whole number of
 * seconds and ingest rates fell on a few levels (docs/benchmarks.md, "The ingest rates of runs 1 to
 * 16 were rounded"). A run is the span from its first request to its last answer.
 */
describe('a saturating load run', () => {
  let server: Server;
  let url: string;
  let served = 0;
  let workdir: Workdir;

  beforeAll(async () => {
    workdir = new Workdir();
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        served++;
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    workdir.remove();
  });

  it("is timed from its first request to its last answer, not rounded up to autocannon's tick", async () => {
    const amount = 200;
    const requests = Array.from({ length: amount }, (_, i) => ({
      path: `/r/${i}`,
      headers: { 'content-type': 'application/json' },
      body: '{}',
      requestId: `R${i}`,
    }));
    const result = await runLoad(workdir, { mode: 'saturate', url, amount, connections: 4, timeoutSec: 10 }, requests);
    expect(result.ok).toBe(amount);
    expect(served).toBe(amount);
    // 200 answers from a local server take milliseconds; the old timing gave at least the 1 s tick.
    expect(result.durationSec).toBeGreaterThan(0);
    expect(result.durationSec).toBeLessThan(0.9);
    // The rate is of that span (durationSec is rounded to the millisecond).
    expect(Math.abs(result.okPerSec * result.durationSec - amount)).toBeLessThan(amount * 0.05);
  });
});
